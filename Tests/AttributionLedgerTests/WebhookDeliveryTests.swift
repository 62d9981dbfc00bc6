import Foundation
@testable import AttributionLedger
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import LedgerHTTPTransport
import LedgerPostgres
import LedgerProviders
import LedgerStore
import LedgerTestKit
import MetricsTestKit
import Testing

@testable import LedgerDecisions

/// Decision webhooks (docs/webhooks.md) end to end: a first open, Apple's answer, the decision,
/// and its delivery through the send queue and the real worker to a receiver on loopback that
/// verifies every signature, over real HTTP, on the private PostgreSQL.
@Suite(.database, .serialized) struct WebhookDeliveryTests {
    /// Each app's device's Apple token (a send's idempotency key names its token: one per device).
    static let tokens = ["app1": "dG9rZW4tZm9yLXdlYmhvb2stdGVzdHMtMQ==", "app2": "dG9rZW4tZm9yLXdlYmhvb2stdGVzdHMtMg=="]
    static let secrets = ["app1": "whsec-app1-SECRET-7", "app2": "whsec-app2-SECRET-8"]

    struct Rig {
        let store: EventStore
        let fakes: FakeProviders
        let worker: SendWorker
        let recorder: DeviceFactRecorder
        let decider: AttributionDecider
        let clock: ManualClock
        let logs: LogCapture
        let start: Date

        /// Drains until no send is due at the worker's clock (brought up to the real time first:
        /// the decider stamps its sends with it).
        func drainAll() async throws {
            if clock.now() < Date() { clock.set(Date()) }
            while try await worker.drain() > 0 {}
        }

        /// A first open of `app`'s device `dev1` with an Apple token (Apple attributes it).
        func install(app: String) async throws {
            let open = FirstOpen(appID: try AppID(app), device: DecisionEndToEndTests.iosDevice(),
                                 adServicesToken: LedgerDomain.AdServicesToken(token: WebhookDeliveryTests.tokens[app]!, issuedAt: start))
            _ = try await recorder.record(open, app: try AppID(app), device: try DeviceID("dev1"), id: UUID(), occurredAt: start,
                                          metadata: EventMetadata(actor: "test", appID: try AppID(app)), now: start)
        }

        /// Decides until `expected` decisions were made (the process projection reads gap-safely).
        func decide(expected: Int) async throws -> [DecisionMade] {
            var made: [DecisionMade] = []
            let deadline = ContinuousClock.now + .seconds(120)
            repeat {
                made += try await decider.decidePending(now: Date())
                if made.count >= expected { break }
                try await Task.sleep(for: .milliseconds(20))
            } while ContinuousClock.now < deadline
            return made
        }

        /// The events of the send stream of the delivery of `decision` to `endpoint`.
        func deliveryStream(decision: UUID, endpoint: String = "backend") async throws -> [RecordedEvent] {
            let key = "webhook:\(endpoint):\(decision.uuidString.lowercased())"
            return try await store.readStream(StreamID.send(id: Outbox.sendID(forKey: key)).rawValue)
        }
    }

