import Foundation

/// Where Google conversion requests go: `https://www.googleadservices.com` unless a configuration
/// value overrides it (a loopback fake in tests).
///
/// Google App Conversion Tracking API: "All requests must be sent via HTTPS. Pings received via
/// HTTP will be rejected." So the scheme is `https`, except `http` towards a loopback host
/// (`127.0.0.1`, `localhost`, `::1`), which never leaves the machine.
public struct GoogleEndpoint: Sendable, Hashable, Codable {
    /// `https`, or `http` for a loopback host.
    public let scheme: String
    /// The host name or address; an IPv6 address is held in brackets (`[::1]`) so that
    /// `ProviderRequest.urlString` stays a valid URL.
    public let host: String
    /// The port, or `nil` for the scheme's default.
    public let port: Int?

    /// The production endpoint, `https://www.googleadservices.com`.
    public static let production = GoogleEndpoint(uncheckedScheme: "https", host: "www.googleadservices.com", port: nil)

    /// An overridden endpoint, checked.
    ///
    /// - Throws: `ProviderError` on `scheme` (`https_only`), `host` (`valid_host`) or `port`
    ///   (`range_1_65535`).
    public init(scheme: String, host: String, port: Int? = nil) throws(ProviderError) {
        let checked = try EndpointRules.check(scheme: scheme, host: host, port: port, provider: .google)
        self.init(uncheckedScheme: checked.scheme, host: checked.host, port: port)
    }

    private init(uncheckedScheme scheme: String, host: String, port: Int?) {
        self.scheme = scheme
        self.host = host
        self.port = port
    }

    /// Decoding re-applies the checks, so a stored configuration cannot smuggle in plain HTTP.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try self.init(
            scheme: container.decode(String.self, forKey: .scheme), host: container.decode(String.self, forKey: .host),
            port: container.decodeIfPresent(Int.self, forKey: .port))
    }
}

