import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Limits, timeouts and address of the HTTP API.
public struct LedgerHTTPConfiguration: Sendable, Hashable {
    /// The address to bind (`127.0.0.1` by default). Anything but a loopback address needs
    /// ``insecureListen``: the server speaks plain HTTP.
    public var host: String
    /// The port (0: any free port, reported through `onServerRunning`).
    public var port: Int
    /// The largest request body accepted, in bytes; larger bodies are refused with 413.
    public var maxBodyBytes: Int
    /// The most events one append request may carry.
    public var maxEventsPerBatch: Int
    /// How long a request's head (request line and headers) may take to arrive, from its first
    /// byte (or from the connection's opening, for its first request); then the connection is
    /// closed.
    public var headerTimeout: Duration
    /// How long a keep-alive connection may wait for its next request; then it is closed.
    public var idleTimeout: Duration
    /// How long a whole request (head and body) may take to arrive, from its first byte; then it is
    /// answered 408 and the connection closed.
    public var requestTimeout: Duration
    /// Requests per app per second, after authentication.
    public var rateLimiting: RateLimiting
    /// Whether a non-loopback ``host`` is accepted: only for a server behind a TLS-terminating
    /// proxy, since the API itself has no TLS.
    public var insecureListen: Bool
    /// How often an event stream (`GET /v1/apps/{app}/events/stream`) with nothing to send writes
    /// a `: keep-alive` comment, so that proxies and load balancers do not close it as idle.
    public var eventStreamHeartbeat: Duration
    /// Apple's postbacks: developer-copy hosts and development keys, per app.
    public var applePostbacks = ApplePostbackSettings()

    /// Creates a configuration: 127.0.0.1:8080, 4 MiB bodies, 1,000 events per batch, 10 s for a
    /// request's head, 60 s of keep-alive idleness, 30 s for a whole request, rate limits chosen by
    /// address (``RateLimiting/automatic``), loopback only, an event stream heartbeat every 15 s.
    public init(host: String = "127.0.0.1", port: Int = 8080, maxBodyBytes: Int = 4 * 1_048_576, maxEventsPerBatch: Int = 1000,
                headerTimeout: Duration = .seconds(10), idleTimeout: Duration = .seconds(60), requestTimeout: Duration = .seconds(30),
                rateLimiting: RateLimiting = .automatic, insecureListen: Bool = false, eventStreamHeartbeat: Duration = .seconds(15)) {
        self.host = host
        self.port = port
        self.maxBodyBytes = maxBodyBytes
        self.maxEventsPerBatch = maxEventsPerBatch
        self.headerTimeout = headerTimeout
        self.idleTimeout = idleTimeout
        self.requestTimeout = requestTimeout
        self.rateLimiting = rateLimiting
        self.insecureListen = insecureListen
        self.eventStreamHeartbeat = eventStreamHeartbeat
    }

    /// Whether and how requests are limited per app.
    public enum RateLimiting: Sendable, Hashable {
        /// No limit on a loopback ``LedgerHTTPConfiguration/host``; ``HTTPRateLimit/standard`` on any other.
        case automatic
        /// No limit.
        case off
        /// This limit for every app.
        case perApp(HTTPRateLimit)
    }

    /// The limit in force: ``rateLimiting`` with ``RateLimiting/automatic`` resolved by ``host``.
    public var effectiveRateLimit: HTTPRateLimit? {
        switch rateLimiting {
        case .automatic: Self.isLoopback(host: host) ? nil : .standard
        case .off: nil
        case .perApp(let limit): limit
        }
    }

    /// Whether `host` is a loopback address: `localhost`, an IPv4 address in 127.0.0.0/8 or `::1`
    /// (brackets allowed).
    public static func isLoopback(host: String) -> Bool {
        var name = host
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if name.lowercased() == "localhost" || name.lowercased() == "localhost." { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, name, &v4) == 1 {
            return UInt32(bigEndian: v4.s_addr) >> 24 == 127
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, name, &v6) == 1 {
            let bytes = withUnsafeBytes(of: &v6) { Array($0) }
            return bytes == [UInt8](repeating: 0, count: 15) + [1]
        }
        return false
    }

    /// Checks the configuration before the server binds.
    /// - Throws: ``APIError`` (``APIError/Code/invalidConfiguration``): a non-loopback host without ``insecureListen``,
    ///   a timeout that is not positive, a rate limit that is not positive.
    public func validate() throws(APIError) {
        if !insecureListen, !Self.isLoopback(host: host) { throw .nonLoopbackHost(host) }
        for (name, value) in [("headerTimeout", headerTimeout), ("idleTimeout", idleTimeout), ("requestTimeout", requestTimeout),
                            ("eventStreamHeartbeat", eventStreamHeartbeat)]
        where value <= .zero {
            throw .nonPositiveTimeout(name)
        }
        if let limit = effectiveRateLimit, !(limit.requestsPerSecond > 0 && limit.requestsPerSecond.isFinite && limit.burst >= 1) {
            throw .invalidRateLimit
        }
    }
}

/// A token bucket: `requestsPerSecond` on average, up to `burst` at once.
public struct HTTPRateLimit: Sendable, Hashable {
    /// The sustained rate, per app.
    public var requestsPerSecond: Double
    /// How many requests an app may send at once after a quiet spell (the bucket's size).
    public var burst: Int

    /// A limit of `requestsPerSecond` with bursts of `burst`.
    public init(requestsPerSecond: Double, burst: Int) {
        self.requestsPerSecond = requestsPerSecond
        self.burst = burst
    }

    /// The limit a non-loopback server gets unless told otherwise: 100 requests per second per
    /// app, bursts of 200.
    public static let standard = HTTPRateLimit(requestsPerSecond: 100, burst: 200)
}

extension APIError {
    /// The host is not a loopback address and ``LedgerHTTPConfiguration/insecureListen`` is off.
    static func nonLoopbackHost(_ host: String) -> APIError {
        refusedConfiguration(.invalidConfiguration, field: host, rule: "loopback_host",
                             "\(host) is not a loopback address, and the API has no TLS: keys and device data would cross the network in clear text")
    }
    /// A timeout (named) is zero or negative.
    static func nonPositiveTimeout(_ name: String) -> APIError {
        refusedConfiguration(.invalidConfiguration, field: name, rule: "positive_timeout", "\(name) must be more than zero")
    }
    /// The rate limit's rate or burst is not positive.
    static let invalidRateLimit = refusedConfiguration(
        .invalidConfiguration, rule: "positive_rate_limit", "a rate limit needs a rate above zero and a burst of at least 1")
}
