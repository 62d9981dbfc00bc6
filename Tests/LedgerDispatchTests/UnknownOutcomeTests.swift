import Foundation
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

/// Delivery after an unknown outcome (docs/dispatch.md): a worker whose lease runs out while its
/// call is out (its `SendAttempted` committed, no answer) is rescued by another worker through the
/// real queue, over real HTTP against the fakes. Singular, which does not deduplicate (Singular
/// SKAdNetwork 4 implementation guide: "In case of retrying an event, avoid calling this method so
/// the same revenue will not be counted twice"), is parked and never requested again by itself;
/// Google (Google App Conversion Tracking API: a conversion names its event by its own
/// `timestamp`) is requested again.
@Suite("Delivery after an unknown outcome", .database, .serialized)
struct UnknownOutcomeTests {
    /// A second worker over the rig's store, fakes and clock: the one that finds the first
    /// worker's try past its lease and rescues it.
    static func withRescuer(_ rig: WorkerTests.Rig, _ body: (SendWorker) async throws -> Void) async throws {
        let transport = HTTPProviderTransport()
        let rules = ProviderSendRules(
            google: GoogleConversionRequestBuilder(link: rig.fakes.googleLink, endpoint: rig.fakes.googleEndpoint),
            adServices: rig.fakes.appleEndpoint, branch: rig.fakes.branchConfiguration, singular: rig.fakes.singularConfiguration)
        let rescuer = SendWorker(
            store: rig.store, rules: rules, transport: transport,
            configuration: .init(workerID: "rescuing-worker", slots: 4, lease: 30, requestTimeout: .seconds(5)),
            clock: rig.clock, jitter: { 0.5 }, logger: TestDatabase.quietLogger)
        do {
            try await body(rescuer)
        } catch {
            await transport.shutdown()
            throw error
        }
        await transport.shutdown()
    }

    /// The queue row's state of `sendID` (nil: not in the queue).
    static func queueState(_ sendID: UUID, _ store: EventStore) async throws -> String? {
        try await store.pool.query("SELECT state FROM send_queue WHERE send_id = \(sendID)").first?.decode(String.self, at: 0)
    }

    /// Runs the rig's worker until its call to `fake` is out and held, moves the clock past its
    /// lease, and lets `rescuer` take a turn; then lets the held answer through (it comes after
    /// the rescue, so it writes nothing) and waits for the first worker to finish.
    static func loseTheOutcome(_ rig: WorkerTests.Rig, fake: any FakeProvider, rescuer: SendWorker,
                               metrics: TestMetrics) async throws -> Int {
        let stalled = FakeGate()
        fake.enqueue(.held(by: stalled))
        async let first = rig.worker.drain()
        #expect(await stalled.waitUntilHolding(1))
        rig.clock.advance(by: 31)
        let rescuerTries = try await ScopedMetrics.withMetrics(metrics) { try await rescuer.drain() }
        stalled.open()
        _ = try await first
        return rescuerTries
    }

    // Singular SKAdNetwork 4 implementation guide: a repeat may count an event twice, and Singular
    // does not deduplicate. The send whose outcome is unknown is parked (SendParked, rule
    // singular_outcome_unknown); no second request reaches the fake Singular, not even after more
    // turns; the device's later Singular call waits behind it in its lane; a queue rebuilt from
    // the log keeps it parked; `ParkedSends.retry` (what `ledger sends retry` runs) sends it once.
    @Test func aSingularSendWhoseOutcomeIsUnknownIsParkedUntilAnOperatorRetriesIt() async throws {
        let metrics = TestMetrics()
        try await WorkerTests.withRig { rig in
            let install = try await WorkerTests().install(rig)
            try await record(SKANRegistered(), to: WorkerTests.device, at: testEpoch, store: rig.store)
            // Singular's measurement windows count from the first SKAN call, by the worker's clock.
            let clock = rig.clock
            rig.fakes.singular.setClock { clock.now() }
            let send = try await enqueue(.singular, .conversionValue, cause: install, device: WorkerTests.device, key: "s:open",
                                         now: testEpoch, store: rig.store)
            let stream = StreamID.send(id: send.sendID).rawValue
            try await Self.withRescuer(rig) { rescuer in
                let rescuerTries = try await Self.loseTheOutcome(rig, fake: rig.fakes.singular, rescuer: rescuer, metrics: metrics)
                #expect(rescuerTries == 0, "the rescuer claims nothing: the send is parked")
                #expect(try await streamTypes(stream, store: rig.store) == [
                    "SendRequested", "SendAttempted", "SendOutcomeUnknown", "SendParked",
                ])
                let parked = try LedgerJSON.makeDecoder().decode(
                    SendParked.self, from: try #require(try await rig.store.readStream(stream).last).data)
                #expect(parked.rule == "singular_outcome_unknown" && parked.attempt == 1)
                #expect(try await Self.queueState(send.sendID, rig.store) == "parked")

                // A later call of the device waits behind the parked one; nothing is requested.
                let session = try await record(SessionStarted(device: iosDevice()), to: WorkerTests.device,
                                               at: testEpoch.addingTimeInterval(40), store: rig.store)
                let later = try await enqueue(.singular, .conversionValue, cause: session, device: WorkerTests.device,
                                              key: "s:session", now: rig.clock.now(), store: rig.store)
                rig.clock.advance(by: 3_600)
                #expect(try await rig.worker.drain() == 0)
                #expect(try await rescuer.drain() == 0)
                #expect(rig.fakes.singular.requestCount == 1, "no second request reached Singular")

                // The queue rebuilt from the log keeps it parked.
                _ = try await rig.store.pool.withConnection { try SendQueue.rebuild(on: $0) }
                #expect(try await Self.queueState(send.sendID, rig.store) == "parked")
                #expect(try await Self.queueState(later.sendID, rig.store) == "pending")
                #expect(try await rig.worker.drain() == 0)

                // The operator's retry: pending again, then one request, then the later call.
                try await rig.store.pool.withConnection { connection in
                    try ParkedSends.retry(send.sendID, by: "ops-oncall", reason: "not in Singular's event log",
                                          now: rig.clock.now(), store: rig.store, on: connection)
                }
                #expect(try await Self.queueState(send.sendID, rig.store) == "pending")
                #expect(try await rig.worker.drain() == 2)
                #expect(rig.fakes.singular.requestCount == 3, "the retried send once, then the session that waited")
                let settled = try await rig.store.readStream(stream)
                #expect(settled.map(\.type) == [
                    "SendRequested", "SendAttempted", "SendOutcomeUnknown", "SendParked", "SendUnparked",
                    "SendAttempted", "ResponseReceived", "SendSucceeded",
                ], "\(String(decoding: settled.last?.data ?? Data(), as: UTF8.self))")
                #expect(try await queueCount(rig.store) == 0)

