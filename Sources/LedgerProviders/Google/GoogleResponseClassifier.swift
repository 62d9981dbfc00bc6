import Foundation

/// How long to back off after a transient failure of a Google request, and when to give up.
///
/// The Google App Conversion Tracking API publishes no retry rules; these are the ledger's:
/// exponential backoff with "equal jitter" (half the delay fixed, half scaled by the caller's
/// jitter), so that retries of many devices spread out but none comes back immediately.
public struct GoogleRetryPolicy: Sendable, Hashable, Codable {
    /// The delay before the second attempt (before jitter).
    public var baseDelay: TimeInterval
    /// The ceiling of the delay.
    public var maxDelay: TimeInterval
    /// After this many attempts a transient failure becomes terminal (`google_retries_exhausted`).
    public var maxAttempts: Int

    /// A policy; the defaults give 1–2 s, 2–4 s, … up to an hour, twelve attempts in all.
    public init(baseDelay: TimeInterval = 2, maxDelay: TimeInterval = 3_600, maxAttempts: Int = 12) {
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxAttempts = maxAttempts
    }

    /// The delay after attempt number `attempt` (1-based) failed: `min(maxDelay, baseDelay·2^(attempt−1))`,
    /// of which half is fixed and half multiplied by `jitter` (clamped to 0…1; pass a random
    /// number in production, a constant in tests).
    public func delay(afterAttempt attempt: Int, jitter: Double) -> TimeInterval {
        let exponent = Double(min(max(attempt, 1) - 1, 40))
        let full = min(maxDelay, baseDelay * pow(2, exponent))
        let unit = jitter.isNaN ? 0 : min(max(jitter, 0), 1)
        return full / 2 + full / 2 * unit
    }
}

/// Turns Google's answer (or its absence) into what the send worker should do.
///
/// - 2xx: the conversion was received. With `errors[]` non-empty it failed for good
///   (`google_error_code`, detail the codes as sent: Google's codes are about the request, which
///   a retry would repeat); otherwise it succeeded, attributed or not.
/// - No answer (connection, TLS, timeout), 5xx, 408 and 429: back off and retry
///   (`network_error_backoff`, `http_5xx_backoff`, `http_408_backoff`, `http_429_backoff`), until
///   the policy's attempts are spent (`google_retries_exhausted`).
/// - Other 4xx: terminal, with Google's codes when the body carries them.
public enum GoogleResponseClassifier {
    /// Classifies the answer to a conversion tracking request.
    ///
    /// - Parameters:
    ///   - response: the answer, or `nil` when the transport got none.
    ///   - attempt: the 1-based number of the attempt that produced `response`.
    ///   - now: the current time; `notBefore` is computed from it.
    ///   - jitter: a number in 0…1 (random in production).
    public static func classifyConversion(
        _ response: ProviderResponse?, attempt: Int, now: Date, jitter: Double, policy: GoogleRetryPolicy = GoogleRetryPolicy()
    ) -> SendDisposition {
        classify(response, attempt: attempt, now: now, jitter: jitter, policy: policy, crossNetwork: false)
    }

    /// Classifies the answer to a cross-network attribution request: "A valid cross-network
    /// attribution request will always receive a generic 200 response with no response body", so
    /// any 2xx succeeds unless its body is a Google answer carrying `errors[]`.
    public static func classifyCrossNetwork(
        _ response: ProviderResponse?, attempt: Int, now: Date, jitter: Double, policy: GoogleRetryPolicy = GoogleRetryPolicy()
    ) -> SendDisposition {
        classify(response, attempt: attempt, now: now, jitter: jitter, policy: policy, crossNetwork: true)
    }

    private static func classify(
        _ response: ProviderResponse?, attempt: Int, now: Date, jitter: Double, policy: GoogleRetryPolicy, crossNetwork: Bool
    ) -> SendDisposition {
        func backOff(_ rule: String) -> SendDisposition {
            guard attempt < policy.maxAttempts else {
                return .failed(rule: "google_retries_exhausted", detail: "Gave up after \(attempt) attempts (last: \(rule)).")
            }
            return .retry(notBefore: now.addingTimeInterval(policy.delay(afterAttempt: attempt, jitter: jitter)), rule: rule)
        }
        guard let response else { return backOff("network_error_backoff") }
        switch response.status {
        case 200...299:
            if crossNetwork, isBlank(response.body) { return .succeeded }
            do {
                let answer = try GoogleConversionResponse.parse(response.body)
                if !answer.errors.isEmpty { return errorCodes(answer.errors) }
                return .succeeded
            } catch {
                if crossNetwork { return .succeeded }
                return .failed(rule: "google_malformed_response", detail: error.description)
            }
        case 408, 429:
            return backOff("http_\(response.status)_backoff")
        case 500...599:
            return backOff("http_5xx_backoff")
        case 400...499:
            if let answer = try? GoogleConversionResponse.parse(response.body), !answer.errors.isEmpty {
                return errorCodes(answer.errors)
            }
            return .failed(rule: "google_http_4xx", detail: "HTTP \(response.status)")
        default:
            return .failed(rule: "google_unexpected_status", detail: "HTTP \(response.status)")
        }
    }

    private static func errorCodes(_ codes: [GoogleErrorCode]) -> SendDisposition {
        .failed(rule: "google_error_code", detail: codes.map(\.raw).joined(separator: ","))
    }

    private static func isBlank(_ body: Data) -> Bool {
        body.allSatisfy { [0x20, 0x09, 0x0A, 0x0D].contains($0) }
    }
}
