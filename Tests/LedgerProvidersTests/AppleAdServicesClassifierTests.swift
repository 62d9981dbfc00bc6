import Foundation
import LedgerProviders
import Testing

/// Apple AdServices attribution API, "Response codes" and the token's 24-hour TTL.
struct AppleAdServicesClassifierTests {
    let issued = Date(timeIntervalSince1970: 1_728_400_000)

    func at(_ hours: Int, _ minutes: Int = 0, _ seconds: Int = 0) -> Date {
        issued.addingTimeInterval(TimeInterval(hours * 3_600 + minutes * 60 + seconds))
    }

    func answer(_ status: Int, _ body: String = "") -> ProviderResponse {
        ProviderResponse(status: status, body: Data(body.utf8))
    }

    @Test("Apple AdServices attribution API \"24-hour TTL\": sent at 23:59:59, not at 24:00:00 (expired, no call)")
    func preflightEdge() {
        #expect(AdServicesClassifier.preflight(tokenIssuedAt: issued, now: at(23, 59, 59)) == nil)
        #expect(AdServicesClassifier.isTokenLive(issuedAt: issued, now: at(23, 59, 59)))
        #expect(!AdServicesClassifier.isTokenLive(issuedAt: issued, now: at(24)))
        guard case .failed(let rule, _)? = AdServicesClassifier.preflight(tokenIssuedAt: issued, now: at(24)) else {
            Issue.record("expected the token to be expired at 24:00:00")
            return
        }
        #expect(rule == "adservices_token_expired")
        #expect(AdServicesClassifier.preflight(tokenIssuedAt: issued, now: issued) == nil)
        #expect(AdServicesClassifier.preflight(tokenIssuedAt: issued, now: at(0, 0, -30)) == nil)  // clock skew
    }

    @Test("Apple AdServices attribution API 200: attribution=true or attribution=false both succeed")
    func okAnswers() {
        #expect(AdServicesClassifier.classify(answer(200, AppleAdServicesSamples.detailedClick), tokenIssuedAt: issued, attempt: 1, now: at(0, 0, 3)) == .succeeded)
        #expect(AdServicesClassifier.classify(answer(200, #"{"attribution":false}"#), tokenIssuedAt: issued, attempt: 1, now: at(1)) == .succeeded)
        guard case .failed(let rule, _) = AdServicesClassifier.classify(answer(200, "nope"), tokenIssuedAt: issued, attempt: 1, now: at(1)) else {
            Issue.record("a 200 that is no payload is terminal")
            return
        }
        #expect(rule == "adservices_malformed_payload")
    }

    @Test("Apple AdServices attribution API 400: \"The token is invalid\" — terminal")
    func invalidToken() {
        guard case .failed(let rule, _) = AdServicesClassifier.classify(answer(400), tokenIssuedAt: issued, attempt: 1, now: at(0, 1)) else {
            Issue.record("400 must be terminal")
            return
        }
        #expect(rule == "adservices_400_invalid_token")
    }

    @Test("Apple AdServices attribution API 404: retry every 5 s, maximum three attempts — 404, 404, 200 succeeds")
    func notFoundThenFound() {
        var now = at(0, 0, 1)
        #expect(
            AdServicesClassifier.classify(answer(404), tokenIssuedAt: issued, attempt: 1, now: now)
                == .retry(notBefore: now.addingTimeInterval(5), rule: "adservices_404_retry_5s"))
        now = now.addingTimeInterval(5)
        #expect(
            AdServicesClassifier.classify(answer(404), tokenIssuedAt: issued, attempt: 2, now: now)
                == .retry(notBefore: now.addingTimeInterval(5), rule: "adservices_404_retry_5s"))
        now = now.addingTimeInterval(5)
        #expect(AdServicesClassifier.classify(answer(200, AppleAdServicesSamples.standardClick), tokenIssuedAt: issued, attempt: 3, now: now) == .succeeded)
    }

    @Test("Apple AdServices attribution API 404: the third 404 gives up (terminal)")
    func notFoundThreeTimes() {
        let third = AdServicesClassifier.classify(answer(404), tokenIssuedAt: issued, attempt: 3, now: at(0, 0, 11))
        guard case .failed(let rule, _) = third else {
            Issue.record("expected gave-up, got \(third)")
            return
        }
        #expect(rule == "adservices_404_gave_up")
    }

    @Test("Apple AdServices attribution API 404 past 24 h: the token is past its TTL — terminal \"expired\", even on attempt 1")
    func notFoundExpired() {
        for now in [at(24), at(30)] {
            guard case .failed(let rule, _) = AdServicesClassifier.classify(answer(404), tokenIssuedAt: issued, attempt: 1, now: now) else {
                Issue.record("expected expired")
                return
            }
            #expect(rule == "adservices_token_expired")
        }
        // At 23:59:54 a retry 5 s later still falls inside the TTL; at 23:59:55 it would not.
        #expect(
            AdServicesClassifier.classify(answer(404), tokenIssuedAt: issued, attempt: 1, now: at(23, 59, 54))
                == .retry(notBefore: at(23, 59, 59), rule: "adservices_404_retry_5s"))
        guard case .failed(let rule, _) = AdServicesClassifier.classify(answer(404), tokenIssuedAt: issued, attempt: 1, now: at(23, 59, 55)) else {
            Issue.record("a retry at 24:00:00 is past the TTL")
            return
        }
        #expect(rule == "adservices_token_expired")
    }

    @Test("Apple AdServices attribution API 500: retry later while the token lives; no answer is handled the same way")
    func serverErrors() {
        #expect(
            AdServicesClassifier.classify(answer(500), tokenIssuedAt: issued, attempt: 1, now: at(1))
                == .retry(notBefore: at(1, 0, 30), rule: "adservices_5xx_retry"))
        #expect(
            AdServicesClassifier.classify(answer(503), tokenIssuedAt: issued, attempt: 3, now: at(1))
                == .retry(notBefore: at(1, 2), rule: "adservices_5xx_retry"))
        #expect(
            AdServicesClassifier.classify(nil, tokenIssuedAt: issued, attempt: 20, now: at(1))
                == .retry(notBefore: at(1, 30), rule: "adservices_network_error_retry"))
        guard case .failed(let rule, _) = AdServicesClassifier.classify(answer(500), tokenIssuedAt: issued, attempt: 1, now: at(23, 59, 40)) else {
            Issue.record("a retry past the TTL is pointless")
            return
        }
        #expect(rule == "adservices_token_expired")
        guard case .failed(let other, _) = AdServicesClassifier.classify(answer(401), tokenIssuedAt: issued, attempt: 1, now: at(1)) else {
            Issue.record("an undocumented status is terminal")
            return
        }
        #expect(other == "adservices_unexpected_status")
    }
}
