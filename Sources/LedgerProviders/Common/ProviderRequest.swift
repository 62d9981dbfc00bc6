import Foundation

/// The providers the ledger talks to.
public enum Provider: String, Sendable, Hashable, Codable, CaseIterable {
    /// Google app conversion tracking (the Google App Conversion Tracking API).
    case google
    /// Apple AdServices (the Apple AdServices attribution API).
    case appleAdServices = "apple_adservices"
    /// Apple Search Ads, legacy iAd (the Apple Search Ads Attribution API).
    case appleIAd = "apple_iad"
    /// Branch server-to-server `v1/open` (the Branch v1/open server-to-server guide).
    case branch
    /// Singular SKAdNetwork 4 conversion value API (the Singular SKAdNetwork 4 implementation
    /// guide).
    case singular
    /// An app's own webhook endpoint (docs/webhooks.md): not a provider, but called and recorded
    /// like one.
    case webhook
}

/// One HTTP request to a provider, built purely (no I/O) by a provider's request builder.
///
/// The transport sends it as is; the ledger stores ``redacted()`` — never the request itself —
/// because a request may carry credentials (Google `dev_token`, Branch `branch_key` /
/// `branch_secret`, Singular `a`). As a second line of defence every form of the request that can
/// leave memory is redacted too: its `Codable` encoding, its `description` / `debugDescription`
/// and its reflection (`dump`, `Mirror`) all show ``redacted()``.
public struct ProviderRequest: Sendable, Hashable, Codable {
    /// The HTTP method.
    public enum Method: String, Sendable, Hashable, Codable { case get = "GET", post = "POST" }

    /// A field of the request that holds a credential, replaced by ``ProviderRequest/redactedMarker``
    /// in the stored form.
    public enum SensitiveField: Sendable, Hashable, Codable {
        /// A query parameter, by name.
        case query(String)
        /// A top-level key of a JSON object body.
        case jsonBodyKey(String)
        /// A header, by name (case-insensitive).
        case header(String)
    }

    /// The text that replaces a credential's value in the stored form.
    public static let redactedMarker = "REDACTED"

    /// The provider the request goes to.
    public var provider: Provider
    /// `GET` or `POST`.
    public var method: Method
    /// `https` for every provider; `http` only when a test points a builder at loopback.
    public var scheme: String
    /// The host name or address (an IPv6 address in brackets).
    public var host: String
    /// The port, when not the scheme's default.
    public var port: Int?
    /// The path, starting with `/`, e.g. `/pagead/conversion/app/1.0`.
    public var path: String
    /// Query parameters in the order they are sent; values are unencoded.
    public var query: [QueryItem]
    /// Headers in the order they are sent.
    public var headers: [Header]
    /// The body bytes, or `nil` for no body.
    public var body: Data?
    /// Which fields carry credentials.
    public var sensitiveFields: [SensitiveField]

    /// A request from its parts; builders mark credential-carrying fields in `sensitiveFields`.
    public init(
        provider: Provider, method: Method, scheme: String = "https", host: String, port: Int? = nil,
        path: String, query: [QueryItem] = [], headers: [Header] = [], body: Data? = nil,
        sensitiveFields: [SensitiveField] = []
    ) {
        self.provider = provider
        self.method = method
        self.scheme = scheme
        self.host = host
        self.port = port
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.sensitiveFields = sensitiveFields
    }

    /// The query string as sent: `name=value` pairs joined by `&`, each percent-encoded with
    /// ``QueryItem/percentEncode(_:)`` (RFC 3986 unreserved characters kept, all else `%XX`).
    public var encodedQuery: String {
        query.map { "\(QueryItem.percentEncode($0.name))=\(QueryItem.percentEncode($0.value))" }
            .joined(separator: "&")
    }

    /// The full URL text as sent.
    public var urlString: String {
        var text = "\(scheme)://\(host)"
        if let port { text += ":\(port)" }
        text += path
        if !query.isEmpty { text += "?" + encodedQuery }
        return text
    }

    /// The value of the first query parameter with this name.
    public func queryValue(_ name: String) -> String? { query.first { $0.name == name }?.value }

    /// The value of the first header with this name (case-insensitive).
    public func headerValue(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// This request with every credential replaced by ``redactedMarker``: the only form that may be
    /// stored in the ledger or logged.
    public func redacted() -> ProviderRequest {
        var copy = self
        for field in sensitiveFields {
            switch field {
            case .query(let name):
                copy.query = copy.query.map { $0.name == name ? QueryItem($0.name, Self.redactedMarker) : $0 }
            case .header(let name):
                copy.headers = copy.headers.map {
                    $0.name.lowercased() == name.lowercased() ? Header($0.name, Self.redactedMarker) : $0
                }
            case .jsonBodyKey(let key):
                guard let body = copy.body else { continue }
                // Fail closed: a body that cannot be read as a JSON object (or re-written) is
                // replaced whole, so a credential can never survive in it.
                guard var object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] else {
                    copy.body = Data(Self.redactedMarker.utf8)
                    continue
                }
                guard object[key] != nil else { continue }
                object[key] = Self.redactedMarker
                copy.body = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
                    ?? Data(Self.redactedMarker.utf8)
            }
        }
        return copy
    }

    enum CodingKeys: String, CodingKey {
        case provider, method, scheme, host, port, path, query, headers, body, sensitiveFields
    }

    /// Encodes ``redacted()``, never the credentials: whatever a caller encodes is a stored form.
    public func encode(to encoder: any Encoder) throws {
        let stored = redacted()
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(stored.provider, forKey: .provider)
        try container.encode(stored.method, forKey: .method)
        try container.encode(stored.scheme, forKey: .scheme)
        try container.encode(stored.host, forKey: .host)
        try container.encodeIfPresent(stored.port, forKey: .port)
        try container.encode(stored.path, forKey: .path)
        try container.encode(stored.query, forKey: .query)
        try container.encode(stored.headers, forKey: .headers)
        try container.encodeIfPresent(stored.body, forKey: .body)
        try container.encode(stored.sensitiveFields, forKey: .sensitiveFields)
    }
}

extension ProviderRequest: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `METHOD url` of ``redacted()``, headers and body included, so logging a request cannot leak
    /// a credential.
    public var description: String {
        let stored = redacted()
        var text = "\(stored.method.rawValue) \(stored.urlString)"
        for header in stored.headers { text += "\n\(header.name): \(header.value)" }
        if let body = stored.body { text += "\n" + String(decoding: body, as: UTF8.self) }
        return text
    }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// Reflection (`dump`, test failure output) shows ``redacted()``.
    public var customMirror: Mirror {
        let stored = redacted()
        return Mirror(
            self,
            children: [
                "provider": stored.provider, "method": stored.method, "url": stored.urlString,
                "headers": stored.headers, "body": stored.body.map { String(decoding: $0, as: UTF8.self) } as Any,
            ],
            displayStyle: .struct)
    }
}

/// One query parameter.
public struct QueryItem: Sendable, Hashable, Codable {
    /// The parameter's name, unencoded.
    public var name: String
    /// The parameter's value, unencoded.
    public var value: String
    /// A parameter from its name and value.
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }

    /// Percent-encodes everything but RFC 3986 unreserved characters (`A-Z a-z 0-9 - . _ ~`),
    /// UTF-8 first. `{"USD":9.99}` becomes `%7B%22USD%22%3A9.99%7D`, as in Singular's example.
    public static func percentEncode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }
}

/// One HTTP header.
public struct Header: Sendable, Hashable, Codable {
    /// The header's name.
    public var name: String
    /// The header's value.
    public var value: String
    /// A header from its name and value.
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
