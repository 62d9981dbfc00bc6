import AttributionLedger
import Foundation
import Hummingbird
import HummingbirdCore
import LedgerDomain
import Logging
import Metrics
import NIOCore
import Prometheus
import ServiceLifecycle

/// The ledger's HTTP API (Hummingbird 2) over the Swift facade, for services not written in
/// Swift. Routes, bodies and errors are described in `docs/openapi.yaml` and `docs/http-api.md`.
///
/// - `POST /v1/apps/{app}/events`: append a batch of device facts (all or nothing);
/// - `GET /v1/apps/{app}/devices/{device}/state|skan|attribution|history` (`as_of`,
///   `as_of_position`);
/// - `GET /v1/apps/{app}/devices/{device}/timeline`: the device's attribution drawn, one
///   self-contained HTML page (`LedgerTimeline`);
/// - `GET /v1/apps/{app}/events/stream`: the app's events as Server-Sent Events, caught up and live;
/// - `POST /v1/apps/{app}/skan/postbacks`, `POST /v1/apps/{app}/aak/postbacks`: Apple's postbacks
///   as networks forward them;
/// - `POST /.well-known/skadnetwork/report-attribution/`, `POST /.well-known/appattribution/report-attribution/`:
///   Apple's developer copies, without a key, bound to an app by host name (``ApplePostbackSettings``);
/// - `GET /health`, `GET /ready`, `GET /metrics` (Prometheus text).
///
/// Every `/v1/apps/{app}/…` route needs `Authorization: Bearer <key>` with a key of that app, and
/// counts against that app's rate limit; POST bodies are JSON only. Connections are closed when a
/// request's head, a whole request or the wait for the next request outlasts its timeout.
///
/// A swift-service-lifecycle `Service` (``run()``), as Hummingbird's `Application` is: `ledger
/// serve` runs it last in its `ServiceGroup`, so that on SIGTERM or SIGINT the server stops first
/// and its requests in flight finish while the pool and the loops beside it still run.
public struct LedgerHTTPServer: Service {
    /// The facade requests go to.
    public let ledger: AttributionLedger
    /// The accepted API keys, replaceable while the server runs (`SIGHUP` reloads the apps file:
    /// a new app's key works without a restart).
    public let reloadableKeys: Reloadable<APIKeys>
    /// The accepted API keys as of now.
    public var keys: APIKeys { reloadableKeys.value }
    /// Limits and address.
    public let configuration: LedgerHTTPConfiguration
    /// The registry `GET /metrics` renders (nil: the route answers 404).
    public let metrics: PrometheusCollectorRegistry?
    /// Called with the bound port once ``run()`` listens (`ledger serve` prints it).
    public let onServerRunning: @Sendable (Int) async -> Void
    let limiter: AppRateLimiter?
    let logger: Logger

    /// A server for `ledger`.
    /// - Parameters:
    ///   - ledger: the facade.
    ///   - keys: the API keys, by app.
    ///   - configuration: limits and address.
    ///   - metrics: the Prometheus registry the process's swift-metrics factory writes to.
    ///   - logger: request logs (no keys, no device ids above debug level).
    ///   - onServerRunning: called with the bound port once ``run()`` listens.
    public init(ledger: AttributionLedger, keys: APIKeys, configuration: LedgerHTTPConfiguration = LedgerHTTPConfiguration(),
                metrics: PrometheusCollectorRegistry? = nil, logger: Logger = Logger(label: "ledger.http"),
                onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }) {
        self.init(ledger: ledger, reloadableKeys: Reloadable(keys), configuration: configuration, metrics: metrics, logger: logger,
                  onServerRunning: onServerRunning)
    }

    /// A server whose API keys the caller may replace while it runs (``reloadableKeys``); the
    /// other parameters as for ``init(ledger:keys:configuration:metrics:logger:onServerRunning:)``.
    public init(ledger: AttributionLedger, reloadableKeys: Reloadable<APIKeys>,
                configuration: LedgerHTTPConfiguration = LedgerHTTPConfiguration(),
                metrics: PrometheusCollectorRegistry? = nil, logger: Logger = Logger(label: "ledger.http"),
                onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }) {
        self.ledger = ledger
        self.reloadableKeys = reloadableKeys
        self.configuration = configuration
        self.metrics = metrics
        self.onServerRunning = onServerRunning
        self.limiter = configuration.effectiveRateLimit.map(AppRateLimiter.init(limit:))
        self.logger = logger
    }

    /// The router with every route and the tracing, error and metrics middleware.
    public func makeRouter() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        // Exported at 0 from the start: an alert on their rate then sees the first 503 or 500,
        // rather than a series appearing with it.
        _ = Counter(label: "ledger_http_unavailable_total")
        _ = Counter(label: "ledger_http_internal_errors_total")
        Gauge(label: "ledger_http_event_streams_open").record(0)
        router.add(middleware: RequestTracingMiddleware())
        router.add(middleware: ErrorMiddleware(logger: logger))
        router.add(middleware: MetricsMiddleware())
        let wakeUps = EventStreamWakeUps(store: ledger.store, logger: logger)
        let handlers = Handlers(ledger: ledger, keys: reloadableKeys, configuration: configuration, metrics: metrics, limiter: limiter,
                                logger: logger, streamWakeUps: wakeUps)
        handlers.register(on: router)
        return router
    }

    /// The Hummingbird application, not yet running: HTTP/1 with the configuration's timeouts.
    /// - Parameter onServerRunning: called with the bound port once the server listens.
    /// - Throws: ``APIError`` (``APIError/Code/invalidConfiguration``) when ``LedgerHTTPConfiguration/validate()`` refuses
    ///   the configuration (a non-loopback host without `insecureListen`, say).
    public func makeApplication(onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }) throws(APIError)
        -> some ApplicationProtocol
    {
        try configuration.validate()
        let timeouts = ConnectionDeadlines.Timeouts(configuration)
        return Application(
            router: makeRouter(),
            server: HTTPServerBuilder { responder in TimedHTTP1Channel(base: HTTP1Channel(responder: responder), timeouts: timeouts) },
            configuration: ApplicationConfiguration(address: .hostname(configuration.host, port: configuration.port),
                                                    serverName: "ledger"),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            logger: logger)
    }

    /// Serves until graceful shutdown, then stops accepting connections, lets requests in flight
    /// finish and returns; or until the task is cancelled, which closes every connection at once.
    /// The application's own `ServiceGroup` (Hummingbird's) follows the enclosing group's graceful
    /// shutdown; it traps no signal itself: the command's group does (`ledger serve`).
    /// - Throws: ``APIError`` (``APIError/Code/invalidConfiguration``) before binding, or what the server fails with.
    public func run() async throws {
        try await makeApplication(onServerRunning: onServerRunning).run()
    }

    /// Runs until the task is cancelled (tests), calling `onServerRunning` rather than the
    /// server's own ``onServerRunning``.
    /// - Parameter onServerRunning: called with the bound port once the server listens.
    /// - Throws: ``APIError`` (``APIError/Code/invalidConfiguration``) before binding, or what the server fails with.
    public func runUntilCancelled(onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        try await makeApplication(onServerRunning: onServerRunning).run()
    }
}

/// The process's Prometheus registry, installed as swift-metrics' backend the first time it is
/// used (swift-metrics allows one backend per process, so use this rather than bootstrapping
/// elsewhere). Pass it to ``LedgerHTTPServer`` so `GET /metrics` renders it.
public enum LedgerMetricsBackend {
    /// The registry, bootstrapped once.
    public static let prometheus: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return registry
    }()
}
