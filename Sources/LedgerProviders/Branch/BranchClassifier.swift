import Foundation

/// How persistently to retry Branch sends. Defaults follow Branch's own SDKs, which retry 5xx and
/// timeouts three times but never 4xx, and the Branch v1/open server-to-server guide's advice for
/// 429 ("wait a few minutes").
public struct BranchRetryPolicy: Sendable, Hashable, Codable {
    /// Retries after a 5xx, timeout or transport failure (the SDKs' 3).
    public var maxRetries: Int
    /// First back-off after a 5xx or timeout; doubled for each further attempt.
    public var baseDelay: TimeInterval
    /// Cap of the 5xx / timeout back-off.
    public var maxDelay: TimeInterval
    /// Back-off after a 429 without `Retry-After`, multiplied by the attempt number ("minutes").
    public var rateLimitDelay: TimeInterval
    /// Cap of the 429 back-off.
    public var maxRateLimitDelay: TimeInterval
    /// Retries after 429s before giving up, so a misbehaving device cannot loop for ever.
    public var maxRateLimitRetries: Int
    /// The longest wait a `Retry-After` header may ask for; longer asks are cut to this.
    public var maxRetryAfter: TimeInterval

    /// Creates a policy.
    public init(
        maxRetries: Int = 3, baseDelay: TimeInterval = 2, maxDelay: TimeInterval = 60,
        rateLimitDelay: TimeInterval = 300, maxRateLimitDelay: TimeInterval = 3600,
        maxRateLimitRetries: Int = 6, maxRetryAfter: TimeInterval = 86_400
    ) {
        self.maxRetries = maxRetries
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.rateLimitDelay = rateLimitDelay
        self.maxRateLimitDelay = maxRateLimitDelay
        self.maxRateLimitRetries = maxRateLimitRetries
        self.maxRetryAfter = maxRetryAfter
    }

    /// The default policy.
    public static let `default` = BranchRetryPolicy()
}

/// Decides what the send worker does after a `v1/open` attempt. Pure: `now` comes from the caller.
///
/// - 2xx: ``SendDisposition/succeeded`` (Branch "will always return a 200"; the open is counted even
///   if the body later fails to parse, so it must not be sent again).
/// - 429: retry after `Retry-After` (seconds or HTTP-date) if present, else after
///   `rateLimitDelay × n` for the send's n-th 429 — "please wait a few minutes" (Branch v1/open
///   server-to-server guide, rate limits) — at most `maxRateLimitRetries` times.
/// - 5xx, timeouts, transport failures: retry with exponential back-off, at most `maxRetries`
///   times (a 503's `Retry-After` is honoured when later).
///
/// The two are counted apart: a 429 says the opens came too fast, not that Branch failed, so
/// 429s never use up the retries Branch's SDKs give server errors, and server errors never use
/// up the 429 back-off. Each count needs how many of the send's earlier answers were 429s
/// (`rateLimitedBefore`).
/// - Any other status (4xx, 1xx, 3xx): ``SendDisposition/failed(rule:detail:)``.
public enum BranchClassifier {
    /// What came back from one attempt.
    public enum Answer: Sendable, Hashable {
        /// Branch answered.
        case response(ProviderResponse)
        /// No answer in time.
        case timedOut
        /// The connection failed (DNS, refused, reset, TLS); `detail` is for people.
        case transportFailed(detail: String)
    }

    /// Classifies attempt number `attempt` (1 for the first send) that ended with `answer` at `now`.
    /// `rateLimitedBefore` is how many of the send's earlier attempts Branch answered 429; `nil`
    /// when unknown, and then every earlier attempt counts against both limits (the cautious
    /// reading). The detail of a failure holds the status only: an error body could echo the
    /// request and with it `branch_secret`.
    public static func classify(
        _ answer: Answer, attempt: Int, rateLimitedBefore: Int? = nil, now: Date, policy: BranchRetryPolicy = .default
    ) -> SendDisposition {
        let attempt = max(1, attempt)
        let earlier429s = min(max(0, rateLimitedBefore ?? 0), attempt - 1)
        // This attempt's number among the send's 429s, and among its other failures.
        let rateLimited = rateLimitedBefore == nil ? attempt : earlier429s + 1
        let failure = attempt - earlier429s
        switch answer {
        case .timedOut:
            return retryOrGiveUp("branch_timeout_retry", attempt: failure, now: now, policy: policy, retryAfter: nil)
        case .transportFailed:
            return retryOrGiveUp("branch_transport_retry", attempt: failure, now: now, policy: policy, retryAfter: nil)
        case .response(let response):
            let retryAfter = BranchSingularHTTP.retryAfter(
                response.headerValue("Retry-After"), now: now, maxDelay: policy.maxRetryAfter)
            switch response.status {
            case 200...299:
                return .succeeded
            case 429:
                guard rateLimited <= policy.maxRateLimitRetries else {
                    return .failed(
                        rule: "branch_429_exhausted",
                        detail: "HTTP 429 \(rateLimited) times: Branch kept rate limiting this device.")
                }
                let fallback = min(policy.maxRateLimitDelay, policy.rateLimitDelay * Double(rateLimited))
                return .retry(notBefore: retryAfter ?? now.addingTimeInterval(fallback), rule: "branch_429_backoff")
            case 500...599:
                return retryOrGiveUp(
                    "branch_5xx_retry", attempt: failure, now: now, policy: policy, retryAfter: retryAfter,
                    status: response.status)
            case 400...499:
                return .failed(rule: "branch_http_4xx", detail: "HTTP \(response.status): Branch refused the open; not retried.")
            default:
                return .failed(rule: "branch_unexpected_status", detail: "HTTP \(response.status) is not in Branch's protocol.")
            }
        }
    }

    private static func retryOrGiveUp(
        _ rule: String, attempt: Int, now: Date, policy: BranchRetryPolicy, retryAfter: Date?, status: Int? = nil
    ) -> SendDisposition {
        guard attempt <= policy.maxRetries else {
            let what = status.map { "HTTP \($0)" } ?? rule
            return .failed(rule: "branch_retries_exhausted", detail: "\(what) after \(attempt) failed attempts.")
        }
        let backoff = now.addingTimeInterval(
            Backoff.exponential(attempt: attempt, base: policy.baseDelay, cap: policy.maxDelay))
        return .retry(notBefore: max(backoff, retryAfter ?? backoff), rule: rule)
    }
}
