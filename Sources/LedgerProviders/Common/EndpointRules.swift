import Foundation

/// The endpoint rules every provider's builder applies: `https`, or `http` only towards a loopback
/// host (a test fake), a plausible host, a port in range.
enum EndpointRules {
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
                .invalidRequest, provider: provider, field: "host", rule: "valid_host",
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
