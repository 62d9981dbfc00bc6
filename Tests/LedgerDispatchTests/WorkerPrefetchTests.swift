import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import Testing

/// Sends recorded ahead of a free slot (`SendWorker.Configuration.prefetch`): the time is looked
/// at again when the slot comes, so waiting never breaks a provider's rule or the lease.
extension WorkerTests {
    /// Three Apple token lookups on a worker with two slots and one send ahead: two calls start
    /// and the fake holds their answers (`gate`); the third send is claimed, recorded, and waits
    /// for a slot. `tokenIssuedAt` for every token, each lookup answered as `readiness` says.
    /// Returns once all three tries are recorded, so the test moves the clock while the third send
    /// waits, whatever the machine's load.
    func startThreeLookups(
        _ rig: Rig, tokenIssuedAt: Date, readiness: FakeAppleAdServices.Readiness = .immediately
    ) async throws -> (running: Task<Void, any Error>, streams: [String], gate: FakeGate) {
        let streams = try await enqueueLookups(rig, count: 3, prefix: "ahead", tokenIssuedAt: tokenIssuedAt)
        rig.fakes.apple.setReadinessOfEveryToken(readiness)
        let gate = FakeGate()
        rig.fakes.apple.hold(gate)
        let running = Task { try await rig.worker.run() }
        #expect(await gate.waitUntilHolding(2))
        try await waitUntil { try await attempts(rig) == 3 }
        #expect(try await attempts(rig) == 3 && rig.fakes.apple.requestCount == 2)
        return (running, streams, gate)
    }

    /// Lets the held answers go, and every later one at once.
    func release(_ gate: FakeGate, of fake: any FakeProvider) {
        fake.hold(nil)
        gate.open()
    }

