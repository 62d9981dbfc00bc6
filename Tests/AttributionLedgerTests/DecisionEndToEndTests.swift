import Foundation
@testable import AttributionLedger
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import LedgerFolds
import LedgerHTTPTransport
import LedgerPostgres
import LedgerProjections
import LedgerProviders
import LedgerStore
import LedgerTestKit
import Testing

@testable import LedgerDecisions

/// First open → sends → answers → decision → cross-network reports, against the loopback fakes
/// over real HTTP, on the private PostgreSQL.
@Suite(.database) struct DecisionEndToEndTests {
    /// The test's start: the decider stamps its sends with the real time, so the worker's manual
    /// clock starts at the real time too (and moves only forward from there).
    static var epoch: Date { Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down)) }
    static let app = "app1"
    static let device = "device-app1/dev1"
    static let token = "dG9rZW4tZm9yLWF0dHJpYnV0aW9uLXRlc3Rz"

    struct Rig {
        let store: EventStore
        let fakes: FakeProviders
        let worker: SendWorker
        let recorder: DeviceFactRecorder
        let decider: AttributionDecider
        let clock: ManualClock
        /// When the install happens (the rig's creation time).
        let start: Date

        /// Drains until no send is due at the worker's clock (first brought up to the real time: the
        /// decider enqueues cross-network sends at the real time).
        func drainAll() async throws {
            if clock.now() < Date() { clock.set(Date()) }
            while try await worker.drain() > 0 {}
        }

        func install(deepLink: DeepLink? = nil, id: UUID = UUID()) async throws -> RecordedFact {
            let open = FirstOpen(appID: try AppID(app), device: iosDevice(), deepLink: deepLink,
                                 adServicesToken: LedgerDomain.AdServicesToken(token: token, issuedAt: start))
            return try await recorder.record(open, app: try AppID(app), device: try DeviceID("dev1"), id: id, occurredAt: start,
                                             metadata: EventMetadata(actor: "test", appID: try AppID(app)), now: start)
        }

        /// Decides what is due at `now`, again until `expected` decisions were made in all: the
        /// process projection reads the log gap-safely, and other tests' transactions on the same
        /// server can hold its horizon back for a moment (bounded at 2 minutes: on a loaded machine
        /// a test's transaction can stay open for half a minute between its statements).
        @discardableResult
        func decide(now: Date, expected: Int = 1) async throws -> [DecisionMade] {
            var made: [DecisionMade] = []
            let deadline = ContinuousClock.now + .seconds(120)
            repeat {
                made += try await decider.decidePending(now: now)
                if made.count >= expected { break }
                try await Task.sleep(for: .milliseconds(20))
            } while ContinuousClock.now < deadline
            return made
        }

        func decisions() async throws -> [AttributionDecided] {
            try await store.readStream("decision-app1/dev1").filter { $0.type == AttributionDecided.eventType }
                .map { try LedgerJSON.makeDecoder().decode(AttributionDecided.self, from: $0.data) }
        }

        func crossNetworkCalls() -> [(adEventID: String?, attributed: String?)] {
            fakes.google.requests.filter { $0.path.hasSuffix("/cross_network") }
                .map { ($0.queryValue("ad_event_id"), $0.queryValue("attributed")) }
        }
    }

    /// The account the fakes stand for, and the ledger's configuration.
    static let credentials = FakeProviders.Credentials(
        googleDevToken: "test-dev-token-not-a-secret", googleLinkID: "LINK1", branchKey: "key_test_fake",
        branchSecret: "secret_test_fake", singularSDKKey: "sdk-test-fake")

    /// Runs `body` with a rig whose device token Apple knows (attributed, without a click date,
    /// unless the test registers it otherwise); the fakes' anomalies end the test
    /// (`withCheckedFakeProviders`).
    static func withRig(
        settings: AttributionSettings = AttributionSettings(), sourceLocation: SourceLocation = #_sourceLocation,
        _ body: (Rig) async throws -> Void
    ) async throws {
        try await TestDatabase.with { database throws in
            let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 8, logger: TestDatabase.quietLogger)
            defer { pool.close() }
            let store = EventStore(pool: pool, catalog: .standard, logger: TestDatabase.quietLogger)
            try await withCheckedFakeProviders(configuration: .init(credentials: credentials), sourceLocation: sourceLocation) {
                fakes in
                let transport = HTTPProviderTransport()
                do {
                    fakes.branch.setRapidRepeatInterval(.zero)
                    fakes.apple.register(token: token)
                    let rules = ProviderSendRules(
                        google: GoogleConversionRequestBuilder(link: fakes.googleLink, endpoint: fakes.googleEndpoint),
                        adServices: fakes.appleEndpoint, branch: fakes.branchConfiguration, singular: fakes.singularConfiguration)
                    let start = epoch
                    let clock = ManualClock(start)
                    let worker = SendWorker(
                        store: store, rules: rules, transport: transport,
                        configuration: .init(workerID: "test-worker", slots: 4, lease: 30, requestTimeout: .seconds(5)),
                        clock: clock, jitter: { 0.5 }, logger: TestDatabase.quietLogger)
                    try await body(Rig(
                        store: store, fakes: fakes, worker: worker,
                        recorder: DeviceFactRecorder(store: store, settings: settings, logger: TestDatabase.quietLogger),
                        decider: AttributionDecider(store: store, settings: settings, logger: TestDatabase.quietLogger),
                        clock: clock, start: start))
                } catch {
                    await transport.shutdown()
                    throw error
                }
                await transport.shutdown()
            }
        }
    }

    static func iosDevice() -> DeviceContext {
        DeviceContext(platform: .ios, idfa: "DFC5A647-9043-4699-B2A5-76F03A97064B", idfv: "21DB6612-09B3-4ECC-84AC-B353B0AF1334",
                      limitAdTracking: false, attStatus: .authorized, ip: "203.0.113.7",
                      userAgent: UserAgentParts(appName: "App", appVersion: "1.2.3", osName: "iOS", osVersion: "17.1",
                                                locale: "en_US", deviceModel: "iPhone15,2", build: "21B74"),
                      osVersion: "17.1", appVersion: "1.2.3", bundleID: "com.example.app")
    }

    /// Apple's detailed payload with a `clickDate` `minutes` before the install (Apple's dates
    /// have minute precision: `2024-10-08T17:17Z`).
    static func appleClick(minutesBeforeInstall minutes: Int, install: Date) -> FakeAppleAdServices.Outcome {
        let formatter = ISO8601DateFormatter()
        let date = formatter.string(from: install.addingTimeInterval(-Double(minutes) * 60))
        return .custom("""
            {"attribution":true,"orgId":40669820,"campaignId":542370539,"conversionType":"Download","clickDate":"\(date)",
             "claimType":"Click","adGroupId":542317095,"countryOrRegion":"US","keywordId":87675432,"adId":542317136}
            """)
    }

    /// Google's click (the fake stamps its ad event an hour before the conversion) is later than
    /// Apple's (a day before): Google wins, and the cross-network report says `attributed=1`
    /// (Google App Conversion Tracking API: "the consumer MUST send a cross-network attribution
    /// request after deciding").
    @Test func googleWinsAndIsToldAttributedOne() async throws {
        try await Self.withRig { rig in
            rig.fakes.apple.register(token: Self.token, outcome: Self.appleClick(minutesBeforeInstall: 24 * 60, install: rig.start))
            let fact = try await rig.install()
            #expect(fact.sends.count == 4)  // Google first_open, Apple lookup, Branch open, Singular __SESSION__
            try await rig.drainAll()
            let made = try await rig.decide(now: Date())
            #expect(made.count == 1)
            let decision = try #require(try await rig.decisions().first)
            #expect(decision.winner?.source == .google)
            #expect(decision.candidates.map(\.outcome).sorted { $0.rawValue < $1.rawValue } == [.earlierClick, .won])
            #expect(decision.triggerEventID == fact.eventID)
            #expect(decision.inputPositions.first == fact.position)
            try await rig.drainAll()
            let calls = rig.crossNetworkCalls()
            #expect(calls.count == 1)
            #expect(calls.first?.attributed == "1")
            #expect(calls.first?.adEventID == decision.winner?.adEventID)
            #expect(rig.fakes.google.anomalies.isEmpty)
            // The ledger tells the story in order: fact, sends and answers, decision, cross-network.
            let history = try await rig.store.readHistory(of: .deviceHistory(Self.device))
            let types = history.map(\.type)
            let decided = try #require(types.firstIndex(of: AttributionDecided.eventType))
            #expect(types.first == FirstOpen.eventType)
            #expect(types[..<decided].filter { $0 == ResponseReceived.eventType }.count >= 3)  // Google, Apple, Branch (+ Singular)
            let crossNetworkRequest = try #require(history.lastIndex { record in
                record.type == SendRequested.eventType
                    && (try? LedgerJSON.makeDecoder().decode(SendRequested.self, from: record.data).kind) == .crossNetwork
            })
            #expect(crossNetworkRequest > decided)
            #expect(types.last == SendSucceeded.eventType)
        }
    }

    /// Apple's click ten minutes before the install is later than Google's (an hour before):
    /// Apple wins and Google is told `attributed=0` for its ad event.
    @Test func appleWinsAndGoogleIsToldAttributedZero() async throws {
        try await Self.withRig { rig in
            rig.fakes.apple.register(token: Self.token, outcome: Self.appleClick(minutesBeforeInstall: 10, install: rig.start))
            _ = try await rig.install()
            try await rig.drainAll()
            try await rig.decide(now: Date())
            let decision = try #require(try await rig.decisions().first)
            #expect(decision.winner?.source == .appleAdServices)
            try await rig.drainAll()
            #expect(rig.crossNetworkCalls().map(\.attributed) == ["0"])
        }
    }

    /// A provider that never answers: the decision waits until the app's deadline, then decides
    /// with what it has; the answer that comes later is recorded and flagged as late, and no second
    /// decision is made.
    @Test func deadlineThenLateAnswer() async throws {
        var settings = AttributionSettings()
        settings.defaults.decisionDeadline = 3600
        try await Self.withRig(settings: settings) { rig in
            rig.fakes.apple.register(token: Self.token, outcome: Self.appleClick(minutesBeforeInstall: 10, install: rig.start))
            rig.fakes.apple.enqueue(.status(500))  // Apple AdServices attribution API: 500 → retry later while the token lives
            _ = try await rig.install()
            try await rig.drainAll()
            #expect(try await rig.decider.decidePending(now: Date()).isEmpty)  // Apple still pending, deadline ahead
            let made = try await rig.decide(now: Date().addingTimeInterval(3601))
            #expect(made.count == 1 && made.first?.byDeadline == true)
            #expect(try await rig.decisions().first?.winner?.source == .google)
            // Apple answers after the decision.
            rig.clock.advance(by: 600)
            try await rig.drainAll()
            #expect(rig.fakes.apple.lookups(of: Self.token) >= 1)
            #expect(try await rig.decider.decidePending(now: Date().addingTimeInterval(7200)).isEmpty)
            #expect(try await rig.decisions().count == 1)
            let state = try await rig.decider.projection.state(of: Self.device, store: rig.store)
            let late = try #require(state.triggers.first?.lateAnswers)
            #expect(late.count == 1)
            #expect(late.first?.provider == .appleAdServices && late.first?.offeredTouch == true)
        }
    }

    /// Deciding twice (two deciders, or a restart) appends one decision; recording the same fact
    /// twice enqueues its sends once.
    @Test func decidingAndRecordingAreIdempotent() async throws {
        try await Self.withRig { rig in
            let id = UUID()
            let first = try await rig.install(id: id)
            let again = try await rig.install(id: id)
            #expect(again.wasDuplicate && again.sends.isEmpty && again.position == first.position)
            try await rig.drainAll()
            var total = 0
            let deadline = ContinuousClock.now + .seconds(30)
            while try await rig.decisions().isEmpty, ContinuousClock.now < deadline {
                async let one = rig.decider.decidePending(now: Date())
                async let two = rig.decider.decidePending(now: Date())
                total += try await one.count + two.count
            }
            #expect(total == 1)
            #expect(try await rig.decisions().count == 1)
        }
    }

    /// A fix to the app's windows, then `decisions redo`: the changed outcome is a new decision
    /// superseding the old one (both in history), and Google is told again only about the ad
    /// event whose `attributed` value changed; a second redo changes nothing.
    @Test func redoAfterAFixSupersedesAndTellsGoogleOnlyWhatChanged() async throws {
        try await Self.withRig { rig in
            rig.fakes.apple.register(token: Self.token, outcome: Self.appleClick(minutesBeforeInstall: 24 * 60, install: rig.start))
            _ = try await rig.install()
            try await rig.drainAll()
            try await rig.decide(now: Date())
            try await rig.drainAll()
            #expect(rig.crossNetworkCalls().map(\.attributed) == ["1"])
            var fixed = AttributionSettings()
            fixed.defaults.windows.googleClick = 30 * 60  // Google's ad event (an hour before) is now outside
            let redoer = AttributionDecider(store: rig.store, settings: fixed, logger: TestDatabase.quietLogger)
            var report = RedoReport()
            let deadline = ContinuousClock.now + .seconds(30)  // the decision must be readable (gap-safe horizon)
            repeat {
                report = try await redoer.redo(ruleVersion: "1", since: nil, now: Date())
            } while report.examined == 0 && ContinuousClock.now < deadline
            #expect(report.examined == 1 && report.superseded.count == 1)
            let decisions = try await rig.decisions()
            try #require(decisions.count == 2)
            #expect(decisions[1].supersedes == decisions[0].decisionID)
            #expect(decisions[0].winner?.source == .google && decisions[1].winner?.source == .appleAdServices)
            try await rig.drainAll()
            #expect(rig.crossNetworkCalls().map(\.attributed) == ["1", "0"])
            var again = RedoReport()
            repeat {
                again = try await redoer.redo(ruleVersion: "last-click-v1", since: nil, now: Date())
                // Until the superseding decision is readable, the redo sees the old one as current and
                // its append is refused (the latest decision is no longer the one it would supersede).
            } while again.unchanged == 0 && again.superseded.isEmpty && ContinuousClock.now < deadline + .seconds(30)
            #expect(again.examined == 1 && again.unchanged == 1 && again.superseded.isEmpty)
            #expect(try await rig.decisions().count == 2)
            await #expect(throws: UnknownRuleVersion.self) { try await redoer.redo(ruleVersion: "2", since: nil, now: Date()) }
        }
    }

    /// The Google App Conversion Tracking API's obligation holds for every affirmative answer, an
    /// in-app purchase's too: it is reported against the device's decision, `attributed=1` when
    /// Google's winning campaign brought the user who bought, `0` when another source won the
    /// install.
    @Test(arguments: [(24 * 60, "1"), (10, "0")])
    func inAppConversionsAreReportedAgainstTheInstallDecision(appleMinutesBefore: Int, expected: String) async throws {
        try await Self.withRig { rig in
            rig.fakes.apple.register(token: Self.token, outcome: Self.appleClick(minutesBeforeInstall: appleMinutesBefore, install: rig.start))
            _ = try await rig.install()
            try await rig.drainAll()
            try await rig.decide(now: Date())
            try await rig.drainAll()
            #expect(rig.crossNetworkCalls().count == 1)
            let money = try Money(amount: "4.99", currency: try CurrencyCode("USD"))
            let purchaseAt = rig.start.addingTimeInterval(600)
            _ = try await rig.recorder.record(
                RevenueRecorded(device: Self.iosDevice(), revenue: money, kind: .iap, transactionID: "t-inapp"),
                app: try AppID(Self.app), device: try DeviceID("dev1"), id: UUID(), occurredAt: purchaseAt,
                metadata: EventMetadata(actor: "test"), now: Date())
            try await rig.drainAll()  // Google answers the purchase affirmatively (the fake's default)
            let deadline = ContinuousClock.now + .seconds(30)  // the obligation must be readable (gap-safe horizon)
            while rig.crossNetworkCalls().count < 2, ContinuousClock.now < deadline {
                try await rig.decider.decidePending(now: Date())
                try await rig.drainAll()
            }
            let calls = rig.crossNetworkCalls()
            #expect(calls.count == 2)
            #expect(calls.last?.attributed == expected)
            #expect(rig.fakes.google.anomalies.isEmpty, "\(rig.fakes.google.anomalies)")
            // Reported once: another pass requests nothing more.
            try await rig.decider.decidePending(now: Date())
            try await rig.drainAll()
            #expect(rig.crossNetworkCalls().count == 2)
        }
    }

    /// Google App Conversion Tracking API: "the cross-network attribution request is identical to
    /// the original conversion tracking request". A purchase recorded without the device's IP and
    /// user agent is sent with the last launch's (a session after the install's decision); its
    /// report, caused by that earlier decision, carries the same ones.
    @Test func aReportCarriesTheConversionsStandInDevice() async throws {
        try await Self.withRig { rig in
            _ = try await rig.install()
            try await rig.drainAll()
            try await rig.decide(now: Date())
            try await rig.drainAll()
            #expect(rig.crossNetworkCalls().count == 1)
            var later = Self.iosDevice()
            later.ip = "198.51.100.23"
            later.userAgent?.appVersion = "1.3.0"
            rig.fakes.google.setDefaultAnswer(.negative)  // the session's own conversion obliges nothing
            _ = try await rig.recorder.record(
                SessionStarted(device: later), app: try AppID(Self.app), device: try DeviceID("dev1"), id: UUID(),
                occurredAt: rig.start.addingTimeInterval(300), metadata: EventMetadata(actor: "test"), now: Date())
            try await rig.drainAll()
            rig.fakes.google.setDefaultAnswer(.affirmative())
            var bare = Self.iosDevice()
            bare.ip = nil
            bare.userAgent = nil
            _ = try await rig.recorder.record(
                RevenueRecorded(device: bare, revenue: try Money(amount: "4.99", currency: try CurrencyCode("USD")), kind: .iap,
                                transactionID: "t-standin"),
                app: try AppID(Self.app), device: try DeviceID("dev1"), id: UUID(), occurredAt: rig.start.addingTimeInterval(600),
                metadata: EventMetadata(actor: "test"), now: Date())
            try await rig.drainAll()
            let deadline = ContinuousClock.now + .seconds(30)  // the obligation must be readable (gap-safe horizon)
            while rig.crossNetworkCalls().count < 2, ContinuousClock.now < deadline {
                try await rig.decider.decidePending(now: Date())
                try await rig.drainAll()
            }
            let google = rig.fakes.google.requests
            let report = try #require(google.last { $0.path.hasSuffix("/cross_network") })
            let purchase = try #require(google.last {
                $0.queryValue("app_event_type") == "in_app_purchase" && !$0.path.hasSuffix("/cross_network")
            })
            #expect(purchase.headerValue("X-Forwarded-For") == "198.51.100.23")
            #expect(report.headerValue("X-Forwarded-For") == purchase.headerValue("X-Forwarded-For"))
            #expect(report.headerValue("User-Agent") == purchase.headerValue("User-Agent"))
        }
    }

    /// An install decided for Google, whose cross-network report Google refuses for good (400).
    func refusedReport(_ rig: Rig) async throws {
        _ = try await rig.install()
        try await rig.drainAll()
        rig.fakes.google.enqueue(.status(400, body: #"{"errors":["bad request"]}"#))  // the report's answer
        try await rig.decide(now: Date())
        try await rig.drainAll()
    }

    /// The obligations the projection's table shows open with one report, once it has caught up
    /// (gap-safe horizon; the decider's passes move it), within 30 s.
    func owedWithOneReport(_ rig: Rig) async throws -> Int {
        let deadline = ContinuousClock.now + .seconds(30)
        var owed = 0
        while owed == 0, ContinuousClock.now < deadline {
            try await rig.decider.decidePending(now: Date())
            owed = try await rig.store.pool.query("""
                SELECT count(*) FROM google_obligations_rows WHERE state = 'open' AND cross_network_sends = 1
                """).single().decode(Int.self, at: 0)
        }
        return owed
    }

    /// Google App Conversion Tracking API: a report Google refused for good (a 400) leaves its
    /// obligation open, still owed for ops to see, but the decider does not request it again by
    /// itself, and its passes no longer read the device for it; ops can request it again
    /// (`ledger decisions report-again`).
    @Test func aReportRefusedForGoodIsRequestedAgainOnlyByOps() async throws {
        try await Self.withRig { rig in
            try await refusedReport(rig)
            #expect(rig.crossNetworkCalls().count == 1)
            #expect(try await owedWithOneReport(rig) == 1, "the obligation is still owed")
            let open = try await rig.decider.obligations.state(of: Self.device, store: rig.store).obligations.values
            #expect(open.first?.failures.isEmpty == false)
            #expect(try await rig.decider.devicesOwingGoogle().isEmpty)
            try await rig.decider.decidePending(now: Date())
            try await rig.drainAll()
            #expect(rig.crossNetworkCalls().count == 1)

            // Ops, once the cause is fixed: the failed report is requested again, once, and the
            // obligation closes.
            #expect(try await rig.decider.requestFailedReportsAgain(now: Date()) == 1)
            #expect(try await rig.decider.requestFailedReportsAgain(now: Date()) == 0, "requested, not failed")
            try await rig.drainAll()
            #expect(rig.crossNetworkCalls().count == 2)
            let obligation = try await rig.decider.obligations.state(of: Self.device, store: rig.store).obligations.values.first
            #expect(obligation?.state == .closed && obligation?.crossNetworkSends.count == 2)
            #expect(try await rig.decider.requestFailedReportsAgain(now: Date()) == 0)
        }
    }

    /// An erased device's failed reports are never requested again: Google would get a request
    /// for a device whose data is gone. (Two guards hold this: the device query skips erased
    /// devices, and a replay of an erased device yields no obligation; either alone passes.)
    @Test func anErasedDevicesFailedReportIsNotRequestedAgain() async throws {
        try await Self.withRig { rig in
            try await refusedReport(rig)
            _ = try await DeviceEraser(store: rig.store).erase(device: try StreamID(Self.device), requestedBy: "test",
                                                               requestedAt: Date())
            #expect(try await owedWithOneReport(rig) == 1, "the table still shows the obligation owed")
            #expect(try await rig.decider.requestFailedReportsAgain(now: Date()) == 0)
        }
    }

    /// No provider enabled: nothing to wait for, the install is organic at once.
    @Test func noProvidersMeansOrganicAtOnce() async throws {
        let settings = AttributionSettings(defaults: AppAttributionSettings(providers: []))
        try await Self.withRig(settings: settings) { rig in
            let fact = try await rig.install()
            #expect(fact.sends.isEmpty)
            let made = try await rig.decide(now: Date())
            #expect(made.count == 1 && made.first?.winner == nil)
            #expect(try await rig.decisions().first?.organic == true)
        }
    }
}
