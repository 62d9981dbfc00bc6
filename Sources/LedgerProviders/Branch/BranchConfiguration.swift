/// Where Branch's API lives. Production is `https://api2.branch.io` (Branch v1/open
/// server-to-server guide, "Endpoint Specifications"); tests override it to reach a loopback fake,
/// where `http` is allowed.
public struct BranchEndpoint: Sendable, Hashable, Codable {
    /// `https`, or `http` for a loopback host only.
    public var scheme: String
    /// The host name or address, e.g. `api2.branch.io` or `127.0.0.1`.
    public var host: String
    /// The port, or `nil` for the scheme's default.
    public var port: Int?

    /// Creates an endpoint; it is checked when a request is built.
    public init(scheme: String = "https", host: String, port: Int? = nil) {
        self.scheme = scheme
        self.host = host
        self.port = port
    }

    /// `https://api2.branch.io`, the production API host.
    public static let production = BranchEndpoint(host: "api2.branch.io")
}

/// The app's Branch credentials and endpoint: the configuration every Branch request is built with.
///
/// `branchKey` and `branchSecret` are credentials (Branch v1/open server-to-server guide, "POST
/// body parameters": "Your production API Secret"); built requests mark both as sensitive so
/// ``ProviderRequest/redacted()`` removes them.
public struct BranchConfiguration: Sendable, Hashable {
    /// `branch_key`: the Live environment key, e.g. `key_live_…`.
    public var branchKey: String
    /// `branch_secret`: the Live environment secret. Never stored or logged.
    public var branchSecret: String
    /// Where to send; ``BranchEndpoint/production`` unless a test overrides it.
    public var endpoint: BranchEndpoint
    /// This service's own public addresses. An `X-IP-Override` equal to one of them is refused:
    /// the header must be the device's IP, "not your server's IP" (Branch v1/open server-to-server
    /// guide).
    public var serverPublicIPs: Set<String>
    /// The app's secret key for Branch's `identity`: the device's custom user id is sent as its
    /// HMAC-SHA256 under this key, in lowercase hex, because the Branch v1/open server-to-server
    /// guide says "You should never use personal user information here, and all values should be
    /// encrypted before being passed to Branch". `nil`: no `identity` is sent at all (a raw id
    /// never is). A credential: never stored, logged or printed.
    public var identityKey: String?

    /// Creates a configuration.
    public init(
        branchKey: String, branchSecret: String, endpoint: BranchEndpoint = .production,
        serverPublicIPs: Set<String> = [], identityKey: String? = nil
    ) {
        self.branchKey = branchKey
        self.branchSecret = branchSecret
        self.endpoint = endpoint
        self.serverPublicIPs = serverPublicIPs
        self.identityKey = identityKey
    }
}

extension BranchConfiguration: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// A description without the credentials, so printing a configuration cannot leak them.
    public var description: String {
        "BranchConfiguration(branch_key: \(ProviderRequest.redactedMarker), branch_secret: "
            + "\(ProviderRequest.redactedMarker), identity_key: \(identityKey == nil ? "nil" : ProviderRequest.redactedMarker), "
            + "endpoint: \(endpoint.scheme)://\(endpoint.host)\(endpoint.port.map { ":\($0)" } ?? ""))"
    }

    /// Same as ``description``: credentials are never printed.
    public var debugDescription: String { description }

    /// Reflection (`dump`, test failure output) hides the credentials too.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "branch_key": ProviderRequest.redactedMarker, "branch_secret": ProviderRequest.redactedMarker,
                "identity_key": identityKey == nil ? "nil" : ProviderRequest.redactedMarker,
                "endpoint": endpoint, "serverPublicIPs": serverPublicIPs,
            ],
            displayStyle: .struct)
    }
}
