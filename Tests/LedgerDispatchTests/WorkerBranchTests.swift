import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import LedgerProviders
import LedgerStore
import LedgerTestKit
import Testing

/// Branch opens through the worker and the fake Branch over HTTP.
extension WorkerTests {
    // Branch v1/open server-to-server guide: a 429 answers opens "in rapid succession" — "please
    // wait a few minutes" — while Branch's SDKs retry a 5xx (3 times) on their own count. Three
    // 429s do not use up the 5xx retries: the 500 after them is retried, and the open succeeds.
    @Test func branch429sAndServerErrorsAreCountedApart() async throws {
        try await Self.withRig { rig in
            let cause = try await install(rig, token: nil)
            rig.fakes.branch.enqueue(.status(429), .status(429), .status(429), .status(500))
            let send = try await enqueue(.branch, .open, cause: cause, device: Self.device, key: "b:429-500", now: testEpoch,
                                         store: rig.store)
            let stream = StreamID.send(id: send.sendID).rawValue
            for _ in 0..<8 where try await queueCount(rig.store) > 0 {
                _ = try await rig.worker.drain()
                if let due = try await retries(of: stream, rig).last?.notBefore { rig.clock.set(max(due, rig.clock.now())) }
            }
            #expect(rig.fakes.branch.requestCount == 5)
            let events = try await rig.store.readStream(stream)
            #expect(events.last?.type == "SendSucceeded", "\(String(decoding: events.last?.data ?? Data(), as: UTF8.self))")
            let retried = try await retries(of: stream, rig)
            #expect(retried.map(\.rule) == ["branch_429_backoff", "branch_429_backoff", "branch_429_backoff", "branch_5xx_retry"])
            // The 429 back-off is minutes and grows with the 429s alone (5, 10, 15 minutes); the 500,
            // the first server error, gets the first 5xx back-off (2 s), not the fourth.
            let tried = events.filter { $0.type == SendAttempted.eventType }.map(\.occurredAt)
            let waits = zip(tried, retried).map { $1.notBefore.timeIntervalSince($0).rounded() }
            #expect(waits == [300, 600, 900, 2])
        }
    }
}
