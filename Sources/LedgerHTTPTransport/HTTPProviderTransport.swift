import AsyncHTTPClient
import Foundation
import LedgerDispatch
import LedgerProviders
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Synchronization

/// The production ``ProviderTransport``: sends built provider requests with AsyncHTTPClient.
///
/// One `HTTPClient` is shared by every send, so connections to each provider host are pooled and
/// reused (TLS handshakes are the expensive part of a provider call, and the worker sends many small
/// requests to the same four hosts). The transport never retries, never follows redirects and never
/// interprets an answer: every HTTP status comes back as a ``TransportResponse``, and only a request
/// that got no HTTP answer is a ``DispatchError`` — retrying is the worker's business, by each
/// provider's documented rules.
///
/// Call ``shutdown()`` before the last reference goes away: AsyncHTTPClient traps in debug builds
/// when a client is released while still running. In a swift-service-lifecycle `ServiceGroup` the
/// transport is a `Service` that does it (``run()``): listed before the send worker, it shuts down
/// after the worker's tries in flight have their answers.
public final class HTTPProviderTransport: ProviderTransport, Service {
    /// How the transport connects, and its limits.
    public struct Configuration: Sendable, Hashable {
        /// How long establishing a connection (TCP and TLS) may take. Shorter than a typical
        /// per-request timeout so that an unreachable host is reported as `connectionFailed` — safe
        /// to retry, nothing arrived — rather than as an ambiguous `timeout`.
        public var connectTimeout: Duration
        /// The largest answer body accepted; larger answers fail with `responseTooLarge`. Provider
        /// answers are a few kilobytes; the ceiling keeps a misbehaving peer from filling memory.
        public var maximumResponseBytes: Int
        /// How long an unused pooled connection is kept open for reuse.
        public var idleConnectionTimeout: Duration
        /// The number of HTTP/1.1 connections kept per host (more are opened under load, but not
        /// kept). Matches the worker's typical concurrency per provider.
        public var maximumConnectionsPerHost: Int

        /// A configuration; the defaults suit production: 5 s connect, 4 MiB answers, 60 s idle,
        /// 8 connections per host.
        public init(
            connectTimeout: Duration = .seconds(5), maximumResponseBytes: Int = 4 * 1024 * 1024,
            idleConnectionTimeout: Duration = .seconds(60), maximumConnectionsPerHost: Int = 8
        ) {
            self.connectTimeout = connectTimeout
            self.maximumResponseBytes = maximumResponseBytes
            self.idleConnectionTimeout = idleConnectionTimeout
            self.maximumConnectionsPerHost = maximumConnectionsPerHost
        }
    }

    /// Hosts that plain `http` may be used with, the same set the request builders accept: they
    /// never leave the machine (loopback fakes in tests, benchmarks and the demo).
    public static let loopbackHosts: Set<String> = ["127.0.0.1", "localhost", "::1", "[::1]"]

    /// The limits this transport was made with.
    public let configuration: Configuration
    private let client: HTTPClient
    private let logger: Logger
    private let isShutDown = Mutex(false)

    /// A transport with its own pooled client on NIO's shared event loops.
    ///
    /// - Parameters:
    ///   - configuration: connect timeout, answer size limit, pool sizing.
    ///   - logger: where connection-level events are logged (requests are never logged whole: they
    ///     may carry credentials).
    public init(configuration: Configuration = Configuration(), logger: Logger = Logger(label: "ledger.http-transport")) {
        self.configuration = configuration
        self.logger = logger
        var clientConfiguration = HTTPClient.Configuration(
            // Never follow a redirect: the request must go exactly where it was built to go, and a
            // redirect would carry its credentials (query `dev_token`, body `branch_secret`) to
            // another host. A 3xx comes back as an answer for the worker to record.
            redirectConfiguration: .disallow,
            timeout: HTTPClient.Configuration.Timeout(
                connect: TimeAmount(configuration.connectTimeout), read: nil),
            decompression: .disabled)
        var pool = HTTPClient.Configuration.ConnectionPool(
            idleTimeout: TimeAmount(configuration.idleConnectionTimeout),
            concurrentHTTP1ConnectionsPerHostSoftLimit: max(1, configuration.maximumConnectionsPerHost))
        // A refused or unreachable host fails the send at once instead of AsyncHTTPClient retrying
        // the connection until the deadline: the worker owns retries and back-off, and a quick
        // `connectionFailed` frees its slot for sends that can succeed.
        pool.retryConnectionEstablishment = false
        clientConfiguration.connectionPool = pool
        // No span of AsyncHTTPClient's and no `traceparent` to a provider: its span would record
        // the request's URL, whose query holds credentials and device identifiers (Google's
        // `dev_token`, `rdid`), and our trace ids are none of a provider's business. The worker's
        // `send try` span covers the call.
        clientConfiguration.tracing.tracer = nil
        self.client = HTTPClient(
            eventLoopGroupProvider: .singleton, configuration: clientConfiguration, backgroundActivityLogger: logger)
    }

