import Foundation

/// The providers the ledger talks to.
public enum Provider: String, Sendable, Hashable, Codable, CaseIterable {
    case google
    case appleAdServices = "apple_adservices"
    case appleIAd = "apple_iad"
    case branch
    case singular
}

/// One HTTP request to a provider, built purely (no I/O) by a provider's request builder.
///
/// The transport sends it as is; the ledger stores ``redacted()`` — never the request itself —
/// because a request may carry credentials (Google `dev_token`, Branch `branch_key` /
/// `branch_secret`, Singular `a`).
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

    public var provider: Provider
    public var method: Method
    /// `https` for every provider; `http` only when a test points a builder at loopback.
    public var scheme: String
    public var host: String
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
                guard let body = copy.body,
                    var object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any],
                    object[key] != nil
                else { continue }
                object[key] = Self.redactedMarker
                copy.body = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            }
        }
        return copy
    }
}

/// One query parameter.
public struct QueryItem: Sendable, Hashable, Codable {
    public var name: String
    public var value: String
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
    public var name: String
    public var value: String
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
