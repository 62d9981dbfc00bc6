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
/// | an app's webhook receiver | `POST /webhooks/…` (``FakeWebhookReceiver``) |
///
/// Each fake checks every request against its provider's document before anything else — method,
/// path, required parameters and headers, content type, credentials equal to the configured ones
/// (``Credentials``) — and refuses a bad one as the provider does (or `400` naming the rule where
/// the document is silent), noting it as a ``FakeAnomaly``. A valid request is answered by the
/// fake's model (``FakeGoogle``, ``FakeAppleAdServices``, ``FakeBranch``, ``FakeSingular``) or by
/// a scripted answer (`enqueue(_:)`: "the next three answers are 404, 404, 200"); answers can be
/// slowed down (``FakeProvider/setDelay(_:)``) or held until a test lets them go
/// (``FakeProvider/hold(_:)``, ``FakeGate``). Every request is recorded. Point the request builders
/// at it with ``googleEndpoint``, ``appleEndpoint``, ``branchEndpoint`` and ``singularEndpoint``
/// (plain `http` is accepted by the builders because the host is loopback) and the credentials
/// with ``googleLink``, ``branchConfiguration`` and ``singularConfiguration``.
public final class FakeProviders: Sendable {
    /// Server settings.
    public struct Configuration: Sendable, Hashable {
        /// The port to bind; `0` (the default) picks a free one, so parallel tests never collide.
        public var port: Int
        /// The largest request body read; a larger one is answered `413` (a fake, not a sink).
        public var maximumRequestBodyBytes: Int
        /// The credentials the fakes accept; any other value is refused.
        public var credentials: Credentials

        /// Settings: ephemeral port, 1 MiB bodies, the default credentials.
        public init(port: Int = 0, maximumRequestBodyBytes: Int = 1 << 20, credentials: Credentials = Credentials()) {
            self.port = port
            self.maximumRequestBodyBytes = maximumRequestBodyBytes
            self.credentials = credentials
        }
    }

    /// The account the fakes stand for: the only credentials they accept. A request carrying
    /// another value (another key, a blank one, the ledger's `REDACTED` marker) is refused.
    public struct Credentials: Sendable, Hashable {
        /// Google's `dev_token`.
        public var googleDevToken: String
        /// Google's `link_id`.
        public var googleLinkID: String
        /// Branch's `branch_key`.
        public var branchKey: String
        /// Branch's `branch_secret`.
        public var branchSecret: String
        /// Singular's SDK key, the `a` parameter.
        public var singularSDKKey: String

        /// Credentials; the defaults are made-up values no real account has.
        public init(
            googleDevToken: String = "fake-google-dev-token", googleLinkID: String = "FAKE0LINK0ID",
            branchKey: String = "key_live_fake", branchSecret: String = "secret_live_fake",
            singularSDKKey: String = "fake-singular-sdk-key"
        ) {
            self.googleDevToken = googleDevToken
            self.googleLinkID = googleLinkID
            self.branchKey = branchKey
            self.branchSecret = branchSecret
            self.singularSDKKey = singularSDKKey
        }
    }

    /// The address the server binds: loopback only, so nothing outside the machine can reach it.
    public static let host = "127.0.0.1"