    /// The `SendAttempted` events recorded so far.
    func attempts(_ rig: Rig) async throws -> Int {
        try await rig.store.pool.query("SELECT count(*) FROM events WHERE event_type = 'SendAttempted'").single().decode(Int.self, at: 0)
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

    /// Polls `condition` every 20 ms until it holds, for at most 60 s.
    func waitUntil(_ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline, try await !condition() {
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    // Apple AdServices attribution API: a token past its 24 h TTL is expired, no call — also when
    // its send was claimed and recorded in time but waited for a slot past the TTL.
    @Test func aSendRecordedAheadWhoseTokenExpiredWhileWaitingIsNotCalled() async throws {
        try await Self.withRig(slots: 2, prefetch: 1) { rig in
            // The tokens have 20 s to live when the sends are claimed. The fake keeps the same
            // time, so it would answer 404 and note `token_ttl` if an expired token reached it.
            let issuedAt = testEpoch.addingTimeInterval(-86_400 + 20)
            rig.fakes.apple.setClock(rig.clock)
            let tokens = (0..<3).map { Self.adServicesToken("ahead", $0) }
            for token in tokens { rig.fakes.apple.register(token: token, issuedAt: issuedAt) }
            let (running, streams, gate) = try await startThreeLookups(rig, tokenIssuedAt: issuedAt)
            rig.clock.advance(by: 21)  // while the third waits for a slot
            release(gate, of: rig.fakes.apple)
            let histories = try await finish(rig, running, streams: streams)
            #expect(rig.fakes.apple.requestCount == 2)
            #expect(histories.filter { $0.last == "SendSucceeded" }.count == 2)
            let expired = try #require(histories.firstIndex { $0.last == "SendFailed" })
            #expect(histories[expired] == ["SendRequested", "SendAttempted", "SendFailed"])
            let failure = try #require(try await rig.store.readStream(streams[expired]).last)
            let failed = try LedgerJSON.makeDecoder().decode(SendFailed.self, from: failure.data)
            // The try was recorded: its failure names the attempt.
            #expect(failed.rule == "adservices_token_expired" && failed.attempt == 1)
            #expect(rig.fakes.anomalies.isEmpty, "\(rig.fakes.anomalies)")
            #expect(tokens.map { rig.fakes.apple.lookups(of: $0) }.reduce(0, +) == 2)  // the registered tokens were the ones looked up
        }
    }

    // Issue 6 (leases): a try is never called when its lease could run out during the call — a
    // rescue could then try the send again while the first call is still out. A send recorded
    // ahead that waited too long is settled at once as a retry that made no call
    // (`lease_too_short_for_call`); the next try, under a lease of its own, calls, and the
    // provider sees one call per send.
    @Test func aSendRecordedAheadIsNotCalledWhenItsLeaseWouldRunOutDuringTheCall() async throws {
        try await Self.withRig(slots: 2, prefetch: 1) { rig in
            let (running, streams, gate) = try await startThreeLookups(rig, tokenIssuedAt: testEpoch)
            rig.clock.advance(by: 26)  // 4 s of the 30 s lease left; the call may take 5, and a tenth is kept
            release(gate, of: rig.fakes.apple)
            let histories = try await finish(rig, running, streams: streams)
            #expect(rig.fakes.apple.requestCount == 3)
            #expect(histories.allSatisfy { $0.last == "SendSucceeded" })
            #expect(histories.filter { $0.contains("RetryScheduled") } == [
                ["SendRequested", "SendAttempted", "RetryScheduled", "SendAttempted", "ResponseReceived", "SendSucceeded"],
            ])
            let retried = try #require(zip(streams, histories).first { $0.1.contains("RetryScheduled") }?.0)
            let scheduled = try await retries(of: retried, rig)
            #expect(scheduled.map(\.rule) == ["lease_too_short_for_call"] && scheduled.map(\.called) == [false])
        }
    }

    // Issue 6 (leases): with a lease too short for any call (a misconfiguration `ledger worker`
    // refuses; the library only logs it), every try is settled without its call — the first due
    // at once, the next ones backing off (2, 4, 8 … s), so the queue does not spin on the send.
    @Test func triesThatKeepMissingTheirCallsBackOff() async throws {
        try await Self.withRig(lease: 5) { rig in
            let streams = try await enqueueLookups(rig, count: 1, prefix: "short")
            let start = rig.clock.now()
            #expect(try await rig.worker.drain() == 2)  // missed, due at once; missed again, due in 2 s
            #expect(try await rig.worker.drain() == 0)
            rig.clock.advance(by: 2)
            #expect(try await rig.worker.drain() == 1)  // due in 4 s
            #expect(rig.fakes.apple.requestCount == 0)
            let retries = try await retries(of: streams[0], rig)
            #expect(retries.map(\.rule) == Array(repeating: "lease_too_short_for_call", count: 3))
            #expect(retries.map { $0.notBefore.timeIntervalSince(start) } == [0, 2, 6])
            #expect(retries.allSatisfy { $0.called == false })
        }
    }

    // Apple AdServices attribution API: after 404s, "a maximum of three attempts" — three calls. A
    // try that made no call (here its lease was too short once it had waited for a slot) is not one
    // of them: its send still gets three lookups before it fails, like the others.
    @Test func aTryThatMadeNoCallIsNotOneOfApplesThreeAttempts() async throws {
        try await Self.withRig(slots: 2, prefetch: 1) { rig in
            // Every lookup answers 404.
            let (running, streams, gate) = try await startThreeLookups(rig, tokenIssuedAt: testEpoch, readiness: .never)
            rig.clock.advance(by: 26)  // the third send's lease is too short for its call when its slot comes
            release(gate, of: rig.fakes.apple)
            // Each send's first call answered 404 and waits 5 s; the third was settled without a
            // call and called at once under a new lease.
            try await waitUntil {
                guard rig.fakes.apple.requestCount == 3 else { return false }
                return try await pendingSends(rig) == 3
            }
            running.cancel()
            try await running.value
            for round in 1...2 {
                rig.clock.advance(by: 6)
                #expect(try await rig.worker.drain() == 3, "round \(round): each send due once")
            }
            #expect(try await queueCount(rig.store) == 0)
            #expect(rig.fakes.apple.requestCount == 9)
            var uncalledRules: [String] = []
            for stream in streams {
                let events = try await rig.store.readStream(stream)
                #expect(events.filter { $0.type == ResponseReceived.eventType }.count == 3)
                let failed = try LedgerJSON.makeDecoder().decode(SendFailed.self, from: try #require(events.last).data)
                let uncalled = try await retries(of: stream, rig).filter { $0.called == false }
                uncalledRules += uncalled.map(\.rule)
                // The try numbers go on counting: the third call of the send whose first try made
                // no call is its fourth try.
                #expect(failed.attempt == 3 + uncalled.count, "\(stream)")
            }
            #expect(uncalledRules == ["lease_too_short_for_call"])
        }
    }

    /// The `RetryScheduled` events of `stream`, decoded.
    func retries(of stream: String, _ rig: Rig) async throws -> [RetryScheduled] {
        try await rig.store.readStream(stream).filter { $0.type == RetryScheduled.eventType }.map {
            try LedgerJSON.makeDecoder().decode(RetryScheduled.self, from: $0.data)
        }
    }

    /// Sends in the queue waiting (not running).
    func pendingSends(_ rig: Rig) async throws -> Int {
        try await rig.store.pool.query("SELECT count(*) FROM send_queue WHERE state = 'pending'").single().decode(Int.self, at: 0)
    }

    // Branch v1/open server-to-server guide: `apple_attribution_token` only within the token's 24 h
    // TTL. A Branch open built with the token that waits for its slot past the TTL is not sent as
    // built: the try is retried at once, and the open that goes out has no token.
    @Test func aRequestThatChangedWhileItsSendWaitedIsNotSentAsRecorded() async throws {
        try await Self.withRig(slots: 2, prefetch: 1) { rig in
            var streams: [String] = []
            for (device, cause) in try await firstOpens(rig, count: 3, prefix: "open", tokenIssuedAt: testEpoch.addingTimeInterval(-86_400 + 20)) {
                let send = try await enqueue(.branch, .open, cause: cause, device: device, key: device, now: testEpoch, store: rig.store)
                streams.append(StreamID.send(id: send.sendID).rawValue)
            }
            let gate = FakeGate()
            rig.fakes.branch.hold(gate)
            let running = Task { try await rig.worker.run() }
            #expect(await gate.waitUntilHolding(2))
            try await waitUntil { try await attempts(rig) == 3 }
            #expect(try await attempts(rig) == 3 && rig.fakes.branch.requestCount == 2)
            rig.clock.advance(by: 21)  // the tokens pass their 24 h while the third open waits
            release(gate, of: rig.fakes.branch)
            let histories = try await finish(rig, running, streams: streams)
            let opens = rig.fakes.branch.requests
            #expect(opens.count == 3)
            #expect(opens.filter { $0.bodyText.contains("apple_attribution_token") }.count == 2)
            #expect(histories.filter { $0.contains("RetryScheduled") } == [
                ["SendRequested", "SendAttempted", "RetryScheduled", "SendAttempted", "ResponseReceived", "SendSucceeded"],
            ])
            let retried = try #require(zip(streams, histories).first { $0.1.contains("RetryScheduled") }?.0)
            let scheduled = try await retries(of: retried, rig)
            #expect(scheduled.map(\.rule) == ["request_changed_while_waiting"] && scheduled.map(\.called) == [false])
        }
    }

    // Issue 6 (graceful stop): SIGTERM finishes what is in flight — the sends claimed ahead too:
    // their tries are recorded, so they are called as slots free and settled before the worker
    // returns; nothing is left running for a rescue.
    @Test func aStopFinishesTheSendsClaimedAhead() async throws {
        try await Self.withRig(slots: 2, prefetch: 2) { rig in
            let streams = try await enqueueLookups(rig, count: 4, prefix: "stop")
            let gate = FakeGate()
            rig.fakes.apple.hold(gate)
            let running = Task { try await rig.worker.run() }
            #expect(await gate.waitUntilHolding(2))
            try await waitUntil { try await attempts(rig) == 4 }
            #expect(try await attempts(rig) == 4 && rig.fakes.apple.requestCount == 2)
            running.cancel()  // two calls out, two sends recorded and waiting for a slot
            release(gate, of: rig.fakes.apple)
            try await running.value
            #expect(try await queueCount(rig.store) == 0)
            #expect(rig.fakes.apple.requestCount == 4)
            for stream in streams {
                #expect(try await streamTypes(stream, store: rig.store) == ["SendRequested", "SendAttempted", "ResponseReceived", "SendSucceeded"])
            }
        }
    }
}
