import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import LedgerStore
import Testing

/// docs/dispatch.md: on SIGTERM (`ledger worker` cancels the loop) the worker claims nothing more
/// and lets the tries in flight finish and record their outcomes.
@Suite struct GracefulStopTests {
    @Test func cancellingTheLoopLetsATryInFlightRecordItsOutcome() async throws {
        try await WorkerTests.withRig { rig in
            let cause = try await record(
                FirstOpen(appID: try AppID("app1"), device: iosDevice(),
                          adServicesToken: LedgerDomain.AdServicesToken(token: "dG9rZW4tZm9yLWdyYWNlZnVs", issuedAt: testEpoch)),
                to: WorkerTests.device, at: testEpoch, store: rig.store)
            rig.fakes.apple.enqueue(.stall(.seconds(1)))  // the answer comes while the loop is being stopped
            let send = try await enqueue(.appleAdServices, .tokenLookup, cause: cause, device: WorkerTests.device,
                                         key: "apple:graceful", now: testEpoch, store: rig.store)
            let running = Task { try await rig.worker.run() }
            let deadline = ContinuousClock.now + .seconds(30)
            while rig.fakes.apple.requestCount == 0, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(rig.fakes.apple.requestCount == 1)
            running.cancel()
            try await running.value
            #expect(try await streamTypes(StreamID.send(id: send.sendID).rawValue, store: rig.store) == [
                "SendRequested", "SendAttempted", "ResponseReceived", "SendSucceeded",
            ])
            #expect(try await queueCount(rig.store) == 0)
        }
    }
}
