import Foundation
import LedgerDomain

/// The attribution token an app gets from `AAAttribution.attributionToken()` (Apple AdServices
/// attribution API): "a Base64 encoded string and has a 24-hour TTL".
///
/// Checked on the way in: not empty, standard Base64 alphabet (`A–Z a–z 0–9 + /`) with padding
/// only at the end. Surrounding whitespace (a trailing newline from the app) is trimmed; inner
/// whitespace is refused — the Apple AdServices attribution API's printed sample contains one
/// (`…IR/ h+2…`), an artefact of line wrapping that a real token never has, and sending it would
/// earn a 400. Unpadded Base64 is accepted (the Apple AdServices attribution API's sample is 83
/// characters, unpadded or truncated).
public struct AdServicesToken: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The token, exactly as it is sent.
    public let text: String

    /// A sanity ceiling: real tokens are a few hundred to a few thousand characters.
    public static let maxLength = 16_384

    /// A checked token.
    ///
    /// - Throws: `ProviderError` on `token` with rule `required`, `base64` or `max_length`.
    public init(_ text: String) throws(ProviderError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else {
            throw Self.failure("required", "The attribution token is empty.")
        }
        guard trimmed.utf8.count <= Self.maxLength else {
            throw Self.failure("max_length", "The attribution token is longer than \(Self.maxLength) characters.")
        }
        guard LedgerDomain.AdServicesToken.isBase64(trimmed) else {
            throw Self.failure("base64", "The attribution token must be a Base64 encoded string (Apple AdServices attribution API).")
        }
        self.text = trimmed
    }

    /// A short form for logs (first 8 characters and the length): the whole token is not needed there.
    public var description: String { "AdServicesToken(\(text.prefix(8))…, \(text.utf8.count) chars)" }

    /// Stored as the token text; decoding re-checks it.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }

    /// Decodes the stored token, re-checking it.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let raw = try container.decode(String.self)
        do {
            try self.init(raw)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.message)
        }
    }

    private static func failure(_ rule: String, _ message: String) -> ProviderError {
        ProviderError(.invalidRequest, provider: .appleAdServices, field: "token", rule: rule, message: message)
    }
}

/// Where AdServices requests go: `https://api-adservices.apple.com` unless a configuration value
/// overrides it; `http` only towards a loopback host (a test fake).
public struct AdServicesEndpoint: Sendable, Hashable, Codable {
    /// `https`, or `http` for a loopback host.
    public let scheme: String
    /// The host; an IPv6 loopback is held as `[::1]`.
    public let host: String
    /// The port, or `nil` for the scheme's default.
    public let port: Int?

    /// `https://api-adservices.apple.com`.
    public static let production = AdServicesEndpoint(uncheckedScheme: "https", host: "api-adservices.apple.com", port: nil)

    /// An overridden endpoint, checked.
    ///
    /// - Throws: `ProviderError` on `scheme` (`https_only`), `host` (`valid_host`) or `port` (`range_1_65535`).
    public init(scheme: String, host: String, port: Int? = nil) throws(ProviderError) {
        let checked = try EndpointRules.check(scheme: scheme, host: host, port: port, provider: .appleAdServices)
        self.init(uncheckedScheme: checked.scheme, host: checked.host, port: port)
    }

    private init(uncheckedScheme scheme: String, host: String, port: Int?) {
        self.scheme = scheme
        self.host = host
        self.port = port
    }

    /// Decoding re-applies the checks.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try self.init(
            scheme: container.decode(String.self, forKey: .scheme), host: container.decode(String.self, forKey: .host),
            port: container.decodeIfPresent(Int.self, forKey: .port))
    }
}

/// Builds the Apple AdServices attribution API's attribution lookup:
/// `POST https://api-adservices.apple.com/api/v1/` with "a single token in the request body and … a
/// content-type of text/plain in the header".
public enum AdServicesRequestBuilder {
    /// `/api/v1/`, trailing slash included as in the document.
    public static let path = "/api/v1/"

    /// The lookup request for `token`. The token is not marked sensitive: it identifies an install
    /// for 24 hours but grants nothing on our account.
    public static func attributionRequest(
        token: AdServicesToken, endpoint: AdServicesEndpoint = .production
    ) -> ProviderRequest {
        ProviderRequest(
            provider: .appleAdServices, method: .post, scheme: endpoint.scheme, host: endpoint.host, port: endpoint.port,
            path: path, headers: [Header("Content-Type", "text/plain")], body: Data(token.text.utf8))
    }
}
