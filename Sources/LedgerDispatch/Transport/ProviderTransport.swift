import Foundation
import LedgerProviders

/// Sends one built provider request and returns what came back. The worker talks HTTP only through
/// this; `LedgerHTTPTransport` implements it with AsyncHTTPClient.
///
/// A transport never retries and never interprets the answer: every status, 4xx and 5xx included,
/// is a ``TransportResponse``; only a request that got no HTTP answer at all is a
/// ``DispatchError``. Retrying is the worker's business, by each provider's documented rules.
public protocol ProviderTransport: Sendable {
    /// Sends `request` as built (method, URL, headers, body byte for byte) and waits at most
    /// `timeout` for the whole answer.
    func send(_ request: ProviderRequest, timeout: Duration) async throws(DispatchError) -> TransportResponse
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

/// The dispatch layer's one error: a send whose request cannot be built (recorded as `SendFailed`
/// with its rule), a provider configuration the worker cannot start with, or a request that got no
/// HTTP answer. Never holds a credential.
public struct DispatchError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong. Opaque, as postgres-nio's `PSQLError.Code`: a new code does not break a
    /// client's `switch`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        /// The code's name (`connection_lost`), bounded: usable as a metric label.
        public let description: String
        private init(_ description: String) { self.description = description }

        /// The send's request cannot be built (``DispatchError/rule`` says why); an environment
        /// variable (``DispatchError/variable``) the worker cannot start with.
        public static let unbuildable = Code("unbuildable"), invalidConfiguration = Code("invalid_configuration")
        /// No HTTP answer: none within the timeout (the request may have arrived); no connection
        /// could be made, or the TLS handshake failed (nothing arrived).
        public static let timeout = Code("timeout"), connectionFailed = Code("connection_failed"), tls = Code("tls")
        /// No HTTP answer: the connection broke after the request was sent (it may have arrived);
        /// the request could not be sent as built (bad URL, refused by policy); the answer was
        /// larger than the transport accepts.
        public static let connectionLost = Code("connection_lost"), invalidRequest = Code("invalid_request"),
                          responseTooLarge = Code("response_too_large")
    }

    /// What went wrong.
    public var code: Code
    /// A stable rule id (`cause_not_supported`, `google_invalid_request`, `https_only`, …); the
    /// code's name for a transport failure.
    public var rule: String
    /// More words, naming the field (never a credential, nor a configuration value).
    public var detail: String
    /// The environment variable, for ``Code/invalidConfiguration``.
    public var variable: String?

    /// A transport failure: a request that got no HTTP answer.
    public init(_ code: Code, _ detail: String) { self.init(code: code, rule: code.description, detail: detail) }

    private init(code: Code, rule: String, detail: String, variable: String? = nil) {
        (self.code, self.rule, self.detail, self.variable) = (code, rule, detail, variable)
    }

    /// A send whose request cannot be built, by `rule`.
    public static func unbuildable(rule: String, detail: String) -> DispatchError {
        DispatchError(code: .unbuildable, rule: rule, detail: detail)
    }

    /// A configuration `variable` that breaks `rule`; `message` never quotes the value.
    public static func invalidConfiguration(variable: String, rule: String, message: String) -> DispatchError {
        DispatchError(code: .invalidConfiguration, rule: rule, detail: message, variable: variable)
    }

    /// `VARIABLE: message [rule]` for a configuration, else `rule: detail` (the rule of a transport
    /// failure being its code).
    public var description: String { variable.map { "\($0): \(detail) [\(rule)]" } ?? "\(rule): \(detail)" }
}