                // Settled: a second retry or a cancel is refused, and says why.
                let error = await #expect(throws: SendSettlementError.self) {
                    try await rig.store.pool.withConnection { connection in
                        try ParkedSends.cancel(send.sendID, by: "ops", reason: "late", now: rig.clock.now(), store: rig.store,
                                               on: connection)
                    }
                }
                #expect(error == .notParked(sendID: send.sendID, state: "ended with SendSucceeded"))
                let unknown = UUID()
                let missing = await #expect(throws: SendSettlementError.self) {
                    try await rig.store.pool.withConnection { connection in
                        try ParkedSends.retry(unknown, by: "ops", reason: "typo", now: rig.clock.now(), store: rig.store,
                                              on: connection)
                    }
                }
                #expect(missing == .unknownSend(sendID: unknown))
            }
        }
        #expect(metrics.counterTotal(label: SendsNeedingPeople.metricLabel, dimensions: [
            ("provider", "singular"), ("app", "app1"), ("state", "parked"), ("rule", "singular_outcome_unknown"),
        ]) == 1)
        #expect(metrics.counterTotal(label: SendsNeedingPeople.metricLabel) == 1)
        // The rescuer's turn: parked after its rescue, so its gauge reads one.
        #expect(try metrics.expectGauge("ledger_send_parked", [("provider", "singular")]).values.last == 1)
    }

    // Google App Conversion Tracking API: every try of a conversion carries the same event
    // `timestamp` and identifiers, so a repeat after an unknown outcome is made at once (retry).
    @Test func aGoogleSendWhoseOutcomeIsUnknownIsRequestedAgain() async throws {
        let metrics = TestMetrics()
        try await WorkerTests.withRig { rig in
            let install = try await WorkerTests().install(rig)
            let send = try await enqueue(.google, .conversion, cause: install, device: WorkerTests.device, key: "g:open",
                                         now: testEpoch, store: rig.store)
            let stream = StreamID.send(id: send.sendID).rawValue
            try await Self.withRescuer(rig) { rescuer in
                let rescuerTries = try await Self.loseTheOutcome(rig, fake: rig.fakes.google, rescuer: rescuer, metrics: metrics)
                #expect(rescuerTries == 1)
            }
            #expect(rig.fakes.google.requestCount == 2)
            #expect(try await streamTypes(stream, store: rig.store) == [
                "SendRequested", "SendAttempted", "SendOutcomeUnknown", "SendAttempted", "ResponseReceived", "SendSucceeded",
            ])
            #expect(try await queueCount(rig.store) == 0)
        }
        #expect(metrics.counterTotal(label: SendsNeedingPeople.metricLabel) == 0)
        #expect(metrics.counterTotal(label: "ledger_send_rescues_total") == 1)
    }

    // Google App Conversion Tracking API: "unknown codes are terminal". A send failed for good
    // needs people: the metric counts it by provider, app, state and rule.
    @Test func aSendFailedForGoodIsCountedAsNeedingPeople() async throws {
        let metrics = TestMetrics()
        try await WorkerTests.withRig { rig in
            let install = try await WorkerTests().install(rig)
            rig.fakes.google.enqueue(.googleErrors(["INVALID_CURRENCY_CODE"]))
            try await enqueue(.google, .conversion, cause: install, device: WorkerTests.device, key: "g:failed",
                              now: testEpoch, store: rig.store)
            #expect(try await ScopedMetrics.withMetrics(metrics) { try await rig.worker.drain() } == 1)
            let failed = try await rig.store.pool.withConnection { try SendsNeedingPeople.list(state: .failed, on: $0) }
            #expect(failed.count == 1)
            let rule = try #require(failed.first?.rule)
            #expect(metrics.counterTotal(label: SendsNeedingPeople.metricLabel, dimensions: [
                ("provider", "google"), ("app", "app1"), ("state", "failed"), ("rule", rule),
            ]) == 1)
        }
        #expect(metrics.counterTotal(label: SendsNeedingPeople.metricLabel) == 1)
    }
}
