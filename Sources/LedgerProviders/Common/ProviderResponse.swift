import Foundation

/// A provider's HTTP answer as received, the input of every response classifier and parser.
public struct ProviderResponse: Sendable, Hashable, Codable {
    public var status: Int
    public var headers: [Header]
    public var body: Data

    public init(status: Int, headers: [Header] = [], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The value of the first header with this name (case-insensitive).
    public func headerValue(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// What the send worker should do with a send after an answer (or a failure to get one), as a
/// provider's document rules. Pure: every time-dependent rule gets `now` from the caller.
public enum SendDisposition: Sendable, Hashable, Codable {
    /// The provider answered conclusively; the send is done.
    case succeeded
    /// Try again, no earlier than `notBefore`. `rule` is a short stable identifier
    /// (e.g. `adservices_404_retry_5s`, `branch_429_backoff`, `http_5xx_backoff`).
    case retry(notBefore: Date, rule: String)
    /// Stop: the send will never succeed. `rule` names why (e.g. `adservices_400_invalid_token`,
    /// `adservices_token_expired`, `google_error_code`).
    case failed(rule: String, detail: String)
}
