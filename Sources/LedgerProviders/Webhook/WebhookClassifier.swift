import Foundation

/// Judges a webhook receiver's answer, as Stripe, GitHub and Svix receivers expect (docs/webhooks.md,
/// "Retries"): pure, the time from the caller.
///
/// - 2xx: delivered (`succeeded`).
/// - 408, 429, 5xx, a timeout or a connection failure: retried after ``WebhookRetryPolicy/baseDelay``
///   doubling per call (at most ``WebhookRetryPolicy/maxDelay``), or at the receiver's
///   `Retry-After` when that is later; failed for good once ``WebhookRetryPolicy/maxAttempts``
///   calls were made (`webhook_attempts_exhausted`) or the retry would be due more than
///   ``WebhookRetryPolicy/maxAge`` after the event (`webhook_age_exhausted`).
/// - Any other status (other 4xx, 1xx, 3xx: redirects are not followed): failed for good
///   (`webhook_http_4xx`, `webhook_unexpected_status`).
public enum WebhookClassifier {
    /// What came back from one call.
    public enum Answer: Sendable, Hashable {
        /// The receiver answered.
        case response(ProviderResponse)
        /// No answer in time.
        case timedOut
        /// The connection failed.
        case transportFailed
    }

    /// Classifies call number `call` (from 1) of a delivery of an event recorded at `eventRecordedAt`.
    public static func classify(_ answer: Answer, call: Int, eventRecordedAt: Date, now: Date,
                                policy: WebhookRetryPolicy) -> SendDisposition {
        switch answer {
        case .timedOut:
            return retry("webhook_timeout_retry", call: call, eventRecordedAt: eventRecordedAt, now: now, policy: policy, retryAfter: nil)
        case .transportFailed:
            return retry("webhook_transport_retry", call: call, eventRecordedAt: eventRecordedAt, now: now, policy: policy, retryAfter: nil)
        case .response(let response):
            switch response.status {
            case 200...299:
                return .succeeded
            case 408, 429, 500...599:
                let retryAfter = BranchSingularHTTP.retryAfter(response.headerValue("Retry-After"), now: now, maxDelay: policy.maxRetryAfter)
                let rule = response.status == 429 ? "webhook_429_backoff" : response.status == 408 ? "webhook_408_retry" : "webhook_5xx_retry"
                return retry(rule, call: call, eventRecordedAt: eventRecordedAt, now: now, policy: policy, retryAfter: retryAfter)
            case 400...499:
                return .failed(rule: "webhook_http_4xx", detail: "HTTP \(response.status): the receiver refused the delivery.")
            default:
                return .failed(rule: "webhook_unexpected_status",
                               detail: "HTTP \(response.status): a receiver answers 2xx to accept (redirects are not followed).")
            }
        }
    }

    private static func retry(_ rule: String, call: Int, eventRecordedAt: Date, now: Date, policy: WebhookRetryPolicy,
                              retryAfter: Date?) -> SendDisposition {
        guard call < policy.maxAttempts else {
            return .failed(rule: "webhook_attempts_exhausted", detail: "\(rule) after \(call) calls (max_attempts \(policy.maxAttempts)).")
        }
        let backoff = now.addingTimeInterval(Backoff.exponential(attempt: call, base: policy.baseDelay, cap: policy.maxDelay))
        let due = max(backoff, retryAfter ?? backoff)
        guard due <= eventRecordedAt.addingTimeInterval(policy.maxAge) else {
            return .failed(rule: "webhook_age_exhausted",
                           detail: "\(rule), but the next call would come more than max_age_seconds \(Int(policy.maxAge)) after the event.")
        }
        return .retry(notBefore: due, rule: rule)
    }
}
