import Foundation

/// Where Google conversion requests go: `https://www.googleadservices.com` unless a configuration
/// value overrides it (a loopback fake in tests).
///
/// Seed 000: "All requests must be sent via HTTPS. Pings received via HTTP will be rejected." So
/// the scheme is `https`, except `http` towards a loopback host (`127.0.0.1`, `localhost`, `::1`),
/// which never leaves the machine.
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
    /// - Throws: `ProviderError` on `scheme` (`https_only`), `host` (`required`) or `port`
    ///   (`range_1_65535`).
    public init(scheme: String, host: String, port: Int? = nil) throws(ProviderError) {
        let checked = try GAEndpointRules.check(scheme: scheme, host: host, port: port, provider: .google)
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

/// The endpoint rules shared by the Google and Apple builders.
enum GAEndpointRules {
    /// Hosts that `http` may be used with: they never leave the machine.
    static let loopbackHosts: Set<String> = ["127.0.0.1", "localhost", "::1", "[::1]"]

    /// Checks and normalizes (`scheme` lowercased, `::1` bracketed) an endpoint.
    static func check(
        scheme: String, host: String, port: Int?, provider: Provider
    ) throws(ProviderError) -> (scheme: String, host: String) {
        let scheme = scheme.lowercased()
        var host = host.lowercased()
        guard !host.isEmpty, host.unicodeScalars.allSatisfy({ isHostScalar($0) }) else {
            throw ProviderError(
                .invalidRequest, provider: provider, field: "host", rule: "required",
                message: "The endpoint host must be a non-empty host name or address.")
        }
        if host == "::1" { host = "[::1]" }
        if let port, !(1...65_535).contains(port) {
            throw ProviderError(
                .invalidRequest, provider: provider, field: "port", rule: "range_1_65535",
                message: "The endpoint port must be between 1 and 65535.")
        }
        switch scheme {
        case "https": break
        case "http" where loopbackHosts.contains(host): break
        default:
            throw ProviderError(
                .invalidRequest, provider: provider, field: "scheme", rule: "https_only",
                message: "Requests must be sent via HTTPS; plain http is allowed only to a loopback host "
                    + "(127.0.0.1, localhost, ::1).")
        }
        return (scheme, host)
    }

    private static func isHostScalar(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "0"..."9", "-", ".", ":", "[", "]": true
        default: false
        }
    }
}
