import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import Metrics
import MetricsTestKit
import Testing

/// The metrics system of this test process: bootstrapped once (swift-metrics allows one
/// bootstrap per process); other tests' metrics land here too, so checks are lower bounds.
let processMetrics: TestMetrics = {
    let metrics = TestMetrics()
    MetricsSystem.bootstrap(metrics)
    return metrics
}()

/// Issue 6: metrics exported — queue depth by provider, oldest pending age, rescues, outcomes by
/// provider and status, attempt latency.
@Suite("Worker metrics")
struct WorkerMetricsTests {
    @Test func theWorkerExportsItsMetrics() async throws {
        let metrics = processMetrics
        try await WorkerTests.withRig { rig in
            rig.fakes.apple.register(token: Data("metrics".utf8).base64EncodedString())
            let cause = try await record(
                FirstOpen(appID: try AppID("app1"), device: iosDevice(),
                          adServicesToken: LedgerDomain.AdServicesToken(token: Data("metrics".utf8).base64EncodedString(),
                                                                        issuedAt: testEpoch)),
                to: "device-app1/metrics", at: testEpoch, store: rig.store)
            try await enqueue(.appleAdServices, .tokenLookup, cause: cause, device: "device-app1/metrics", key: "m:1",
                              now: testEpoch, store: rig.store)
            try await rig.worker.drain()
            let outcomes = metrics.counters(label: "ledger_send_outcomes_total").filter { counter in
                counter.dimensions.contains { $0 == ("provider", "apple_adservices") }
                    && counter.dimensions.contains { $0 == ("outcome", "succeeded") }
                    && counter.dimensions.contains { $0 == ("status", "200") }
            }
            #expect(outcomes.reduce(0) { $0 + $1.totalValue } >= 1)
            let latency = try metrics.expectTimer("ledger_send_attempt_seconds", [("provider", "apple_adservices")])
            #expect(!latency.values.isEmpty)
            let depth = try metrics.expectGauge("ledger_send_queue_depth", [("provider", "apple_adservices")])
            #expect(depth.lastValue != nil)
            _ = try metrics.expectGauge("ledger_send_oldest_pending_seconds", [("provider", "apple_adservices")])
        }
    }
}
