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
    private let logger: Logger

    private struct ServerState {
        var server: NIOAsyncChannel<NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, Never>?
        var port: Int?
        var run: Task<Void, Never>?
        var connections: [ObjectIdentifier: any Channel] = [:]
        var sequence = 0
        var connectionCount = 0
        var unrouted: [RecordedRequest] = []
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
        guard state.withLock({ $0.server == nil && $0.run == nil }) else { throw FakeProvidersError.alreadyStarted }
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .bind(host: Self.host, port: configuration.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    return try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(
                        wrappingChannelSynchronously: channel)
                }
            }
        let port = server.channel.localAddress?.port
        let run = Task { [self] in
            do {
                try await server.executeThenClose { inbound in
                    try await withThrowingDiscardingTaskGroup { group in
                        for try await connection in inbound {
                            group.addTask { await self.serve(connection) }
                        }
                    }
                }
            } catch {
                logger.debug("fake provider server stopped", metadata: ["error": "\(error)"])
            }
        }
        state.withLock {
            $0.server = server
            $0.port = port
            $0.run = run
        }
    }

    /// Stops listening, closes every open connection (a stalled answer is abandoned) and waits for
    /// the server's tasks to end. Idempotent. The recorded requests stay readable.
    public func stop() async {
        let (server, run, connections) = state.withLock { state in
            defer {
                state.server = nil
                state.run = nil
                state.connections = [:]
            }
            return (state.server, state.run, Array(state.connections.values))
        }
        try? await server?.channel.close()
        for connection in connections { try? await connection.close() }
        run?.cancel()
        await run?.value
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

    /// Resets every fake (requests, scripts, anomalies, delays, models).
    public func reset() {
        for fake in all { fake.reset() }
        state.withLock { $0.unrouted = [] }
    }

    // MARK: - Serving

    private func serve(_ connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>) async {
        let id = ObjectIdentifier(connection.channel)
        let number = state.withLock { state in
            state.connections[id] = connection.channel
            state.connectionCount += 1
            return state.connectionCount
        }
        defer { _ = state.withLock { $0.connections.removeValue(forKey: id) } }
        let maximumBody = configuration.maximumRequestBodyBytes
        do {
            try await connection.executeThenClose { inbound, outbound in
                var head: HTTPRequestHead?
                var body = ByteBuffer()
                var tooLarge = false
                for try await part in inbound {
                    switch part {
                    case .head(let received):
                        head = received
                        body.clear()
                        tooLarge = false
                    case .body(var chunk):
                        if body.readableBytes + chunk.readableBytes > maximumBody {
                            tooLarge = true
                        } else {
                            body.writeBuffer(&chunk)
                        }
                    case .end:
                        guard let request = head else { continue }
                        head = nil
                        let reply =
                            tooLarge
                            ? FakeReply.text(413, "request body too large for the fake")
                            : route(request, body: Data(body.readableBytesView), connection: number)
                        if reply.delay > .zero { try await Task.sleep(for: reply.delay) }
                        if reply.drop { return }
                        try await write(reply, keepAlive: request.isKeepAlive && !tooLarge, to: outbound)
                        if !request.isKeepAlive || tooLarge { return }
                    }
                }
            }
        } catch {
            logger.trace("fake provider connection ended", metadata: ["error": "\(error)"])
        }
    }

    private func write(
        _ reply: FakeReply, keepAlive: Bool, to outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>
    ) async throws {
        var headers = HTTPHeaders()
        for header in reply.headers where header.name.lowercased() != "content-length" {
            headers.add(name: header.name, value: header.value)
        }
        headers.replaceOrAdd(name: "Content-Length", value: String(reply.body.count))
        if !keepAlive { headers.replaceOrAdd(name: "Connection", value: "close") }
        let head = HTTPResponseHead(
            version: .http1_1, status: HTTPResponseStatus(statusCode: reply.status), headers: headers)
        try await outbound.write(.head(head))
        if !reply.body.isEmpty { try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: reply.body)))) }
        try await outbound.write(.end(nil))
    }

    private func route(_ head: HTTPRequestHead, body: Data, connection: Int) -> FakeReply {
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
