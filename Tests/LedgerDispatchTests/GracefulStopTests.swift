import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import LedgerStore
import LedgerTestKit
import Logging
import ServiceLifecycle
import Synchronization
import Testing

/// docs/dispatch.md: on SIGTERM (`ledger worker`'s `ServiceGroup` shuts the worker down
/// gracefully, which cancels its loop) the worker claims nothing more and lets the tries in flight
/// finish and record their outcomes. Cancelling the task that runs it does the same.
@Suite(.database) struct GracefulStopTests {
    @Test func cancellingTheLoopLetsATryInFlightRecordItsOutcome() async throws {
        try await stopWithATryInFlight { rig in
            let running = Task { try await rig.worker.run() }
            return (stop: { running.cancel() }, running: { try await running.value })
        }
    }

    @Test func aServiceGroupsGracefulShutdownLetsATryInFlightRecordItsOutcome() async throws {
        try await stopWithATryInFlight { rig in
            let group = ServiceGroup(services: [rig.worker], logger: Logger(label: "test.group"))
            let running = Task { try await group.run() }
            return (stop: { await group.triggerGracefulShutdown() }, running: { try await running.value })
        }
    }

    /// Starts the worker with `start`, stops it while a call is out, and checks that the loop
    /// waited for the answer and recorded it before returning (without an error).
    func stopWithATryInFlight(
        _ start: (WorkerTests.Rig) -> (stop: @Sendable () async -> Void, running: @Sendable () async throws -> Void)
    ) async throws {
        try await WorkerTests.withRig { rig in
            let token = "dG9rZW4tZm9yLWdyYWNlZnVs"
            rig.fakes.apple.register(token: token, issuedAt: testEpoch)
            let cause = try await record(
                FirstOpen(appID: try AppID("app1"), device: iosDevice(),
                          adServicesToken: LedgerDomain.AdServicesToken(token: token, issuedAt: testEpoch)),
                to: WorkerTests.device, at: testEpoch, store: rig.store)
            // The answer is held until the stop has come: the call is in flight by construction.
            let inFlight = FakeGate()
            rig.fakes.apple.enqueue(.held(by: inFlight))
            let send = try await enqueue(.appleAdServices, .tokenLookup, cause: cause, device: WorkerTests.device,
                                         key: "apple:graceful", now: testEpoch, store: rig.store)
            let stream = StreamID.send(id: send.sendID).rawValue
            let returned = Atomic<Bool>(false)
            let (stop, run) = start(rig)
            let running = Task {
                try await run()
                returned.store(true, ordering: .sequentiallyConsistent)
            }
            #expect(await inFlight.waitUntilHolding(1))
            await stop()
            // The stop came while the call was out: the provider has not answered, the try has no
            // outcome, and the loop has not returned.
            #expect(inFlight.held == 1 && rig.fakes.requestsInFlight == 1)
            #expect(try await streamTypes(stream, store: rig.store) == ["SendRequested", "SendAttempted"])
            let returnedEarly = returned.load(ordering: .sequentiallyConsistent)
            #expect(!returnedEarly)
            inFlight.open()
            try await running.value
            // Read as soon as the loop returned: it waited for the answer and recorded it.
            #expect(try await streamTypes(stream, store: rig.store) == [
                "SendRequested", "SendAttempted", "ResponseReceived", "SendSucceeded",
            ])
            #expect(try await queueCount(rig.store) == 0)
            #expect(rig.fakes.apple.requestCount == 1)
        }
    }
}
