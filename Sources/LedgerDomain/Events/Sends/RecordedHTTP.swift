import Foundation

/// One HTTP header as sent or received.
public struct HTTPHeader: Codable, Sendable, Hashable {
    /// The header name, as written (`User-Agent`).
    public var name: String
    /// The header value.
    public var value: String

    /// Creates a header.
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }

    func validate(at path: String) throws(RuleViolation) {
        let validName = !name.isEmpty && name.count <= 256 && name.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && scalar.value > 32 && scalar.value < 127 && scalar != ":"
        }
        guard validName else {
            throw RuleViolation(
                field: FieldPath.join(path, "name"), rule: "header_name",
                message: "A header name is 1–256 visible ASCII characters without ':'.")
        }
        if value.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\u{0}" }) {
            throw RuleViolation(
                field: FieldPath.join(path, "value"), rule: "header_value", message: "A header value holds no CR, LF or NUL.")
        }
    }
}

/// A request or response body, byte for byte: as UTF-8 text when it is text (readable in the
/// database), as Base64 otherwise (and whenever it holds U+0000, which `jsonb` cannot store).
public struct RecordedBody: Codable, Sendable, Hashable {
    /// How ``content`` holds the bytes.
    public enum Encoding: String, LedgerEnum {
        /// `content` is the body's text.
        case utf8
        /// `content` is the body in standard Base64.
        case base64
    }

    /// How the content is written.
    public var encoding: Encoding
    /// The body.
    public var content: String

    /// Records `bytes`: as text when they are UTF-8 without NUL, else as Base64.
    public init(bytes: Data) {
        if let text = String(validating: bytes, as: UTF8.self), !text.unicodeScalars.contains("\u{0}") {
            encoding = .utf8
            content = text
        } else {
            encoding = .base64
            content = bytes.base64EncodedString()
        }
    }

    /// A body with the given encoding and content.
    public init(encoding: Encoding, content: String) {
        self.encoding = encoding
        self.content = content
    }

    /// The body's bytes (`nil` when Base64 content does not decode).
    public var bytes: Data? {
        switch encoding {
        case .utf8: Data(content.utf8)
        case .base64: Data(base64Encoded: content)
        }
    }

    func validate(at path: String) throws(RuleViolation) {
        if encoding == .base64, Data(base64Encoded: content) == nil {
            throw RuleViolation(field: FieldPath.join(path, "content"), rule: "base64", message: "The content is not valid Base64.")
        }
    }
}

/// An HTTP request as the worker sent it, with every credential replaced by
/// ``redactedMarker``. Secrets never enter the ledger.
public struct RecordedRequest: Codable, Sendable, Hashable {
    /// The text that stands in for a credential's value.
    public static let redactedMarker = "REDACTED"
    /// Query parameters that carry credentials: Google `dev_token`, Singular `a` (SDK key).
    public static let credentialQueryParameters: Set<String> = ["dev_token", "a"]
    /// JSON body keys that carry credentials: Branch `branch_key`, `branch_secret`.
    public static let credentialBodyKeys: Set<String> = ["branch_key", "branch_secret"]
    /// Headers that carry credentials (or, as a webhook's `Ledger-Signature`, a value derived
    /// from one that a stored request has no use for).
    public static let credentialHeaders: Set<String> = ["authorization", "proxy-authorization", "cookie", "ledger-signature"]

    /// The method, uppercase (`GET`, `POST`).
    public var method: String
    /// The full URL with its query (credentials redacted). Required at append time. Personal:
    /// Google's query holds the advertising id.
    public var url: String?
    /// The headers in the order sent. Required at append time (may be empty). Personal: they
    /// hold the user agent and the device's IP.
    public var headers: [HTTPHeader]?
    /// The body, if any (credentials redacted). Personal: Branch's body holds device ids.
    public var body: RecordedBody?

    /// Paths of the personal fields, relative to this object.
    public static let personalFields = ["url", "headers", "body"]

    /// Creates a recorded request.
    public init(method: String, url: String?, headers: [HTTPHeader]?, body: RecordedBody? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    func validate(at path: String) throws(RuleViolation) {
        func field(_ name: String) -> String { FieldPath.join(path, name) }
        let validMethod = !method.isEmpty && method.count <= 16 && method.unicodeScalars.allSatisfy { ("A"..."Z").contains($0) }
        guard validMethod else {
            throw RuleViolation(field: field("method"), rule: "http_method", message: "The method is an uppercase HTTP method.")
        }
        let url = try Check.required(url, field("url"))
        try Check.text(url, field("url"), max: Check.longText)
        guard let components = URLComponents(string: url), ["http", "https"].contains(components.scheme?.lowercased()),
            components.host?.isEmpty == false
        else {
            throw RuleViolation(field: field("url"), rule: "http_url", message: "The URL is an absolute http or https URL.")
        }
        for item in components.queryItems ?? [] where Self.credentialQueryParameters.contains(item.name) {
            try Self.requireRedacted(item.value, field("url"), what: "query parameter '\(item.name)'")
        }
        let headers = try Check.required(headers, field("headers"))
        for (index, header) in headers.enumerated() {
            let headerPath = FieldPath.index(field("headers"), index)
            try header.validate(at: headerPath)
            if Self.credentialHeaders.contains(header.name.lowercased()) {
                try Self.requireRedacted(header.value, FieldPath.join(headerPath, "value"), what: "header '\(header.name)'")
            }
        }
        if let body {
            try body.validate(at: field("body"))
            if body.encoding == .utf8, let object = try? JSONSerialization.jsonObject(with: Data(body.content.utf8)) as? [String: Any] {
                for key in Self.credentialBodyKeys where object[key] != nil {
                    try Self.requireRedacted(object[key] as? String, field("body"), what: "body key '\(key)'")
                }
            }
        }
    }

    private static func requireRedacted(_ value: String?, _ field: String, what: String) throws(RuleViolation) {
        guard value == redactedMarker else {
            throw RuleViolation(
                field: field, rule: "credential_not_redacted",
                message: "The \(what) carries a credential; only '\(redactedMarker)' may be recorded in its place.")
        }
    }
}
