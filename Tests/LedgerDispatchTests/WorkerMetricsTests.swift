import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import MetricsTestKit
import Testing

/// docs/dispatch.md, "Metrics": queue depth and oldest pending age by provider, rescues, outcomes
/// by provider, outcome and status, attempt latency — read from what the worker itself emitted
/// while it did real work, into a registry of the test's own (`ScopedMetrics`), so every value is
/// exact.
@Suite("Worker metrics", .database)
struct WorkerMetricsTests {
    /// Three Apple lookups on one slot, nothing ahead, enqueued 30 s before the drain: one found
    /// (200), one too soon (404, retried in 5 s), one invalid (400).
    @Test func theWorkerExportsItsMetrics() async throws {
        let metrics = TestMetrics()
        try await WorkerTests.withRig(slots: 1, prefetch: 0) { rig in
            let outcomes: [(token: String, status: Int)] = [("bWV0cmljcy1vaw==", 200), ("bWV0cmljcy1zb29u", 404),
                                                            ("bWV0cmljcy1pbnZhbGlk", 400)]
            rig.fakes.apple.register(token: outcomes[0].token, issuedAt: testEpoch)
            rig.fakes.apple.register(token: outcomes[1].token, readiness: .afterLookups(1), issuedAt: testEpoch)
            rig.fakes.apple.register(token: outcomes[2].token, issuedAt: testEpoch)
            rig.fakes.apple.markInvalid(token: outcomes[2].token)
            for (index, outcome) in outcomes.enumerated() {
                let device = "device-app1/metrics\(index)"
                let cause = try await record(
                    FirstOpen(appID: try AppID("app1"), device: iosDevice(),
                              adServicesToken: LedgerDomain.AdServicesToken(token: outcome.token, issuedAt: testEpoch)),
                    to: device, at: testEpoch, store: rig.store)
                try await enqueue(.appleAdServices, .tokenLookup, cause: cause, device: device, key: "m:\(index)", now: testEpoch,
                                  store: rig.store)
            }
            rig.clock.advance(by: 30)
            let tries = try await ScopedMetrics.withMetrics(metrics) { try await rig.worker.drain() }
            #expect(tries == 3)
            #expect(rig.fakes.apple.requestCount == 3)
        }
        let apple = ("provider", "apple_adservices")
        func outcomes(_ outcome: String, _ status: String) -> Int64 {
            metrics.counterTotal(label: "ledger_send_outcomes_total", dimensions: [apple, ("outcome", outcome), ("status", status)])
        }
        #expect(outcomes("succeeded", "200") == 1)
        #expect(outcomes("retry", "404") == 1)
        #expect(outcomes("failed", "400") == 1)
        #expect(metrics.counterTotal(label: "ledger_send_outcomes_total") == 3)
        #expect(metrics.counters(label: "ledger_send_outcomes_total").allSatisfy { $0.dimensions.count == 3 })
        #expect(try metrics.expectTimer("ledger_send_attempt_seconds", [apple]).values.count == 3)
        #expect(metrics.timers(label: "ledger_send_attempt_seconds").count == 1)
        // One claim per turn (one slot): the others pending as it is claimed — two, then one, then
        // the retried send waiting out its 5 s at the third claim and at the last turn, which
        // claims nothing. Each enqueued 30 s before.
        #expect(try metrics.expectGauge("ledger_send_queue_depth", [apple]).values == [2, 1, 1, 1])
        #expect(try metrics.expectGauge("ledger_send_oldest_pending_seconds", [apple]).values == [30, 30, 30, 30])
        #expect(metrics.counterTotal(label: "ledger_send_rescues_total") == 0)
    }

    /// A send claimed by a worker that is gone (it holds no liveness lock) is rescued by the next
    /// worker's first turn, then tried: one rescue, one success.
    @Test func aRescueIsCounted() async throws {
        let metrics = TestMetrics()
        try await WorkerTests.withRig { rig in
            let cause = try await WorkerTests().install(rig)
            try await enqueue(.appleAdServices, .tokenLookup, cause: cause, device: WorkerTests.device, key: "m:rescue",
                              now: testEpoch, store: rig.store)
            let claimed = try await rig.store.pool.withConnection { connection in
                try SendQueue.claim(limit: 1, owner: "gone-worker", now: testEpoch, lease: 30, on: connection).count
            }
            #expect(claimed == 1)
            #expect(try await ScopedMetrics.withMetrics(metrics) { try await rig.worker.drain() } == 1)
            #expect(rig.fakes.apple.requestCount == 1)
        }
        #expect(try metrics.expectCounter("ledger_send_rescues_total").totalValue == 1)
        #expect(metrics.counterTotal(
            label: "ledger_send_outcomes_total",
            dimensions: [("provider", "apple_adservices"), ("outcome", "succeeded"), ("status", "200")]) == 1)
        #expect(metrics.counterTotal(label: "ledger_send_outcomes_total") == 1)
    }

    /// Outside `ScopedMetrics.withMetrics` a test's registry sees nothing: other tests' work
    /// never lands in it.
    @Test func anotherTestsWorkDoesNotLandInThisTestsRegistry() async throws {
        let metrics = TestMetrics()
        await ScopedMetrics.withMetrics(metrics) {}
        try await WorkerTests.withRig { rig in
            let cause = try await WorkerTests().install(rig)
            try await enqueue(.appleAdServices, .tokenLookup, cause: cause, device: WorkerTests.device, key: "m:other",
                              now: testEpoch, store: rig.store)
            #expect(try await rig.worker.drain() == 1)
        }
        #expect(metrics.counters.isEmpty && metrics.timers.isEmpty && metrics.recorders.isEmpty)
    }
}
