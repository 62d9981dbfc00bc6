import Foundation
import Testing

@testable import LedgerProviders

@Suite("Branch classifier, Retry-After and IP validator")
struct BranchClassifierTests {
    static func answer(_ status: Int, _ headers: [Header] = []) -> BranchClassifier.Answer {
        .response(ProviderResponse(status: status, headers: headers, body: Data(#"{"session_id":"1"}"#.utf8)))
    }

    // Branch v1/open server-to-server guide: "the API will always return a 200 response".
    @Test func status200Succeeds() {
        #expect(BranchClassifier.classify(Self.answer(200), attempt: 1, now: testNow) == .succeeded)
    }

    // Branch v1/open server-to-server guide, "Rate limits on high-frequency pings": 429 → "wait a
    // few minutes".
    @Test func status429BacksOffMinutes() {
        let disposition = BranchClassifier.classify(Self.answer(429), attempt: 1, now: testNow)
        #expect(disposition == .retry(notBefore: testNow.addingTimeInterval(300), rule: "branch_429_backoff"))
        let second = BranchClassifier.classify(Self.answer(429), attempt: 2, now: testNow)
        #expect(second == .retry(notBefore: testNow.addingTimeInterval(600), rule: "branch_429_backoff"))
        if case .failed(let rule, _) = BranchClassifier.classify(Self.answer(429), attempt: 7, now: testNow) {
            #expect(rule == "branch_429_exhausted")
        } else {
            Issue.record("429 must stop after maxRateLimitRetries")
        }
    }

    // Facts beyond the providers' documents: 429 honours Retry-After, in seconds or as an
    // HTTP-date.
    @Test func status429HonoursRetryAfter() {
        let seconds = BranchClassifier.classify(Self.answer(429, [Header("Retry-After", "120")]), attempt: 1, now: testNow)
        #expect(seconds == .retry(notBefore: testNow.addingTimeInterval(120), rule: "branch_429_backoff"))
        // 1_700_000_000 is Tue, 14 Nov 2023 22:13:20 GMT.
        let date = BranchClassifier.classify(
            Self.answer(429, [Header("retry-after", "Tue, 14 Nov 2023 22:23:20 GMT")]), attempt: 1, now: testNow)
        #expect(date == .retry(notBefore: testNow.addingTimeInterval(600), rule: "branch_429_backoff"))
        let past = BranchClassifier.classify(
            Self.answer(429, [Header("Retry-After", "Sun, 06 Nov 1994 08:49:37 GMT")]), attempt: 1, now: testNow)
        #expect(past == .retry(notBefore: testNow, rule: "branch_429_backoff"))
        let garbage = BranchClassifier.classify(Self.answer(429, [Header("Retry-After", "soon")]), attempt: 1, now: testNow)
        #expect(garbage == .retry(notBefore: testNow.addingTimeInterval(300), rule: "branch_429_backoff"))
        let huge = BranchClassifier.classify(
            Self.answer(429, [Header("Retry-After", "99999999999999999999")]), attempt: 1, now: testNow)
        #expect(huge == .retry(notBefore: testNow.addingTimeInterval(86_400), rule: "branch_429_backoff"))
    }

    // Facts beyond the providers' documents: Branch SDKs retry 5xx and timeouts 3 times, with
    // back-off, never 4xx.
    @Test func serverErrorsAndTimeoutsRetryThreeTimes() {
        for (answer, rule) in [
            (Self.answer(500), "branch_5xx_retry"), (Self.answer(503), "branch_5xx_retry"),
            (BranchClassifier.Answer.timedOut, "branch_timeout_retry"),
            (.transportFailed(detail: "connection reset"), "branch_transport_retry"),
        ] {
            #expect(BranchClassifier.classify(answer, attempt: 1, now: testNow) == .retry(notBefore: testNow.addingTimeInterval(2), rule: rule))
            #expect(BranchClassifier.classify(answer, attempt: 2, now: testNow) == .retry(notBefore: testNow.addingTimeInterval(4), rule: rule))
            #expect(BranchClassifier.classify(answer, attempt: 3, now: testNow) == .retry(notBefore: testNow.addingTimeInterval(8), rule: rule))
            guard case .failed(let failed, _) = BranchClassifier.classify(answer, attempt: 4, now: testNow) else {
                Issue.record("the fourth failure must be terminal")
                continue
            }
            #expect(failed == "branch_retries_exhausted")
        }
        let slow = BranchClassifier.classify(Self.answer(503, [Header("Retry-After", "30")]), attempt: 1, now: testNow)
        #expect(slow == .retry(notBefore: testNow.addingTimeInterval(30), rule: "branch_5xx_retry"))
    }

    // Branch v1/open server-to-server guide: a 429 is about opens "in rapid succession", not a
    // failure; Branch's SDKs' three 5xx retries and the 429 back-off each count only their own
    // answers (`rateLimitedBefore`: the send's earlier 429s).
    @Test func rateLimitsAndServerErrorsAreCountedApart() {
        // The fourth call, after three 429s, is the first server error: its first retry.
        #expect(BranchClassifier.classify(Self.answer(500), attempt: 4, rateLimitedBefore: 3, now: testNow)
                == .retry(notBefore: testNow.addingTimeInterval(2), rule: "branch_5xx_retry"))
        #expect(BranchClassifier.classify(.timedOut, attempt: 7, rateLimitedBefore: 4, now: testNow)
                == .retry(notBefore: testNow.addingTimeInterval(8), rule: "branch_timeout_retry"))
        // The fifth call, after three server errors and one 429, is the second 429: 10 minutes.
        #expect(BranchClassifier.classify(Self.answer(429), attempt: 5, rateLimitedBefore: 1, now: testNow)
                == .retry(notBefore: testNow.addingTimeInterval(600), rule: "branch_429_backoff"))
        // A fourth server error is still the last, whatever 429s came between.
        guard case .failed(let rule, _) = BranchClassifier.classify(Self.answer(502), attempt: 6, rateLimitedBefore: 2, now: testNow)
        else {
            Issue.record("the fourth server error must be terminal")
            return
        }
        #expect(rule == "branch_retries_exhausted")
    }