    /// Sends `request` exactly as built — method, URL, headers in order, body bytes — and waits at
    /// most `timeout` for the whole answer (head and body).
    ///
    /// Framing is AsyncHTTPClient's: it writes `Content-Length` from the body (so a `POST` without
    /// a body carries `Content-Length: 0`, which Google requires explicitly), and a request's own
    /// `Content-Length` must agree with its body.
    ///
    /// - Throws: ``DispatchError``: `invalidRequest` (plain `http` to a non-loopback host, a URL
    ///   or header that cannot be sent), `connectionFailed`, `tls`, `timeout`, `connectionLost`,
    ///   `responseTooLarge`.
    public func send(_ request: ProviderRequest, timeout: Duration) async throws(DispatchError) -> TransportResponse {
        let prepared = try prepare(request)
        let clock = ContinuousClock()
        let started = clock.now
        let deadline = started.advanced(by: timeout)
        let result = await race(prepared, deadline: deadline, clock: clock)
        switch result {
        case .answered(let response):
            return TransportResponse(response: response, latency: clock.now - started)
        case .timedOut:
            throw DispatchError(.timeout, "no complete answer from \(request.host) within \(timeout)")
        case .failed(let error):
            let mapped = Self.map(error, host: request.host)
            logger.debug(
                "provider request failed",
                metadata: ["provider": "\(request.provider.rawValue)", "kind": "\(mapped.code)"])
            throw mapped
        }
    }

    /// Shuts the client down, closing pooled connections. Idempotent; a send after it fails with
    /// `connectionFailed` (nothing was sent).
    public func shutdown() async {
        let first = isShutDown.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        do {
            try await client.shutdown()
        } catch {
            logger.warning("HTTP client shutdown failed", metadata: ["error.type": "\(String(reflecting: type(of: error)))"])
        }
    }

