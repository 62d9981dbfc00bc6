import Foundation
import LedgerProviders
import Testing

/// What the send worker does with Google's answers.
struct GoogleClassifierTests {
    let now = Date(timeIntervalSince1970: 1_700_000_000)

    func answer(_ status: Int, _ body: String = "") -> ProviderResponse {
        ProviderResponse(status: status, body: Data(body.utf8))
    }

    @Test("2xx: negative and affirmative answers succeed (Google App Conversion Tracking API: \"A conversion tracking response will be returned for all conversion tracking requests\")")
    func successes() {
        for body in [GoogleResponseSamples.negativeSample, GoogleResponseSamples.uacSample, GoogleResponseSamples.youTubeSample] {
            #expect(GoogleResponseClassifier.classifyConversion(answer(200, body), attempt: 1, now: now, jitter: 0.5) == .succeeded)
        }
    }

    @Test("errors[] codes are terminal, recorded as sent (the Google App Conversion Tracking API's sample INVALID_CURRENCY_CODE; fact: timestamp_invalid)")
    func errorCodesTerminal() {
        #expect(
            GoogleResponseClassifier.classifyConversion(answer(200, GoogleResponseSamples.errorSample), attempt: 1, now: now, jitter: 0)
                == .failed(rule: "google_error_code", detail: "INVALID_CURRENCY_CODE"))
        let lower = answer(200, #"{"ad_events":[],"errors":["timestamp_invalid","X"],"attributed":false}"#)
        #expect(
            GoogleResponseClassifier.classifyConversion(lower, attempt: 1, now: now, jitter: 0)
                == .failed(rule: "google_error_code", detail: "timestamp_invalid,X"))
        let badRequest = answer(400, #"{"ad_events":[],"errors":["APP_EVENT_NAME_RESERVED_VALUE"],"attributed":false}"#)
        #expect(
            GoogleResponseClassifier.classifyConversion(badRequest, attempt: 1, now: now, jitter: 0)
                == .failed(rule: "google_error_code", detail: "APP_EVENT_NAME_RESERVED_VALUE"))
        #expect(
            GoogleResponseClassifier.classifyConversion(answer(403), attempt: 1, now: now, jitter: 0)
                == .failed(rule: "google_http_4xx", detail: "HTTP 403"))
    }

    @Test("network errors and 5xx back off exponentially; jitter is injected (equal jitter: half fixed)")
    func backoff() {
        // base 2 s: attempt 1 → 1…2 s, attempt 3 → 4…8 s.
        #expect(
            GoogleResponseClassifier.classifyConversion(nil, attempt: 1, now: now, jitter: 0)
                == .retry(notBefore: now.addingTimeInterval(1), rule: "network_error_backoff"))
        #expect(
            GoogleResponseClassifier.classifyConversion(nil, attempt: 1, now: now, jitter: 1)
                == .retry(notBefore: now.addingTimeInterval(2), rule: "network_error_backoff"))
        #expect(
            GoogleResponseClassifier.classifyConversion(answer(503), attempt: 3, now: now, jitter: 0.5)
                == .retry(notBefore: now.addingTimeInterval(6), rule: "http_5xx_backoff"))
        #expect(
            GoogleResponseClassifier.classifyConversion(answer(429), attempt: 2, now: now, jitter: 0)
                == .retry(notBefore: now.addingTimeInterval(2), rule: "http_429_backoff"))
        let policy = GoogleRetryPolicy(baseDelay: 2, maxDelay: 60, maxAttempts: 50)
        #expect(policy.delay(afterAttempt: 40, jitter: 1) == 60)
        #expect(policy.delay(afterAttempt: 0, jitter: .nan) == 1)
        #expect(policy.delay(afterAttempt: 1, jitter: 7) == 2)
        #expect(
            GoogleResponseClassifier.classifyConversion(answer(500), attempt: 12, now: now, jitter: 0)
                == .failed(rule: "google_retries_exhausted", detail: "Gave up after 12 attempts (last: http_5xx_backoff)."))
    }

    @Test("a 2xx that is not the documented answer is terminal (resending would repeat the conversion)")
    func malformedSuccess() {
        let disposition = GoogleResponseClassifier.classifyConversion(answer(200, "<html>"), attempt: 1, now: now, jitter: 0)
        guard case .failed(let rule, _) = disposition else {
            Issue.record("expected failed, got \(disposition)")
            return
        }
        #expect(rule == "google_malformed_response")
        #expect(
            GoogleResponseClassifier.classifyConversion(answer(302), attempt: 1, now: now, jitter: 0)
                == .failed(rule: "google_unexpected_status", detail: "HTTP 302"))
    }

    @Test("Google App Conversion Tracking API cross-network: \"a generic 200 response with no response body\" succeeds")
    func crossNetwork() {
        #expect(GoogleResponseClassifier.classifyCrossNetwork(answer(200), attempt: 1, now: now, jitter: 0) == .succeeded)
        #expect(GoogleResponseClassifier.classifyCrossNetwork(answer(200, " \n"), attempt: 1, now: now, jitter: 0) == .succeeded)
        #expect(GoogleResponseClassifier.classifyCrossNetwork(answer(204, "ok"), attempt: 1, now: now, jitter: 0) == .succeeded)
        #expect(
            GoogleResponseClassifier.classifyCrossNetwork(answer(200, GoogleResponseSamples.errorSample), attempt: 1, now: now, jitter: 0)
                == .failed(rule: "google_error_code", detail: "INVALID_CURRENCY_CODE"))
        #expect(
            GoogleResponseClassifier.classifyCrossNetwork(answer(502), attempt: 1, now: now, jitter: 0)
                == .retry(notBefore: now.addingTimeInterval(1), rule: "http_5xx_backoff"))
    }
}