    /// Runs `body` with apps `app1` and `app2`, each with Apple AdServices and one endpoint,
    /// `backend`, at `/webhooks/<app>` on the fakes, signed with its own secret. `signing` replaces
    /// the secrets the ledger signs an app's deliveries with (the receiver keeps ``secrets``);
    /// `urls` sends an app's deliveries elsewhere.
    static func withRig(signing: [String: [String]] = [:], urls: [String: String] = [:], policy: WebhookRetryPolicy = WebhookRetryPolicy(),
                        extraEndpoints: [String: WebhookEndpoint] = [:],
                        sourceLocation: SourceLocation = #_sourceLocation, _ body: (Rig) async throws -> Void) async throws {
        try await TestDatabase.with { database throws in
            let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 8, logger: TestDatabase.quietLogger)
            defer { pool.close() }
            let store = EventStore(pool: pool, catalog: .standard, logger: TestDatabase.quietLogger)
            try await withCheckedFakeProviders(configuration: .init(credentials: DecisionEndToEndTests.credentials),
                                               sourceLocation: sourceLocation) { fakes in
                let transport = HTTPProviderTransport()
                do {
                    for token in tokens.values { fakes.apple.register(token: token) }
                    var apps: [String: ProviderSendRules] = [:]
                    var settings = AttributionSettings()
                    for app in ["app1", "app2"] {
                        let path = "/webhooks/\(app)"
                        fakes.webhooks.register(path: path, app: app, secret: secrets[app]!)
                        var rules = ProviderSendRules(adServices: fakes.appleEndpoint)
                        rules.webhooks["backend"] = try WebhookEndpoint(
                            name: "backend", url: urls[app] ?? fakes.webhookURL(path: path), secrets: signing[app] ?? [secrets[app]!], policy: policy)
                        if let extra = extraEndpoints[app] { rules.webhooks[extra.name] = extra }
                        apps[app] = rules
                        settings.apps[app] = AppAttributionSettings(providers: [.appleAdServices])
                        settings.apps[app]?.webhooks = [WebhookSubscription(endpoint: "backend")]
                    }
                    let logs = LogCapture()
                    let start = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
                    let clock = ManualClock(start)
                    let worker = SendWorker(
                        store: store, rules: PerAppSendRules(.init(apps: apps, others: ProviderSendRules())), transport: transport,
                        configuration: .init(workerID: "test-worker", slots: 4, lease: 30, requestTimeout: .seconds(5)),
                        clock: clock, jitter: { 0.5 }, logger: logs.logger(label: "ledger.worker"))
                    try await body(Rig(
                        store: store, fakes: fakes, worker: worker,
                        recorder: DeviceFactRecorder(store: store, settings: settings, logger: TestDatabase.quietLogger),
                        decider: AttributionDecider(store: store, settings: settings, logger: logs.logger(label: "ledger.attribution")),
                        clock: clock, logs: logs, start: start))
                } catch {
                    await transport.shutdown()
                    throw error
                }
                await transport.shutdown()
            }
        }
    }

    /// Every event of the log, as stored and read back (personal fields opened).
    static func everyEvent(_ store: EventStore) async throws -> [RecordedEvent] {
        try await store.readAll(limit: 100_000).events
    }

    // docs/webhooks.md, "Retries": a 500 is retried; the retry carries the same Ledger-Delivery
    // id and body, so the receiver accepts the decision once; every try and answer is in the send's
    // stream like a provider call's, the signature redacted, the secret nowhere.
    @Test func aDecisionIsDeliveredSignedAndRetriedUnderOneDeliveryID() async throws {
        let metrics = TestMetrics()
        try await Self.withRig { rig in
            try await rig.install(app: "app1")
            try await rig.drainAll()
            let made = try #require(try await rig.decide(expected: 1).first)
            rig.fakes.webhooks.enqueue(.status(500, body: "busy"))
            try await ScopedMetrics.withMetrics(metrics) {
                try await rig.drainAll()
                #expect(rig.fakes.webhooks.validDeliveries.map(\.status) == [500])
                // The retry is due 30 s after the first call.
                rig.clock.advance(by: 29)
                #expect(try await rig.worker.drain() == 0)
                rig.clock.advance(by: 2)
                #expect(try await rig.worker.drain() == 1)
            }
            let tries = rig.fakes.webhooks.validDeliveries
            try #require(tries.map(\.status) == [500, 200])
            let sendID = Outbox.sendID(forKey: "webhook:backend:\(made.decisionID.uuidString.lowercased())")
            #expect(tries.map(\.deliveryID) == [sendID.uuidString.lowercased(), sendID.uuidString.lowercased()])
            #expect(tries[0].body == tries[1].body)
            #expect(rig.fakes.webhooks.deliveries.count == 1)
            let body = try #require(try JSONSerialization.jsonObject(with: tries[1].body) as? [String: Any])
            #expect(body["version"] as? Int == 1 && body["event_kind"] as? String == "decision")
            #expect(body["app"] as? String == "app1" && body["device"] as? String == "dev1")
            #expect(body["event_id"] as? String == made.decisionID.uuidString.lowercased())
            #expect((body["position"] as? NSNumber)?.int64Value == made.position)
            let decision = try #require(body["decision"] as? [String: Any])
            #expect(decision["decision_id"] as? String == made.decisionID.uuidString.lowercased())
            #expect((decision["winner"] as? [String: Any])?["source"] as? String == "apple_adservices")

            let stream = try await rig.deliveryStream(decision: made.decisionID)
            #expect(stream.map(\.type) == [
                SendRequested.eventType, SendAttempted.eventType, ResponseReceived.eventType, RetryScheduled.eventType,
                SendAttempted.eventType, ResponseReceived.eventType, SendSucceeded.eventType,
            ])
            let attempt = try LedgerJSON.makeDecoder().decode(SendAttempted.self, from: stream[1].data)
            #expect(attempt.request.headers?.first { $0.name == "Ledger-Signature" }?.value == "REDACTED")
            #expect(attempt.request.body?.content == String(decoding: tries[0].body, as: UTF8.self))
            // The SendRequested is in the decision's transaction: its position follows the decision's.
            #expect(stream[0].position > made.position)

            for event in try await Self.everyEvent(rig.store) {
                let text = String(decoding: event.data + event.metadata, as: UTF8.self)
                #expect(!text.contains(Self.secrets["app1"]!), "\(event.type) holds the signing secret")
            }
            #expect(!rig.logs.all.contains { $0.description.contains("SECRET") })
            // `ledger explain` shows the delivery under its decision.
            let explained = try await AttributionExplanation.load(device: "device-app1/dev1", store: rig.store).render()
            #expect(explained.contains("webhook backend: delivered after 2 calls"), "\(explained)")
        }
        let webhook = ("provider", "webhook")
        #expect(metrics.counterTotal(label: "ledger_send_outcomes_total", dimensions: [webhook, ("outcome", "retry"), ("status", "500")]) == 1)
        #expect(metrics.counterTotal(label: "ledger_send_outcomes_total", dimensions: [webhook, ("outcome", "succeeded"), ("status", "200")]) == 1)
    }

    // docs/webhooks.md, "Retries": a 429 waits for its Retry-After; a 400 ends the delivery for
    // good, and the send shows among the device's sends that need people in `ledger explain`.
    @Test func retryAfterIsHonouredAndA400IsTerminal() async throws {
        try await Self.withRig { rig in
            try await rig.install(app: "app1")
            try await rig.drainAll()
            let made = try #require(try await rig.decide(expected: 1).first)
            rig.fakes.webhooks.enqueue(.status(429, headers: [Header("Retry-After", "120")]), .status(400, body: "no"))
            try await rig.drainAll()
            let retry = try LedgerJSON.makeDecoder().decode(RetryScheduled.self,
                from: try #require(try await rig.deliveryStream(decision: made.decisionID).last).data)
            #expect(retry.rule == "webhook_429_backoff")
            // Retry-After's 120 s, not the 30 s back-off (the log keeps microseconds).
            #expect(abs(retry.notBefore.timeIntervalSince(rig.clock.now()) - 120) < 0.001)
            rig.clock.advance(by: 60)
            #expect(try await rig.worker.drain() == 0)
            #expect(rig.fakes.webhooks.validDeliveries.count == 1)
            rig.clock.advance(by: 61)
            #expect(try await rig.worker.drain() == 1)
            let failed = try LedgerJSON.makeDecoder().decode(SendFailed.self,
                from: try #require(try await rig.deliveryStream(decision: made.decisionID).last).data)
            #expect(failed.rule == "webhook_http_4xx")
            #expect(rig.fakes.webhooks.validDeliveries.map(\.status) == [429, 400])
            #expect(rig.fakes.webhooks.deliveries.isEmpty)
            rig.clock.advance(by: 86_400)
            #expect(try await rig.worker.drain() == 0)
            let explanation = try await AttributionExplanation.load(device: "device-app1/dev1", store: rig.store)
            let needing = try #require(explanation.sendsNeedingPeople.first)
            #expect(needing.provider == .webhook && needing.kind == .delivery && needing.rule == "webhook_http_4xx")
            #expect(explanation.render().contains("webhook/delivery send"))
        }
    }

    // docs/webhooks.md, "Retries": a receiver that keeps failing is retried until the
    // endpoint's max_attempts, then the delivery fails for good.
    @Test func aDeliveryIsDeadAfterItsAttempts() async throws {
        try await Self.withRig(policy: WebhookRetryPolicy(maxAttempts: 3)) { rig in
            try await rig.install(app: "app1")
            try await rig.drainAll()
            let made = try #require(try await rig.decide(expected: 1).first)
            rig.fakes.webhooks.enqueue(.status(503), .status(503), .status(503), .status(503))
            for _ in 0..<5 {
                try await rig.drainAll()
                rig.clock.advance(by: 3_600)
            }
            #expect(rig.fakes.webhooks.validDeliveries.map(\.status) == [503, 503, 503])
            let failed = try LedgerJSON.makeDecoder().decode(SendFailed.self,
                from: try #require(try await rig.deliveryStream(decision: made.decisionID).last).data)
            #expect(failed.rule == "webhook_attempts_exhausted")
        }
    }

    // docs/webhooks.md, "What is delivered, and when": a redo whose outcome changed is a new
    // decision, delivered under a delivery id of its own, its `supersedes` naming the first.
    @Test func aSupersedingDecisionIsADeliveryOfItsOwn() async throws {
        try await Self.withRig { rig in
            rig.fakes.apple.register(token: Self.tokens["app1"]!,
                                     outcome: DecisionEndToEndTests.appleClick(minutesBeforeInstall: 10, install: rig.start))
            try await rig.install(app: "app1")
            try await rig.drainAll()
            let first = try #require(try await rig.decide(expected: 1).first)
            try await rig.drainAll()
            // A fix to the app's windows: Apple's click, 10 minutes before the install, is now outside.
            var fixed = AttributionSettings()
            fixed.apps["app1"] = AppAttributionSettings(providers: [.appleAdServices])
            fixed.apps["app1"]?.windows.appleClick = 60
            fixed.apps["app1"]?.webhooks = [WebhookSubscription(endpoint: "backend")]
            let redoer = AttributionDecider(store: rig.store, settings: fixed, logger: TestDatabase.quietLogger)
            var report = RedoReport()
            let deadline = ContinuousClock.now + .seconds(60)  // the decision must be readable (gap-safe horizon)
            repeat {
                report = try await redoer.redo(ruleVersion: "1", since: nil, now: Date())
            } while report.superseded.isEmpty && ContinuousClock.now < deadline
            let second = try #require(report.superseded.first)
            try await rig.drainAll()
            let accepted = rig.fakes.webhooks.deliveries
            try #require(accepted.count == 2)
            #expect(accepted[0].deliveryID != accepted[1].deliveryID)
            #expect(accepted.map(\.eventID) == [first.decisionID, second.decisionID].map { $0.uuidString.lowercased() })
            let body = try #require(try JSONSerialization.jsonObject(with: accepted[1].body) as? [String: Any])
            let decision = try #require(body["decision"] as? [String: Any])
            #expect(decision["supersedes"] as? String == first.decisionID.uuidString.lowercased())
            #expect(decision["organic"] as? Bool == true)
        }
    }

    // docs/webhooks.md, "Security": an app's endpoint receives that app's decisions only, each
    // signed with that app's secret (the receiver refuses any other app's, noting it).
    @Test func anAppsWebhookNeverReceivesAnotherAppsDecision() async throws {
        try await Self.withRig { rig in
            try await rig.install(app: "app1")
            try await rig.install(app: "app2")
            try await rig.drainAll()
            let made = try await rig.decide(expected: 2)
            #expect(made.count == 2)
            try await rig.drainAll()
            let accepted = rig.fakes.webhooks.deliveries
            #expect(accepted.count == 2)
            for delivery in accepted {
                let body = try #require(try JSONSerialization.jsonObject(with: delivery.body) as? [String: Any])
                #expect(delivery.path == "/webhooks/\(body["app"] as? String ?? "-")")
            }
            #expect(Set(accepted.map(\.path)) == ["/webhooks/app1", "/webhooks/app2"])
        }
    }

    // docs/webhooks.md, "What is delivered, and when": a delivery is built with the endpoints of
    // its own app only. A send of app1's decision naming an endpoint only app2 has (as a forged
    // or stale request would) fails without a call; app2's receiver gets nothing.
    @Test func aDeliveryNeverGoesToAnotherAppsEndpoint() async throws {
        let partner = try WebhookEndpoint(name: "partner", url: "http://127.0.0.1:9/webhooks/partner", secrets: ["whsec-partner-SECRET"])
        try await Self.withRig(extraEndpoints: ["app2": partner]) { rig in
            try await rig.install(app: "app1")
            try await rig.drainAll()
            let made = try #require(try await rig.decide(expected: 1).first)
            let key = "webhook:partner:\(made.decisionID.uuidString.lowercased())"
            let forged = SendRequested(
                sendID: Outbox.sendID(forKey: key), provider: .webhook, kind: .delivery, causeEventID: made.decisionID,
                causeStreamID: try StreamID("decision-app1/dev1"), deviceStreamID: try StreamID("device-app1/dev1"), idempotencyKey: key,
                parameters: ["endpoint": "partner", "event_kind": "decision"])
            _ = try await rig.store.pool.withTransaction { [store = rig.store] connection in
                try Outbox.enqueue(forged, store: store, now: Date(), on: connection)
            }
            try await rig.drainAll()
            let failed = try LedgerJSON.makeDecoder().decode(SendFailed.self,
                from: try #require(try await rig.deliveryStream(decision: made.decisionID, endpoint: "partner").last).data)
            #expect(failed.rule == "webhook_endpoint_not_configured")
            #expect(rig.fakes.webhooks.requests.allSatisfy { $0.path == "/webhooks/app1" })
            #expect(rig.fakes.webhooks.deliveries.count == 1)
        }
    }

    // docs/webhooks.md, "Verifying a delivery": a delivery signed with a secret the receiver does
    // not hold is refused (400, terminal); while rotating, the ledger signs with both secrets and
    // a receiver holding either accepts.
    @Test func aReceiverRefusesAWrongSignatureAndAcceptsEitherSecretWhileRotating() async throws {
        try await Self.withRig(signing: ["app1": ["whsec-wrong-SECRET-9"], "app2": ["whsec-new-SECRET-10", Self.secrets["app2"]!]]) { rig in
            rig.fakes.expectAnomaly(.webhook, "signature_mismatch")
            try await rig.install(app: "app1")
            try await rig.install(app: "app2")
            try await rig.drainAll()
            let made = try await rig.decide(expected: 2)
            try await rig.drainAll()
            #expect(rig.fakes.webhooks.deliveries.map(\.path) == ["/webhooks/app2"])
            let app1 = try #require(made.first { $0.deviceStreamID == "device-app1/dev1" })
            let failed = try LedgerJSON.makeDecoder().decode(SendFailed.self,
                from: try #require(try await rig.deliveryStream(decision: app1.decisionID).last).data)
            #expect(failed.rule == "webhook_http_4xx")
            let signature = try #require(rig.fakes.webhooks.requests.last { $0.path == "/webhooks/app2" }?.headerValue("Ledger-Signature"))
            #expect(signature.components(separatedBy: "v1=").count == 3)
        }
    }
}