    /// Google conversion tracking (Google App Conversion Tracking API).
    public let google: FakeGoogle
    /// Apple AdServices attribution lookups (Apple AdServices attribution API).
    public let apple: FakeAppleAdServices
    /// Branch server-to-server `v1/open` (Branch v1/open server-to-server guide).
    public let branch: FakeBranch
    /// Singular's SKAN 4 conversion value API (Singular SKAdNetwork 4 implementation guide).
    public let singular: FakeSingular
    /// App backends' webhook receivers, verifying every signature (docs/webhooks.md).
    public let webhooks = FakeWebhookReceiver()

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
        var unroutedAnomalies: [FakeAnomaly] = []
        var expected: [ExpectedAnomaly] = []
        var requestsInFlight = 0
        var mostRequestsInFlight = 0
    }

    private let state = Mutex(ServerState())

    /// A server, not yet listening: call ``start()``.
    public init(configuration: Configuration = Configuration(), logger: Logger = Logger(label: "ledger.fake-providers")) {
        self.configuration = configuration
        self.logger = logger
        let credentials = configuration.credentials
        google = FakeGoogle(devToken: credentials.googleDevToken, linkID: credentials.googleLinkID)
        apple = FakeAppleAdServices()
        branch = FakeBranch(branchKey: credentials.branchKey, branchSecret: credentials.branchSecret, apple: apple)
        singular = FakeSingular(sdkKey: credentials.singularSDKKey)
    }

    /// A server accepting `credentials`, otherwise with the default settings.
    public convenience init(credentials: Credentials, logger: Logger = Logger(label: "ledger.fake-providers")) {
        self.init(configuration: Configuration(credentials: credentials), logger: logger)
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

    /// The credentials the fakes accept.
    public var credentials: Credentials { configuration.credentials }

    /// The URL of the fake webhook endpoint at `path` (under ``FakeWebhookReceiver/pathPrefix``).
    public func webhookURL(path: String) -> String { baseURL + path }

    /// Google's `dev_token` and `link_id` the fake accepts.
    public var googleLink: GoogleAppLink {
        GoogleAppLink(devToken: credentials.googleDevToken, linkID: credentials.googleLinkID)
    }

    /// Branch's key and secret the fake accepts, and this server as the endpoint.
    public var branchConfiguration: BranchConfiguration {
        BranchConfiguration(branchKey: credentials.branchKey, branchSecret: credentials.branchSecret, endpoint: branchEndpoint)
    }

    /// Singular's SDK key the fake accepts, and this server as the endpoint.
    public var singularConfiguration: SingularConfiguration {
        SingularConfiguration(sdkKey: credentials.singularSDKKey, endpoint: singularEndpoint)
    }

    /// Every fake, for loops over all of them.
    public var all: [any FakeProvider] { [google, apple, branch, singular, webhooks] }

    /// Every request received by any fake (and those no fake serves), in arrival order.
    public var allRequests: [RecordedRequest] {
        (all.flatMap { $0.requests } + unroutedRequests).sorted { $0.sequenceNumber < $1.sequenceNumber }
    }

    /// Requests for a path no fake serves (answered `404`, noted as `unknown_path`).
    public var unroutedRequests: [RecordedRequest] { state.withLock { $0.unrouted } }

    /// Every anomaly of every fake, and every request to a path no fake serves (`unknown_path`),
    /// in arrival order.
    public var anomalies: [FakeAnomaly] {
        (all.flatMap { $0.anomalies } + state.withLock { $0.unroutedAnomalies })
            .sorted { $0.requestSequenceNumber < $1.requestSequenceNumber }
    }

    /// Declares anomalies the running test expects to cause, one entry per anomaly (repeat an
    /// entry for each time it is expected). ``unexplainedAnomalies()`` compares them with those
    /// noted.
    public func expectAnomalies(_ anomalies: [ExpectedAnomaly]) { state.withLock { $0.expected += anomalies } }

    /// Declares one expected anomaly, `count` times.
    public func expectAnomaly(_ provider: Provider?, _ rule: String, count: Int = 1) {
        expectAnomalies(Array(repeating: ExpectedAnomaly(provider, rule), count: count))
    }

    /// The anomalies declared so far.
    public var expectedAnomalies: [ExpectedAnomaly] { state.withLock { $0.expected } }

    /// The anomalies noted that no declaration explains, and the declarations no anomaly
    /// fulfilled: a test that uses the fakes ends with both empty.
    public func unexplainedAnomalies() -> (unexpected: [FakeAnomaly], missing: [ExpectedAnomaly]) {
        var missing = expectedAnomalies
        var unexpected: [FakeAnomaly] = []
        for anomaly in anomalies {
            if let index = missing.firstIndex(where: { $0.provider == anomaly.provider && $0.rule == anomaly.rule }) {
                missing.remove(at: index)
            } else {
                unexpected.append(anomaly)
            }
        }
        return (unexpected, missing)
    }

    /// The requests, to all fakes together, being answered now (received whole, answer not yet
    /// written): calls a client has in flight.
    public var requestsInFlight: Int { state.withLock { $0.requestsInFlight } }

    /// The most requests, to all fakes together, that were being answered at one time (received
    /// whole, answer not yet written): how many calls a client had in flight.
    public var mostRequestsInFlight: Int { state.withLock { $0.mostRequestsInFlight } }

    /// Resets every fake (requests, scripts, anomalies, delays, gates, models) and the in-flight
    /// high-water mark.
    public func reset() {
        for fake in all { fake.reset() }
        state.withLock { state in
            state.unrouted = []
            state.unroutedAnomalies = []
            state.expected = []
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
            case let webhook where webhook.hasPrefix(FakeWebhookReceiver.pathPrefix): .webhook
            default: nil
            }
        let sequence = state.withLock { state in
            state.sequence += 1
            return state.sequence
        }
        let request = RecordedRequest(
            provider: provider, sequenceNumber: sequence, connectionNumber: connection, receivedAt: Date(), method: head.method.rawValue, path: path,
            rawQuery: rawQuery, headers: head.headers.map { Header($0.name, $0.value) }, body: body)
        switch provider {
        case nil:
            state.withLock { state in
                state.unrouted.append(request)
                state.unroutedAnomalies.append(
                    FakeAnomaly(
                        provider: nil, rule: "unknown_path", detail: "\(request.method) \(path): no provider serves it",
                        requestSequenceNumber: sequence, refused: true))
            }
            return .text(404, "no fake provider serves \(path)")
        case .google?: return google.handle(request)
        case .appleAdServices?: return apple.handle(request)
        case .branch?: return branch.handle(request)
        case .singular?: return singular.handle(request)
        case .webhook?: return webhooks.handle(request)
        case .appleIAd?: return .text(404, "no fake for iAd")
        }
    }

}

/// An anomaly a test declares it expects (``FakeProviders/expectAnomalies(_:)``): a provider
/// (`nil` for a path no fake serves) and a rule.
public struct ExpectedAnomaly: Sendable, Hashable, CustomStringConvertible {
    /// The provider whose fake notes it.
    public var provider: Provider?
    /// The anomaly's rule, e.g. `missing_randomized_bundle_token`.
    public var rule: String

    /// An expected anomaly.
    public init(_ provider: Provider?, _ rule: String) {
        self.provider = provider
        self.rule = rule
    }

    /// `provider rule`.
    public var description: String { "\(provider?.rawValue ?? "no provider") \(rule)" }
}

/// Misuse of ``FakeProviders``.
public enum FakeProvidersError: Error, Sendable, Hashable {
    /// ``FakeProviders/start()`` was called twice.
    case alreadyStarted
}
