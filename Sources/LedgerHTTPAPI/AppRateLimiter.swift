import Foundation
import HTTPTypes
import LedgerDomain
import Synchronization

/// A token bucket per app: each request takes a token; tokens come back at
/// ``HTTPRateLimit/requestsPerSecond`` up to ``HTTPRateLimit/burst``. The apps are the configured
/// ones, so the table stays as small as the key configuration.
final class AppRateLimiter: Sendable {
    /// One app's bucket.
    struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant

        /// Refills the bucket up to `now`, then takes a token if there is one.
        /// - Returns: nil when a token was taken, or how long until the next one.
        mutating func take(at now: ContinuousClock.Instant, limit: HTTPRateLimit) -> Duration? {
            let elapsed = now - updated
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            tokens = min(Double(limit.burst), tokens + max(0, seconds) * limit.requestsPerSecond)
            updated = now
            if tokens >= 1 {
                tokens -= 1
                return nil
            }
            return .seconds((1 - tokens) / limit.requestsPerSecond)
        }
    }

    /// The limit.
    let limit: HTTPRateLimit
    private let buckets = Mutex<[AppID: Bucket]>([:])

    init(limit: HTTPRateLimit) {
        self.limit = limit
    }

    /// Takes a token from `app`'s bucket.
    /// - Throws: a 429 ``APIError`` with `Retry-After` (whole seconds, at least 1) when the
    ///   bucket is empty.
    func admit(_ app: AppID, now: ContinuousClock.Instant = .now) throws(APIError) {
        let limit = limit
        let wait = buckets.withLock { buckets in
            var bucket = buckets[app] ?? Bucket(tokens: Double(limit.burst), updated: now)
            defer { buckets[app] = bucket }
            return bucket.take(at: now, limit: limit)
        }
        guard let wait else { return }
        throw APIError.rateLimited(retryAfter: wait, limit: limit)
    }
}

extension APIError {
    /// 429 for an app over its rate limit, with `Retry-After`.
    static func rateLimited(retryAfter wait: Duration, limit: HTTPRateLimit) -> APIError {
        let seconds = retryAfterSeconds(wait)
        let perSecond = limit.requestsPerSecond
        let rate = perSecond < 1e15 && perSecond.rounded() == perSecond ? String(Int64(perSecond)) : String(perSecond)
        var refusal = APIError(.tooManyRequests, code: .rateLimited, rule: "app_rate_limit",
                               message: "This app sent more requests than the server takes (\(rate) per second, bursts of "
                                   + "\(limit.burst)); retry after the seconds Retry-After gives.")
        refusal.headers[.retryAfter] = String(seconds)
        return refusal
    }

    /// `Retry-After` for a wait: whole seconds, rounded up, at least 1.
    static func retryAfterSeconds(_ wait: Duration) -> Int {
        let seconds = Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18
        return max(1, Int(min(seconds, 86_400).rounded(.up)))
    }
}
