import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import LedgerStore
import LedgerTestSupport
import Testing

/// Sends recorded ahead of a free slot (`SendWorker.Configuration.prefetch`): the time is looked
/// at again when the slot comes, so waiting never breaks a provider's rule or the lease.
extension WorkerTests {
    /// Three Apple token lookups on a worker with two slots and one send ahead: two calls start,
    /// the third send is claimed and recorded and waits. `tokenIssuedAt` for every token.
    func startThreeLookups(_ rig: Rig, tokenIssuedAt: Date) async throws -> (running: Task<Void, any Error>, streams: [String]) {
        let streams = try await enqueueLookups(rig, count: 3, prefix: "ahead", tokenIssuedAt: tokenIssuedAt)
        // Long enough for the test to move the clock before the first answer frees a slot.
        rig.fakes.apple.setDelay(.milliseconds(1500))
        let running = Task { try await rig.worker.run() }
        #expect(await rig.fakes.apple.waitForRequests(2, timeout: .seconds(10)))
        return (running, streams)
    }

    /// `count` Apple token lookups, one per new device: their send streams.
    func enqueueLookups(_ rig: Rig, count: Int, prefix: String, tokenIssuedAt: Date = testEpoch) async throws -> [String] {
        var streams: [String] = []
        for (device, cause) in try await firstOpens(rig, count: count, prefix: prefix, tokenIssuedAt: tokenIssuedAt) {
            let send = try await enqueue(.appleAdServices, .tokenLookup, cause: cause, device: device, key: device, now: testEpoch,
                                         store: rig.store)
            streams.append(StreamID.send(id: send.sendID).rawValue)
        }
        return streams
    }

    /// Waits for the queue to empty, stops the worker, and returns each stream's event types.
    func finish(_ rig: Rig, _ running: Task<Void, any Error>, streams: [String]) async throws -> [[String]] {
        try await waitUntil { try await queueCount(rig.store) == 0 }
        running.cancel()
        try await running.value
        var histories: [[String]] = []
        for stream in streams { histories.append(try await streamTypes(stream, store: rig.store)) }
        return histories
    }

    func waitUntil(_ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline, try await !condition() {
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    // seed 002 (Apple AdServices): a token past its 24 h TTL is expired, no call — also when its
    // send was claimed and recorded in time but waited for a slot past the TTL.
    @Test func aSendRecordedAheadWhoseTokenExpiredWhileWaitingIsNotCalled() async throws {
        try await Self.withRig(slots: 2, prefetch: 1) { rig in
            // The tokens have 20 s to live when the sends are claimed.
            let (running, streams) = try await startThreeLookups(rig, tokenIssuedAt: testEpoch.addingTimeInterval(-86_400 + 20))
            #expect(rig.fakes.apple.requestCount == 2)
            rig.clock.advance(by: 21)  // while the third waits for a slot
            let histories = try await finish(rig, running, streams: streams)
            #expect(rig.fakes.apple.requestCount == 2)
            #expect(histories.filter { $0.last == "SendSucceeded" }.count == 2)
            let expired = try #require(histories.firstIndex { $0.last == "SendFailed" })
            #expect(histories[expired] == ["SendRequested", "SendAttempted", "SendFailed"])
            let failure = try #require(try await rig.store.readStream(streams[expired]).last)
            let failed = try LedgerJSON.makeDecoder().decode(SendFailed.self, from: failure.data)
            // The try was recorded: its failure names the attempt.
            #expect(failed.rule == "adservices_token_expired" && failed.attempt == 1)
        }
    }

    // Issue 6 (leases): a try is never called when its lease could run out during the call — a
    // rescue could then try the send again while the first call is still out. A send recorded
    // ahead that waited too long is left to its lease: the rescue records it as outcome-unknown,
    // the next try calls once, and the provider sees one call per send.
    @Test func aSendRecordedAheadIsNotCalledWhenItsLeaseWouldRunOutDuringTheCall() async throws {
        try await Self.withRig(slots: 2, prefetch: 1) { rig in
            let (running, streams) = try await startThreeLookups(rig, tokenIssuedAt: testEpoch)
            rig.clock.advance(by: 26)  // 4 s of the 30 s lease left; the call may take 5, and a tenth is kept
            // The two calls end and settle; the third stays claimed, uncalled.
            try await waitUntil { try await queueCount(rig.store) == 1 }
            #expect(rig.fakes.apple.requestCount == 2)
            rig.clock.advance(by: 5)  // past the lease: rescued, claimed again, called
            let histories = try await finish(rig, running, streams: streams)
            #expect(rig.fakes.apple.requestCount == 3)
            #expect(histories.allSatisfy { $0.last == "SendSucceeded" })
            #expect(histories.filter { $0.contains("SendOutcomeUnknown") } == [
                ["SendRequested", "SendAttempted", "SendOutcomeUnknown", "SendAttempted", "ResponseReceived", "SendSucceeded"],
            ])
        }
    }