    // Other 4xx are terminal; the detail never carries the body (it could echo branch_secret).
    @Test func otherClientErrorsAreTerminal() {
        for status in [400, 401, 403, 404, 409, 422] {
            let disposition = BranchClassifier.classify(Self.answer(status), attempt: 1, now: testNow)
            #expect(disposition == .failed(rule: "branch_http_4xx", detail: "HTTP \(status): Branch refused the open; not retried."))
        }
        guard case .failed(let rule, _) = BranchClassifier.classify(Self.answer(302), attempt: 1, now: testNow) else {
            Issue.record("3xx must be terminal")
            return
        }
        #expect(rule == "branch_unexpected_status")
    }

    // RFC 9110 HTTP-date forms accepted by Retry-After.
    @Test func httpDateForms() {
        let expected = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT
        #expect(BranchSingularHTTP.parseHTTPDate("Sun, 06 Nov 1994 08:49:37 GMT") == expected)
        #expect(BranchSingularHTTP.parseHTTPDate("Sunday, 06-Nov-94 08:49:37 GMT") == expected)
        #expect(BranchSingularHTTP.parseHTTPDate("Sun Nov  6 08:49:37 1994") == expected)
        #expect(BranchSingularHTTP.parseHTTPDate("Sun, 31 Feb 1994 08:49:37 GMT") == nil)
        #expect(BranchSingularHTTP.parseHTTPDate("Sun, 06 Nov 1994 25:49:37 GMT") == nil)
        #expect(BranchSingularHTTP.parseHTTPDate("Sun, 06 Nov 1994 08:49:37 PST") == nil)
        #expect(BranchSingularHTTP.parseHTTPDate("") == nil)
    }

    // The strict IP validator behind X-IP-Override and local_ip.
    @Test func ipValidator() {
        for good in ["1.2.3.4", "0.0.0.0", "255.255.255.255", "::", "::1", "2001:db8::1", "2001:0db8:0000:0000:0000:ff00:0042:8329",
            "::ffff:1.2.3.4", "fe80::1:2", "1:2:3:4:5:6:7:8", "1::8", "1:2:3:4:5:6:1.2.3.4"]
        {
            #expect(BranchIPAddress(good) != nil, "\(good)")
        }
        for bad in ["", "1.2.3", "1.2.3.4.5", "1.2.3.256", "01.2.3.4", "1.2.3.-4", " 1.2.3.4", "1.2.3.4 ", "a.b.c.d",
            ":::", "1:2:3:4:5:6:7:8:9", "1::2::3", "12345::", "fe80::1%eth0", "[::1]", "::g", "1:2:3:4:5:6:7:1.2.3.4",
            "1.2.3.4::"]
        {
            #expect(BranchIPAddress(bad) == nil, "\(bad)")
        }
        #expect(BranchIPAddress("8.8.8.8")?.isPublic == true)
        #expect(BranchIPAddress("2001:4860:4860::8888")?.isPublic == true)
        #expect(BranchIPAddress("::ffff:10.0.0.1")?.isPublic == false)
        #expect(BranchIPAddress("224.0.0.1")?.isPublic == false)
        #expect(BranchIPAddress("ff02::1")?.isPublic == false)
    }
}
