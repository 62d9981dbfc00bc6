/// Where Singular's SDK API lives: `https://sdk-api-v1.singular.net` in production (Singular
/// SKAdNetwork 4 implementation guide, "Ponto final da API do valor de conversão"); tests override
/// it to reach a loopback fake, where `http` is allowed.
public struct SingularEndpoint: Sendable, Hashable, Codable {
    /// `https`, or `http` for a loopback host only.
    public var scheme: String
    /// The host name or address.
    public var host: String
    /// The port, or `nil` for the scheme's default.
    public var port: Int?

    /// Creates an endpoint; it is checked when a request is built.
    public init(scheme: String = "https", host: String, port: Int? = nil) {
        self.scheme = scheme
        self.host = host
        self.port = port
    }

    /// `https://sdk-api-v1.singular.net`.
    public static let production = SingularEndpoint(host: "sdk-api-v1.singular.net")
}

/// The Singular SDK key and endpoint every conversion value request is built with.
///
/// `sdkKey` is the `a` query parameter, a credential: built requests mark it sensitive. It is the
/// *SDK* key ("Não use a chave da API de relatório": the reporting API key gets data rejected).
public struct SingularConfiguration: Sendable, Hashable {
    /// `a`: the Singular SDK key.
    public var sdkKey: String
    /// Where to send; ``SingularEndpoint/production`` unless a test overrides it.
    public var endpoint: SingularEndpoint

    /// Creates a configuration.
    public init(sdkKey: String, endpoint: SingularEndpoint = .production) {
        self.sdkKey = sdkKey
        self.endpoint = endpoint
    }
}

extension SingularConfiguration: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// A description without the SDK key.
    public var description: String {
        "SingularConfiguration(a: \(ProviderRequest.redactedMarker), endpoint: \(endpoint.scheme)://"
            + "\(endpoint.host)\(endpoint.port.map { ":\($0)" } ?? ""))"
    }

    /// Same as ``description``: the key is never printed.
    public var debugDescription: String { description }

    /// Reflection (`dump`, test failure output) hides the SDK key too.
    public var customMirror: Mirror {
        Mirror(self, children: ["a": ProviderRequest.redactedMarker, "endpoint": endpoint], displayStyle: .struct)
    }
}