    // seed 003 (Branch `v1/open`): `apple_attribution_token` only within the token's 24 h TTL.
    // A Branch open built with the token that waits for its slot past the TTL is not sent as
    // built: the try is retried at once, and the open that goes out has no token.
    @Test func aRequestThatChangedWhileItsSendWaitedIsNotSentAsRecorded() async throws {
        try await Self.withRig(slots: 2, prefetch: 1) { rig in
            var streams: [String] = []
            for (device, cause) in try await firstOpens(rig, count: 3, prefix: "open", tokenIssuedAt: testEpoch.addingTimeInterval(-86_400 + 20)) {
                let send = try await enqueue(.branch, .open, cause: cause, device: device, key: device, now: testEpoch, store: rig.store)
                streams.append(StreamID.send(id: send.sendID).rawValue)
            }
            rig.fakes.branch.setDelay(.milliseconds(1500))
            let running = Task { try await rig.worker.run() }
            #expect(await rig.fakes.branch.waitForRequests(2, timeout: .seconds(10)))
            rig.clock.advance(by: 21)  // the tokens pass their 24 h while the third open waits
            let histories = try await finish(rig, running, streams: streams)
            let opens = rig.fakes.branch.requests
            #expect(opens.count == 3)
            #expect(opens.filter { $0.bodyText.contains("apple_attribution_token") }.count == 2)
            #expect(histories.filter { $0.contains("RetryScheduled") } == [
                ["SendRequested", "SendAttempted", "RetryScheduled", "SendAttempted", "ResponseReceived", "SendSucceeded"],
            ])
            let retried = try #require(zip(streams, histories).first { $0.1.contains("RetryScheduled") }?.0)
            let retry = try #require(try await rig.store.readStream(retried).first { $0.type == "RetryScheduled" })
            #expect(try LedgerJSON.makeDecoder().decode(RetryScheduled.self, from: retry.data).rule == "request_changed_while_waiting")
        }
    }

    // Issue 6 (graceful stop): SIGTERM finishes what is in flight — the sends claimed ahead too:
    // their tries are recorded, so they are called as slots free and settled before the worker
    // returns; nothing is left running for a rescue.
    @Test func aStopFinishesTheSendsClaimedAhead() async throws {
        try await Self.withRig(slots: 2, prefetch: 2) { rig in
            let streams = try await enqueueLookups(rig, count: 4, prefix: "stop")
            rig.fakes.apple.setDelay(.milliseconds(500))
            let running = Task { try await rig.worker.run() }
            #expect(await rig.fakes.apple.waitForRequests(2, timeout: .seconds(10)))
            running.cancel()  // two calls out, two sends recorded and waiting for a slot
            try await running.value
            #expect(try await queueCount(rig.store) == 0)
            #expect(rig.fakes.apple.requestCount == 4)
            for stream in streams {
                #expect(try await streamTypes(stream, store: rig.store) == ["SendRequested", "SendAttempted", "ResponseReceived", "SendSucceeded"])
            }
        }
    }
}
