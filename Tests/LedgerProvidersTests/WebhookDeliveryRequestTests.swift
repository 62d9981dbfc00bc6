import Foundation
import LedgerDomain
import LedgerProviders
import Testing

/// A webhook delivery's request, signature and answer rules (docs/webhooks.md), pure.
@Suite("Webhook deliveries")
struct WebhookDeliveryRequestTests {
    static let now = Date(timeIntervalSince1970: 1_700_000_000)

    // docs/webhooks.md, "Headers": v1 is the hex HMAC-SHA256 of "t.body"; the expected values
    // are Python's hmac.new(secret, b"1700000000." + body, hashlib.sha256).hexdigest().
    @Test func theSignatureIsHMACSHA256OfTimestampDotBodyUnderEachSecret() {
        let body = Data(#"{"a":1}"#.utf8)
        #expect(WebhookSignature.header(secrets: ["whsec-test", "whsec-old"], timestamp: 1_700_000_000, body: body)
            == "t=1700000000,v1=fed7a1a6c799a6367d73724d76bc70c16678908a32a879cd1ded6565ac05cece"
            + ",v1=4078f9402e8e38218966640b38b5b179994dda31057962e01b81a8cf7b6f7be9")
        let header = WebhookSignature.header(secrets: ["whsec-test", "whsec-old"], timestamp: 1_700_000_000, body: body)
        #expect(WebhookSignature.verify(header: header, body: body, secret: "whsec-test") == 1_700_000_000)
        #expect(WebhookSignature.verify(header: header, body: body, secret: "whsec-old") == 1_700_000_000)
        #expect(WebhookSignature.verify(header: header, body: body, secret: "whsec-other") == nil)
        #expect(WebhookSignature.verify(header: header, body: Data(#"{"a":2}"#.utf8), secret: "whsec-test") == nil)
        #expect(WebhookSignature.verify(header: header.replacingOccurrences(of: "t=1700000000", with: "t=1700000001"),
                                        body: body, secret: "whsec-test") == nil)
    }

    static func endpoint(_ url: String = "https://hooks.example.com/ledger?tenant=game") throws -> WebhookEndpoint {
        try WebhookEndpoint(name: "backend", url: url, secrets: ["whsec-test-SECRET"])
    }

    @Test func theRequestIsASignedJSONPostWhoseStoredFormKeepsTheBodyAndHidesTheSignature() throws {
        let delivery = WebhookDelivery(
            deliveryID: UUID(uuidString: "3F0C2A9E-5B1D-8E47-A1C3-0D9B6E2F7A14")!, kind: .decision, app: "com.example.game",
            device: "8C1F2A", eventID: UUID(uuidString: "C1A70000-0000-4000-8000-000000000001")!, position: 4711,
            recordedAt: Date(timeIntervalSince1970: 1_700_000_000.125), event: Data(#"{"decision_id":"c1a7"}"#.utf8))
        let request = delivery.request(to: try Self.endpoint(), now: Self.now)
        #expect(request.method == .post && request.urlString == "https://hooks.example.com/ledger?tenant=game")
        let body = String(decoding: try #require(request.body), as: UTF8.self)
        #expect(body == #"{"version":1,"delivery_id":"3f0c2a9e-5b1d-8e47-a1c3-0d9b6e2f7a14","event_kind":"decision","#
            + #""app":"com.example.game","device":"8C1F2A","event_id":"c1a70000-0000-4000-8000-000000000001","position":4711,"#
            + #""recorded_at":"2023-11-14T22:13:20.125Z","decision":{"decision_id":"c1a7"}}"#)
        #expect(request.headerValue("Ledger-Delivery") == "3f0c2a9e-5b1d-8e47-a1c3-0d9b6e2f7a14")
        #expect(request.headerValue("Ledger-Timestamp") == "1700000000")
        #expect(request.headerValue("Content-Type") == "application/json")
        let signature = try #require(request.headerValue("Ledger-Signature"))
        #expect(WebhookSignature.verify(header: signature, body: try #require(request.body), secret: "whsec-test-SECRET") == 1_700_000_000)
        let stored = request.redacted()
        #expect(stored.headerValue("Ledger-Signature") == "REDACTED" && stored.body == request.body)
        #expect(!request.description.contains(signature))
    }

    @Test func endpointsAreHTTPSOrLoopbackAndCarryNoCredentials() throws {
        #expect(throws: ProviderError.self) { try Self.endpoint("http://hooks.example.com/x") }
        #expect(throws: ProviderError.self) { try Self.endpoint("https://u:p@hooks.example.com/x") }
        #expect(throws: ProviderError.self) { try WebhookEndpoint(name: "backend", url: "https://h.example.com/", secrets: []) }
        #expect(throws: ProviderError.self) { try WebhookEndpoint(name: "backend", url: "https://h.example.com/", secrets: ["a", "b", "c"]) }
        #expect(try Self.endpoint("http://127.0.0.1:8080/hooks").port == 8080)
        #expect(try Self.endpoint("http://localhost/hooks").scheme == "http")
    }

    // docs/webhooks.md, "Retries".
    @Test func answersAreJudgedAsWebhookReceiversExpect() {
        let recorded = Self.now
        let policy = WebhookRetryPolicy(maxAttempts: 4, maxAge: 3_600)
        func judge(_ status: Int, call: Int = 1, headers: [Header] = [], at now: Date = Self.now) -> SendDisposition {
            WebhookClassifier.classify(.response(ProviderResponse(status: status, headers: headers)), call: call,
                                       eventRecordedAt: recorded, now: now, policy: policy)
        }
        #expect(judge(200) == .succeeded && judge(204) == .succeeded)
        #expect(judge(500) == .retry(notBefore: Self.now.addingTimeInterval(30), rule: "webhook_5xx_retry"))
        #expect(judge(503, call: 3) == .retry(notBefore: Self.now.addingTimeInterval(120), rule: "webhook_5xx_retry"))
        #expect(judge(408) == .retry(notBefore: Self.now.addingTimeInterval(30), rule: "webhook_408_retry"))
        #expect(judge(429, headers: [Header("Retry-After", "600")])
            == .retry(notBefore: Self.now.addingTimeInterval(600), rule: "webhook_429_backoff"))
        // A Retry-After shorter than the back-off does not shorten it.
        #expect(judge(429, headers: [Header("Retry-After", "1")])
            == .retry(notBefore: Self.now.addingTimeInterval(30), rule: "webhook_429_backoff"))
        #expect(WebhookClassifier.classify(.timedOut, call: 1, eventRecordedAt: recorded, now: Self.now, policy: policy)
            == .retry(notBefore: Self.now.addingTimeInterval(30), rule: "webhook_timeout_retry"))
        #expect(WebhookClassifier.classify(.transportFailed, call: 1, eventRecordedAt: recorded, now: Self.now, policy: policy)
            == .retry(notBefore: Self.now.addingTimeInterval(30), rule: "webhook_transport_retry"))
        guard case .failed(rule: "webhook_http_4xx", _) = judge(400) else { Issue.record("400 is terminal"); return }
        guard case .failed(rule: "webhook_http_4xx", _) = judge(410) else { Issue.record("410 is terminal"); return }
        guard case .failed(rule: "webhook_unexpected_status", _) = judge(301) else { Issue.record("3xx is terminal"); return }
        guard case .failed(rule: "webhook_attempts_exhausted", _) = judge(500, call: 4) else { Issue.record("4 calls at most"); return }
        guard case .failed(rule: "webhook_age_exhausted", _) = judge(500, call: 2, at: Self.now.addingTimeInterval(3_550)) else {
            Issue.record("no retry due after max_age"); return
        }
    }
}
