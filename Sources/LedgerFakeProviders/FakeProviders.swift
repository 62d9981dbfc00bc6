import Foundation
import LedgerProviders
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// Fake Google, Apple AdServices, Branch and Singular servers on loopback, for tests, benchmarks and
/// the demo — never the production path.
///
/// One HTTP/1.1 server (SwiftNIO, bound to `127.0.0.1` on an ephemeral port) routes by path:
///
/// | provider | route |
/// |---|---|
/// | Google | `POST /pagead/conversion/app/1.0`, `POST /pagead/conversion/app/1.0/cross_network` |
/// | Apple AdServices | `POST /api/v1/` |
/// | Branch | `POST /v1/open` |
/// | Singular | `GET /api/v2/conversion_value` |
///
/// Each fake answers as its provider's document says (``FakeGoogle``, ``FakeAppleAdServices``,
/// ``FakeBranch``, ``FakeSingular``), records every request, notes anomalies, and can be scripted per
/// test (`enqueue(_:)`: "the next three answers are 404, 404, 200") or slowed down (``FakeProvider/setDelay(_:)``). Point the
/// request builders at it with ``googleEndpoint``, ``appleEndpoint``, ``branchEndpoint`` and
/// ``singularEndpoint``; plain `http` is accepted by the builders because the host is loopback.
public final class FakeProviders: Sendable {
    /// Server settings.
    public struct Configuration: Sendable, Hashable {
        /// The port to bind; `0` (the default) picks a free one, so parallel tests never collide.
        public var port: Int
        /// The largest request body read; a larger one is answered `413` (a fake, not a sink).
        public var maximumRequestBodyBytes: Int

        /// Settings: ephemeral port, 1 MiB bodies.
        public init(port: Int = 0, maximumRequestBodyBytes: Int = 1 << 20) {
            self.port = port
            self.maximumRequestBodyBytes = maximumRequestBodyBytes
        }
    }

    /// The address the server binds: loopback only, so nothing outside the machine can reach it.
    public static let host = "127.0.0.1"

    /// Google conversion tracking (seed 000).
    public let google = FakeGoogle()
    /// Apple AdServices attribution lookups (seed 002).
    public let apple = FakeAppleAdServices()
    /// Branch server-to-server `v1/open` (seed 003).
    public let branch = FakeBranch()
    /// Singular's SKAN 4 conversion value API (seed 004).
    public let singular = FakeSingular()

    /// The settings this server was made with.
    public let configuration: Configuration
    let logger: Logger

    private struct ServerState {
        var server: (any Channel)?
        var port: Int?
        var connections: [ObjectIdentifier: any Channel] = [:]
        var sequence = 0
        var connectionCount = 0
        var unrouted: [RecordedRequest] = []
        var requestsInFlight = 0
        var mostRequestsInFlight = 0
    }

    private let state = Mutex(ServerState())

    /// A server, not yet listening: call ``start()``.
    public init(configuration: Configuration = Configuration(), logger: Logger = Logger(label: "ledger.fake-providers")) {
        self.configuration = configuration
        self.logger = logger
    }