    /// Waits for graceful shutdown (or cancellation), then shuts the client down (``shutdown()``).
    /// Returns normally either way: a stop is no failure. Sends work whether or not this runs; it
    /// only decides when the client goes.
    public func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }

    // MARK: - Building the AsyncHTTPClient request

    /// Applies the policy checks and converts the request. Checked here although the builders
    /// already check, as defence in depth: a request decoded from storage or built by hand must not
    /// leave the machine unencrypted either.
    func prepare(_ request: ProviderRequest) throws(DispatchError) -> HTTPClientRequest {
        let scheme = request.scheme.lowercased()
        let host = request.host.lowercased()
        switch scheme {
        case "https": break
        case "http" where Self.loopbackHosts.contains(host): break
        case "http":
            throw DispatchError(.invalidRequest, "plain http is refused for non-loopback host \(request.host); providers require https")
        default:
            throw DispatchError(.invalidRequest, "unsupported scheme '\(request.scheme)'")
        }
        guard !host.isEmpty, request.path.hasPrefix("/") else {
            throw DispatchError(.invalidRequest, "the request needs a host and a path starting with '/'")
        }
        let bodyCount = request.body?.count ?? 0
        var headers = HTTPHeaders()
        for header in request.headers {
            switch header.name.lowercased() {
            case "content-length":
                // AsyncHTTPClient writes the framing itself; a stated length that disagrees with the
                // body would mean the request is not what its builder meant to send.
                guard header.value.trimmingCharacters(in: .whitespaces) == String(bodyCount) else {
                    throw DispatchError(.invalidRequest, "Content-Length \(header.value) does not match the body (\(bodyCount) bytes)")
                }
            case "transfer-encoding":
                throw DispatchError(.invalidRequest, "Transfer-Encoding is not sent: provider bodies have a known length")
            default:
                headers.add(name: header.name, value: header.value)
            }
        }
        var out = HTTPClientRequest(url: request.urlString)
        out.method = request.method == .post ? .POST : .GET
        out.headers = headers
        if let body = request.body {
            out.body = .bytes(ByteBuffer(bytes: body))
        } else if request.method == .post {
            // An empty but present body makes the framing explicit: `Content-Length: 0`.
            out.body = .bytes(ByteBuffer())
        }
        return out
    }

    // MARK: - Sending with a deadline

    private enum Outcome: Sendable {
        case answered(ProviderResponse)
        case timedOut
        case failed(any Error)
    }

    /// Runs the request against a timer. AsyncHTTPClient's own deadline covers only the wait for
    /// the response head, so a peer that stalls in the middle of its body would otherwise hold the
    /// send forever; the timer covers head and body alike.
    private func race(
        _ request: HTTPClientRequest, deadline: ContinuousClock.Instant, clock: ContinuousClock
    ) async -> Outcome {
        let client = self.client
        let maxBytes = configuration.maximumResponseBytes
        let logger = self.logger
        let remaining = clock.now.duration(to: deadline)
        let nioDeadline = NIODeadline.now() + TimeAmount(max(remaining, .zero))
        return await withTaskGroup(of: Outcome.self) { group in
            group.addTask {
                do {
                    let response = try await client.execute(request, deadline: nioDeadline, logger: logger)
                    let body = try await response.body.collect(upTo: maxBytes)
                    var headers: [Header] = []
                    headers.reserveCapacity(response.headers.count)
                    for (name, value) in response.headers { headers.append(Header(name, value)) }
                    return .answered(
                        ProviderResponse(status: Int(response.status.code), headers: headers, body: Data(body.readableBytesView)))
                } catch {
                    return .failed(error)
                }
            }
            group.addTask {
                do {
                    try await Task.sleep(until: deadline, clock: clock)
                    return .timedOut
                } catch {
                    // Cancelled: the request finished first (or the caller was cancelled).
                    return .failed(CancellationError())
                }
            }
            let first = await group.next() ?? .timedOut
            group.cancelAll()
            // A request that failed because the timer cancelled it, or hit AsyncHTTPClient's own
            // deadline, is a timeout whichever child reported first.
            if case .failed(let error) = first, clock.now >= deadline, Self.isDeadlineLike(error) {
                return .timedOut
            }
            return first
        }
    }

    private static func isDeadlineLike(_ error: any Error) -> Bool {
        if error is CancellationError { return true }
        if let error = error as? HTTPClientError {
            return error == .deadlineExceeded || error == .cancelled || error == .readTimeout
        }
        return false
    }

    // MARK: - Error mapping

    /// Maps an AsyncHTTPClient / NIO error to a ``DispatchError`` code, by whether the request can
    /// have arrived: `connectionFailed` and `tls` mean nothing arrived (safe to send again);
    /// `timeout` and `connectionLost` mean it may have. Unknown errors are taken as
    /// `connectionLost`, the cautious reading. Messages never include the URL (its query may hold
    /// a credential).
    static func map(_ error: any Error, host: String) -> DispatchError {
        if let error = error as? DispatchError { return error }
        if error is NIOTooManyBytesError {
            return DispatchError(.responseTooLarge, "the answer from \(host) exceeds the size limit")
        }
        if error is CancellationError {
            return DispatchError(.connectionLost, "cancelled before an answer from \(host) arrived; it may have arrived")
        }
        if let error = error as? HTTPClientError {
            switch error {
            case .deadlineExceeded, .readTimeout, .writeTimeout:
                return DispatchError(.timeout, "no answer from \(host) in time (\(error))")
            case .connectTimeout, .getConnectionFromPoolTimeout, .socksHandshakeTimeout, .httpProxyHandshakeTimeout:
                return DispatchError(.connectionFailed, "could not connect to \(host) (\(error))")
            case .tlsHandshakeTimeout:
                return DispatchError(.tls, "TLS handshake with \(host) timed out")
            case .alreadyShutdown:
                return DispatchError(.connectionFailed, "the transport is shut down; nothing was sent")
            case .remoteConnectionClosed, .uncleanShutdown:
                return DispatchError(.connectionLost, "\(host) closed the connection before answering (\(error))")
            case .cancelled:
                return DispatchError(.connectionLost, "cancelled before an answer from \(host) arrived; it may have arrived")
            case .invalidURL, .emptyHost, .emptyScheme, .traceRequestWithBody, .bodyLengthMismatch,
                .identityCodingIncorrectlyPresent:
                return DispatchError(.invalidRequest, "the request cannot be sent as built (\(error))")
            default:
                let text = String(describing: error)
                if text.contains("unsupportedScheme") || text.contains("invalidHeaderField") {
                    return DispatchError(.invalidRequest, "the request cannot be sent as built (\(text))")
                }
                return DispatchError(.connectionLost, "\(host): \(text)")
            }
        }
        if let error = error as? ChannelError {
            switch error {
            case .connectTimeout:
                return DispatchError(.connectionFailed, "could not connect to \(host) in time")
            default:
                return DispatchError(.connectionLost, "\(host): \(error)")
            }
        }
        if let error = error as? IOError {
            switch error.errnoCode {
            case ECONNREFUSED, EHOSTUNREACH, ENETUNREACH, EHOSTDOWN, EADDRNOTAVAIL, ENETDOWN:
                return DispatchError(.connectionFailed, "could not connect to \(host): \(error)")
            case ETIMEDOUT:
                return DispatchError(.timeout, "\(host): \(error)")
            default:
                return DispatchError(.connectionLost, "\(host): \(error)")
            }
        }
        // Errors of modules this target does not import (NIOPosix's happy-eyeballs connect error
        // for host names, NIOSSL's TLS errors) are recognised by type name rather than by adding
        // dependencies for the sake of a type check.
        let typeName = String(reflecting: type(of: error))
        if typeName.contains("NIOConnectionError") || typeName.contains("SingleConnectionFailure") {
            return DispatchError(.connectionFailed, "could not connect to \(host): \(error)")
        }
        if typeName.contains("NIOSSL") || typeName.contains("BoringSSL") || typeName.contains("NIOTLS") {
            return DispatchError(.tls, "TLS with \(host) failed: \(error)")
        }
        if error is HTTPParserError {
            return DispatchError(.connectionLost, "\(host) sent a malformed HTTP answer (\(error))")
        }
        return DispatchError(.connectionLost, "\(host): \(error)")
    }
}
