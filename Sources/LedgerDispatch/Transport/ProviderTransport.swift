import Foundation
import LedgerProviders

/// Sends one built provider request and returns what came back. The worker talks HTTP only through
/// this; `LedgerHTTPTransport` implements it with AsyncHTTPClient.
///
/// A transport never retries and never interprets the answer: every status, 4xx and 5xx included,
/// is a ``TransportResponse``; only a request that got no HTTP answer at all is a
/// ``TransportError``. Retrying is the worker's business, by each provider's documented rules.
public protocol ProviderTransport: Sendable {
    /// Sends `request` as built (method, URL, headers, body byte for byte) and waits at most
    /// `timeout` for the whole answer.
    func send(_ request: ProviderRequest, timeout: Duration) async throws(TransportError) -> TransportResponse
}

/// A provider's HTTP answer, as received.
public struct TransportResponse: Sendable, Hashable {
    /// The status, headers and body.
    public var response: ProviderResponse
    /// From the request leaving to the answer complete.
    public var latency: Duration

    /// An answer.
    public init(response: ProviderResponse, latency: Duration) {
        self.response = response
        self.latency = latency
    }
}

/// A request that got no HTTP answer.
public struct TransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Why.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// No answer within the timeout (the request may have arrived).
        case timeout
        /// No connection could be made (nothing arrived).
        case connectionFailed = "connection_failed"
        /// The TLS handshake failed (nothing arrived).
        case tls
        /// The connection broke after the request was sent (it may have arrived).
        case connectionLost = "connection_lost"
        /// The request could not be sent as built (bad URL, refused by policy).
        case invalidRequest = "invalid_request"
        /// The answer was larger than the transport accepts.
        case responseTooLarge = "response_too_large"
    }

    /// Why.
    public var kind: Kind
    /// More words; never a credential.
    public var message: String

    /// An error.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// `kind: message`.
    public var description: String { "\(kind.rawValue): \(message)" }
}