    /// Binds `127.0.0.1` and starts answering. Returns once the port is known.
    ///
    /// - Throws: a NIO error when the port cannot be bound; `FakeProvidersError.alreadyStarted`.
    public func start() async throws {
        guard state.withLock({ $0.server == nil }) else { throw FakeProvidersError.alreadyStarted }
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(FakeHTTPHandler(server: self))
                }
            }
            .bind(host: Self.host, port: configuration.port).get()
        state.withLock {
            $0.server = server
            $0.port = server.localAddress?.port
        }
    }

    /// Stops listening, closes every open connection (a stalled answer is abandoned). Idempotent.
    /// The recorded requests stay readable.
    public func stop() async {
        let (server, connections) = state.withLock { state in
            defer {
                state.server = nil
                state.connections = [:]
            }
            return (state.server, Array(state.connections.values))
        }
        try? await server?.close()
        for connection in connections { try? await connection.close() }
    }

    /// The port the server listens on (after ``start()``; `0` before).
    public var port: Int { state.withLock { $0.port ?? 0 } }

    /// `http://127.0.0.1:<port>`: the base URL every fake shares.
    public var baseURL: String { "http://\(Self.host):\(port)" }

    /// Where ``GoogleConversionRequestBuilder`` should send: this server.
    public var googleEndpoint: GoogleEndpoint {
        do { return try GoogleEndpoint(scheme: "http", host: Self.host, port: port) } catch {
            preconditionFailure("a loopback endpoint is always valid: \(error)")
        }
    }

    /// Where ``AdServicesRequestBuilder`` should send: this server.
    public var appleEndpoint: AdServicesEndpoint {
        do { return try AdServicesEndpoint(scheme: "http", host: Self.host, port: port) } catch {
            preconditionFailure("a loopback endpoint is always valid: \(error)")
        }
    }

    /// The endpoint for ``BranchConfiguration``: this server.
    public var branchEndpoint: BranchEndpoint { BranchEndpoint(scheme: "http", host: Self.host, port: port) }

    /// The endpoint for ``SingularConfiguration``: this server.
    public var singularEndpoint: SingularEndpoint { SingularEndpoint(scheme: "http", host: Self.host, port: port) }

    /// Every fake, for loops over all of them.
    public var all: [any FakeProvider] { [google, apple, branch, singular] }

    /// Every request received by any fake (and those no fake serves), in arrival order.
    public var allRequests: [RecordedRequest] {
        (all.flatMap { $0.requests } + unroutedRequests).sorted { $0.sequenceNumber < $1.sequenceNumber }
    }

    /// Requests for a path no fake serves (answered `404`).
    public var unroutedRequests: [RecordedRequest] { state.withLock { $0.unrouted } }

    /// Every anomaly of every fake.
    public var anomalies: [FakeAnomaly] {
        all.flatMap { $0.anomalies }.sorted { $0.requestSequenceNumber < $1.requestSequenceNumber }
    }

    /// The most requests, to all fakes together, that were being answered at one time (received
    /// whole, answer not yet written): how many calls a client had in flight.
    public var mostRequestsInFlight: Int { state.withLock { $0.mostRequestsInFlight } }

    /// Resets every fake (requests, scripts, anomalies, delays, models) and the in-flight high-water mark.
    public func reset() {
        for fake in all { fake.reset() }
        state.withLock { state in
            state.unrouted = []
            state.mostRequestsInFlight = state.requestsInFlight
        }
    }

    // MARK: - Serving

    /// Notes a new connection; returns its number (1, 2, …), which recorded requests carry.
    func connectionOpened(_ channel: any Channel) -> Int {
        state.withLock { state in
            state.connections[ObjectIdentifier(channel)] = channel
            state.connectionCount += 1
            return state.connectionCount
        }
    }

    /// Forgets a closed connection.
    func connectionClosed(_ channel: any Channel) {
        _ = state.withLock { $0.connections.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// Notes that `count` requests arrived whole (`count` > 0) or were answered or dropped (`count` < 0).
    func requestsInFlight(changedBy count: Int) {
        state.withLock { state in
            state.requestsInFlight += count
            state.mostRequestsInFlight = max(state.mostRequestsInFlight, state.requestsInFlight)
        }
    }

    /// The answer to one complete request (`413` when its body was over the limit).
    func reply(to head: HTTPRequestHead, body: Data, tooLarge: Bool, connection: Int) -> FakeReply {
        tooLarge ? FakeReply.text(413, "request body too large for the fake") : route(head, body: body, connection: connection)
    }

    func route(_ head: HTTPRequestHead, body: Data, connection: Int) -> FakeReply {
        let uri = head.uri
        let path: String
        let rawQuery: String
        if let mark = uri.firstIndex(of: "?") {
            path = String(uri[..<mark])
            rawQuery = String(uri[uri.index(after: mark)...])
        } else {
            path = uri
            rawQuery = ""
        }
        let provider: Provider? =
            switch path {
            case GoogleConversionRequestBuilder.conversionPath, GoogleConversionRequestBuilder.crossNetworkPath: .google
            case AdServicesRequestBuilder.path: .appleAdServices
            case BranchOpenRequest.path: .branch
            case SingularConversionValueRequest.path: .singular
            default: nil
            }
        let sequence = state.withLock { state in
            state.sequence += 1
            return state.sequence
        }
        let request = RecordedRequest(
            provider: provider, sequenceNumber: sequence, connectionNumber: connection, receivedAt: Date(), method: head.method.rawValue, path: path,
            rawQuery: rawQuery, headers: head.headers.map { Header($0.name, $0.value) }, body: body)
        let expectedMethod: HTTPMethod = provider == .singular ? .GET : .POST
        switch provider {
        case nil:
            state.withLock { $0.unrouted.append(request) }
            return .text(404, "no fake provider serves \(path)")
        case let provider? where head.method != expectedMethod:
            // Recorded against the provider so a test sees the wrong call, then refused as a server would.
            let fake = fake(for: provider)
            return fake.answer(request) { request in
                fake.note(request, "wrong_method", "\(head.method.rawValue) \(path); the document says \(expectedMethod.rawValue)")
                return .text(405, "method not allowed")
            }
        case .google?: return google.handle(request)
        case .appleAdServices?: return apple.handle(request)
        case .branch?: return branch.handle(request)
        case .singular?: return singular.handle(request)
        case .appleIAd?: return .text(404, "no fake for iAd")
        }
    }

    private func fake(for provider: Provider) -> any FakeProvider {
        switch provider {
        case .google: google
        case .appleAdServices, .appleIAd: apple
        case .branch: branch
        case .singular: singular
        }
    }
}

/// Misuse of ``FakeProviders``.
public enum FakeProvidersError: Error, Sendable, Hashable {
    /// ``FakeProviders/start()`` was called twice.
    case alreadyStarted
}
