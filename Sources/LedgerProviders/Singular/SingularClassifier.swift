import Foundation

/// How persistently to retry Singular sends. The Singular SKAdNetwork 4 implementation guide gives
/// no retry rule; these defaults mirror Branch's (three retries with exponential back-off), which
/// matches Singular's general S2S advice of exponential back-off with a few attempts.
public struct SingularRetryPolicy: Sendable, Hashable, Codable {
    /// Retries after a 5xx, 429, timeout or transport failure.
    public var maxRetries: Int
    /// First back-off; doubled for each further attempt.
    public var baseDelay: TimeInterval
    /// Cap of the back-off.
    public var maxDelay: TimeInterval
    /// The longest wait a `Retry-After` header may ask for.
    public var maxRetryAfter: TimeInterval

    /// Creates a policy.
    public init(maxRetries: Int = 3, baseDelay: TimeInterval = 2, maxDelay: TimeInterval = 60, maxRetryAfter: TimeInterval = 86_400) {
        self.maxRetries = maxRetries
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxRetryAfter = maxRetryAfter
    }

    /// The default policy.
    public static let `default` = SingularRetryPolicy()
}

/// Decides what the send worker does after a conversion value attempt. Pure: `now` comes from the
/// caller.
///
/// - 2xx: the body decides. `status` `"ok"` or a new value → ``SendDisposition/succeeded``; an
///   error `status` → ``SendDisposition/failed(rule:detail:)`` with rule `singular_<kind>` (e.g.
///   `singular_update_window_closed`) and the reason text; an unreadable body or illegal values →
///   failed, `singular_malformed_response` (the snippet reports "Failed parsing server response" /
///   "Illegal values" and does not retry).
/// - 429, 5xx, timeouts, transport failures: retry with exponential back-off (honouring
///   `Retry-After`), at most `maxRetries` times.
/// - Any other status: failed.
public enum SingularClassifier {
    /// What came back from one attempt.
    public enum Answer: Sendable, Hashable {
        /// Singular answered.
        case response(ProviderResponse)
        /// No answer in time.
        case timedOut
        /// The connection failed; `detail` is for people.
        case transportFailed(detail: String)
    }

    /// Classifies attempt number `attempt` (1 for the first send) that ended with `answer` at `now`.
    public static func classify(
        _ answer: Answer, attempt: Int, now: Date, policy: SingularRetryPolicy = .default
    ) -> SendDisposition {
        let attempt = max(1, attempt)
        switch answer {
        case .timedOut:
            return retry("singular_timeout_retry", attempt: attempt, now: now, policy: policy, retryAfter: nil)
        case .transportFailed:
            return retry("singular_transport_retry", attempt: attempt, now: now, policy: policy, retryAfter: nil)
        case .response(let response):
            let retryAfter = BranchSingularHTTP.retryAfter(response.headerValue("Retry-After"), now: now, maxDelay: policy.maxRetryAfter)
            switch response.status {
            case 200...299:
                do {
                    switch try SingularConversionValueResponse.parse(response.body).outcome {
                    case .update, .noUpdate: return .succeeded
                    case .rejected(let reason): return .failed(rule: "singular_\(reason.kind.rawValue)", detail: reason.text)
                    }
                } catch {
                    return .failed(rule: "singular_malformed_response", detail: error.description)
                }
            case 429:
                return retry("singular_429_backoff", attempt: attempt, now: now, policy: policy, retryAfter: retryAfter)
            case 500...599:
                return retry("singular_5xx_retry", attempt: attempt, now: now, policy: policy, retryAfter: retryAfter)
            case 400...499:
                return .failed(rule: "singular_http_4xx", detail: "HTTP \(response.status): Singular refused the request.")
            default:
                return .failed(rule: "singular_unexpected_status", detail: "HTTP \(response.status) is not in Singular's protocol.")
            }
        }
    }

    private static func retry(
        _ rule: String, attempt: Int, now: Date, policy: SingularRetryPolicy, retryAfter: Date?
    ) -> SendDisposition {
        guard attempt <= policy.maxRetries else {
            return .failed(rule: "singular_retries_exhausted", detail: "\(rule) after \(attempt) attempts.")
        }
        let backoff = now.addingTimeInterval(Backoff.exponential(attempt: attempt, base: policy.baseDelay, cap: policy.maxDelay))
        return .retry(notBefore: max(backoff, retryAfter ?? backoff), rule: rule)
    }
}
