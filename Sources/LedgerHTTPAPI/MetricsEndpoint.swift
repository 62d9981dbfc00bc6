import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import Prometheus
import ServiceLifecycle

/// What a process's readiness check found: `GET /ready` answers 200 for ``ready`` and 503 with
/// the reason otherwise, so a load balancer or an orchestrator can tell "alive" from "able to work".
public enum Readiness: Sendable, Equatable {
    /// The process can do its work.
    case ready
    /// It cannot; `reason` is a short, fixed word (`database_unreachable`, `send_queue_unreadable`),
    /// never an error's text, which may quote a statement or a value.
    case notReady(reason: String)
}

/// A small HTTP server for a process that serves no API of its own (`ledger worker`), so that it
/// can be scraped and probed like `ledger serve`:
///
/// - `GET /metrics`: the process's Prometheus registry (``LedgerMetricsBackend/prometheus``) as text;
/// - `GET /health`: 200 while the process answers (liveness; the database is not asked);
/// - `GET /ready`: 200 `{"status": "ready"}` when ``readiness`` says so, otherwise 503
///   `{"status": "not_ready", "reason": "…"}`.
///
/// The bodies are those of `ledger serve`'s routes of the same names, so one probe configuration
/// fits both processes. Connections get the API's default header, request and idle timeouts. It
/// carries counts and gauges only (no ids, values or credentials); it speaks plain HTTP, so keep
/// it on loopback or a private network. A swift-service-lifecycle `Service`: it stops with the
/// process's `ServiceGroup`.
public struct MetricsEndpoint: Service {
    /// The address to listen on.
    public let host: String
    /// The port to listen on (0: any free port, reported to ``onServerRunning``).
    public let port: Int
    /// The registry `GET /metrics` renders.
    public let registry: PrometheusCollectorRegistry
    /// Asked at each `GET /ready`: a real check of what the process needs (the worker: the
    /// database answers and the send queue can be read).
    public let readiness: @Sendable () async -> Readiness
    /// Called with the bound port once the server listens (the worker prints it).
    public let onServerRunning: @Sendable (Int) async -> Void
    let logger: Logger

    /// An endpoint on `host`:`port` rendering `registry`, answering `/ready` from `readiness`.
    /// - Parameters:
    ///   - host: the address to listen on (a process's default is loopback).
    ///   - port: the port (0: any free port).
    ///   - registry: what `GET /metrics` renders.
    ///   - readiness: the readiness check.
    ///   - logger: where a failed readiness check is logged (its reason only).
    ///   - onServerRunning: called with the bound port once the server listens.
    public init(host: String, port: Int, registry: PrometheusCollectorRegistry,
                readiness: @escaping @Sendable () async -> Readiness, logger: Logger,
                onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }) {
        self.host = host
        self.port = port
        self.registry = registry
        self.readiness = readiness
        self.logger = logger
        self.onServerRunning = onServerRunning
    }

    /// The three routes; anything else answers 404.
    public func makeRouter() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        router.get("/health") { _, _ in try JSONResponse.make(["status": "ok"]) }
        router.get("/ready") { [readiness, logger] _, _ in
            switch await readiness() {
            case .ready:
                return try JSONResponse.make(["status": "ready"])
            case .notReady(let reason):
                logger.warning("readiness check failed", metadata: ["reason": "\(reason)"])
                return try JSONResponse.make(status: .serviceUnavailable, ["status": "not_ready", "reason": reason])
            }
        }
        router.get("/metrics") { [registry] _, _ in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                     body: ResponseBody(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
        }
        return router
    }

    /// Serves until the enclosing group's graceful shutdown (or cancellation).
    /// - Throws: what binding or the server fails with (a port in use, say).
    public func run() async throws {
        let timeouts = ConnectionDeadlines.Timeouts(LedgerHTTPConfiguration(host: host, port: port))
        let application = Application(
            router: makeRouter(),
            server: HTTPServerBuilder { responder in TimedHTTP1Channel(base: HTTP1Channel(responder: responder), timeouts: timeouts) },
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "ledger"),
            onServerRunning: { [onServerRunning] channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            logger: logger)
        try await application.run()
    }
}
