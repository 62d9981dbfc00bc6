import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import LedgerHTTPTransport
import LedgerMigrations
import LedgerPostgres
import LedgerPrivateCluster
import LedgerStore
import LedgerTestKit
import Testing

/// Issue 6, "What it must show": "Restart PostgreSQL during a drain, terminate the worker's
/// backends, stall a fake past the lease: the worker recovers and finishes each time."
/// Terminated backends are `WorkerTests.workerRecoversFromTerminatedBackends`; a late answer after
/// a rescue done by hand is `WorkerTests.aLateAnswerAfterARescueWritesNothing`. Here: a server
/// restart mid-drain (on a private cluster of the test's own, since the shared one serves every
/// other test), and a stalled provider whose lease the running worker rescues by itself.
@Suite("Send worker recovery", .database, .serialized)
struct WorkerRecoveryTests {
    /// A running `SendWorker.run()` loop over `store`, against `fakes`, on a manual clock.
    struct Loop {
        let worker: SendWorker
        let clock: ManualClock
        let transport: HTTPProviderTransport
        let task: Task<Void, any Error>

        static func start(store: EventStore, fakes: FakeProviders, slots: Int = 4) -> Loop {
            let transport = HTTPProviderTransport(logger: TestDatabase.quietLogger)
            let clock = ManualClock(testEpoch)
            let worker = SendWorker(
                store: store, rules: ProviderSendRules(adServices: fakes.appleEndpoint), transport: transport,
                configuration: .init(workerID: "recovery-worker", slots: slots, lease: 30, requestTimeout: .seconds(10),
                                     pollInterval: .milliseconds(100)),
                clock: clock, jitter: { 0.5 }, logger: TestDatabase.quietLogger)
            return Loop(worker: worker, clock: clock, transport: transport, task: Task { try await worker.run() })
        }

        /// Cancels the loop (it lets the tries in flight finish) and closes the HTTP client.
        func stop() async throws {
            task.cancel()
            let ended = await task.result
            await transport.shutdown()
            try ended.get()
        }
    }

    /// Runs `body` with a running loop, stopped (tries in flight finished) before this returns.
    static func withLoop<T>(store: EventStore, fakes: FakeProviders, _ body: (Loop) async throws -> T) async throws -> T {
        let loop = Loop.start(store: store, fakes: fakes)
        let result: T
        do {
            result = try await body(loop)
        } catch {
            try? await loop.stop()
            throw error
        }
        try await loop.stop()
        return result
    }

    /// Enqueues one Apple AdServices token lookup for each of `count` new devices (a `FirstOpen`
    /// with a valid token each, registered with the fake Apple).
    static func enqueueLookups(_ count: Int, store: EventStore, fakes: FakeProviders) async throws -> [UUID] {
        var sends: [UUID] = []
        for index in 0..<count {
            let device = "device-app1/r\(index)"
            let token = Data("token-r\(index)".utf8).base64EncodedString()
            fakes.apple.register(token: token)
            let cause = try await record(
                FirstOpen(appID: try AppID("app1"), device: iosDevice(),
                          adServicesToken: LedgerDomain.AdServicesToken(token: token, issuedAt: testEpoch)),
                to: device, at: testEpoch, store: store)
            sends.append(try await enqueue(.appleAdServices, .tokenLookup, cause: cause, device: device, key: "recovery:\(index)",
                                           now: testEpoch, store: store).sendID)
        }
        return sends
    }

    static func count(_ sql: String, _ store: EventStore) async throws -> Int {
        try await store.pool.query(PostgresQuery(sql: sql)).single().decode(Int.self, at: 0)
    }

    /// A count on a session of its own (the pool's idle sessions die with a server restart).
    static func count(_ sql: String, conninfo: String) throws -> Int {
        try PostgresConnection(conninfo: conninfo, logger: TestDatabase.quietLogger)
            .query(PostgresQuery(sql: sql)).single().decode(Int.self, at: 0)
    }

    /// Polls `condition` (an observable state, not a guess at timing) until it holds or `timeout` passes.
    static func waitUntil(timeout: Duration, _ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if (try? await condition()) == true { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return try await condition()
    }

    /// What every drain must end with: each requested send has exactly one terminal event (all
    /// succeeded: the fake answers 200), the queue is empty, every call the fake saw has a recorded
    /// attempt, and calls beyond one per send never exceed the tries recorded as outcome-unknown.
    static func expectFinished(_ sends: [UUID], store: EventStore, calls: Int) async throws {
        #expect(try await queueCount(store) == 0)
        let requested = try await count("SELECT count(*) FROM events WHERE event_type = 'SendRequested'", store)
        #expect(requested == sends.count)
        let terminalsPerSend = try await store.pool.query("""
            SELECT r.stream_id, (SELECT count(*) FROM events t WHERE t.stream_id = r.stream_id
                                 AND t.event_type IN ('SendSucceeded', 'SendFailed', 'SendCancelled'))
            FROM events r WHERE r.event_type = 'SendRequested'
            """).map { try $0.decode(Int.self, at: 1) }
        #expect(terminalsPerSend.count == sends.count && terminalsPerSend.allSatisfy { $0 == 1 })
        #expect(try await count("SELECT count(*) FROM events WHERE event_type = 'SendSucceeded'", store) == sends.count)
        let attempts = try await count("SELECT count(*) FROM events WHERE event_type = 'SendAttempted'", store)
        let unknown = try await count("SELECT count(*) FROM events WHERE event_type = 'SendOutcomeUnknown'", store)
        #expect(calls <= attempts, "every call the fake saw has a recorded attempt")
        #expect(calls - sends.count <= unknown, "duplicate calls (\(calls - sends.count)) exceed outcome-unknown tries (\(unknown))")
    }

    // Issue 6: restart PostgreSQL (immediate shutdown: a crash, then recovery) while the worker
    // drains; it reconnects (pool, liveness lock, listener), rescues the tries whose outcome the
    // restart lost once their lease runs out, and finishes: one terminal event per send, nothing lost.
    @Test func workerFinishesADrainAcrossAPostgreSQLRestart() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-restart-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cluster = try PrivateCluster.startOrReuse(directory: directory, logger: TestDatabase.quietLogger)
        defer { try? cluster.stop() }
        try cluster.createDatabaseIfMissing("ledger", logger: TestDatabase.quietLogger)
        let conninfo = cluster.conninfo(database: "ledger")
        _ = try Migrator().apply(on: try PostgresConnection(conninfo: conninfo, logger: TestDatabase.quietLogger))

        // The test's own pool (enqueueing, observing) and the worker's, as two processes would have.
        let pool = PostgresPool(conninfo: conninfo, maxConnections: 4, logger: TestDatabase.quietLogger)
        let workerPool = PostgresPool(conninfo: conninfo, maxConnections: 6, logger: TestDatabase.quietLogger)
        defer {
            pool.close()
            workerPool.close()
        }
        let store = EventStore(pool: pool, catalog: .standard, logger: TestDatabase.quietLogger)
        let workerStore = EventStore(pool: workerPool, catalog: .standard, logger: TestDatabase.quietLogger)
        try await withCheckedFakeProviders { fakes in
            fakes.apple.setDelay(.milliseconds(20))
            let sends = try await Self.enqueueLookups(200, store: store, fakes: fakes)
            let finished = try await Self.withLoop(store: workerStore, fakes: fakes) { loop in
                // Mid-drain: some calls made, most sends still queued.
                #expect(try await Self.waitUntil(timeout: .seconds(60)) { fakes.apple.requestCount >= 30 })
                // Stopping and starting block for seconds (crash recovery): off the cooperative pool.
                // pg_ctl stop -m immediate: every server process ends at once, nothing is flushed
                // or checkpointed (the start runs crash recovery).
                try await TestDatabase.offThePool { try cluster.stop(mode: .immediate) }
                #expect(!cluster.isServerRunning())
                let callsBeforeRestart = fakes.apple.requestCount
                try await TestDatabase.offThePool { try cluster.start() }
                let left = try Self.count("SELECT count(*) FROM send_queue", conninfo: conninfo)
                #expect(left > 0 && callsBeforeRestart < sends.count, "the restart came mid-drain (\(left) sends still queued)")
                // Tries whose outcome the restart lost keep their claim until the lease runs out
                // (the worker itself is alive): move the worker's clock past the lease.
                loop.clock.advance(by: 31)
                return try await Self.waitUntil(timeout: .seconds(120)) {
                    try Self.count("""
                        SELECT count(*) FROM events WHERE event_type IN ('SendSucceeded', 'SendFailed', 'SendCancelled')
                        """, conninfo: conninfo) >= sends.count
                }
            }
            #expect(finished, "the worker finished after the restart")
            let observer = EventStore(pool: PostgresPool(conninfo: conninfo, maxConnections: 2, logger: TestDatabase.quietLogger),
                                      catalog: .standard, logger: TestDatabase.quietLogger)
            defer { observer.pool.close() }
            try await Self.expectFinished(sends, store: observer, calls: fakes.apple.requestCount)
        }
    }

    // Issue 6: a provider stalls past the lease; the running worker's own loop rescues the try
    // (recorded as outcome-unknown), sends it again, and settles it once; the stalled try writes
    // nothing more (a late answer after a rescue: WorkerTests.aLateAnswerAfterARescueWritesNothing).
    @Test func runningWorkerRescuesATryStalledPastItsLease() async throws {
        try await withStore(catalog: .standard) { store, _ in
            try await withCheckedFakeProviders { fakes in
                // The first lookup's answer is held until the rescue's call has settled the send:
                // past the 30 s lease once the worker's clock moves, within the 10 s request timeout.
                let stalled = FakeGate()
                fakes.apple.enqueue(.held(by: stalled))
                let sends = try await Self.enqueueLookups(1, store: store, fakes: fakes)
                let stream = StreamID.send(id: try #require(sends.first)).rawValue
                let settled = try await Self.withLoop(store: store, fakes: fakes) { loop in
                    #expect(await stalled.waitUntilHolding(1))
                    loop.clock.advance(by: 31)
                    // The loop rescues the try on its next turn (poll interval) and sends again,
                    // while the first call is still out.
                    let settled = try await Self.waitUntil(timeout: .seconds(60)) {
                        try await streamTypes(stream, store: store).contains("SendSucceeded")
                    }
                    #expect(stalled.held == 1, "the first call was still out when the second settled the send")
                    #expect(fakes.apple.requestCount == 2)
                    stalled.open()  // its late answer; stopping the loop waits for that try to end
                    return settled
                }
                #expect(settled)
                // The late answer wrote nothing.
                #expect(try await streamTypes(stream, store: store) == [
                    "SendRequested", "SendAttempted", "SendOutcomeUnknown", "SendAttempted", "ResponseReceived", "SendSucceeded",
                ])
                try await Self.expectFinished(sends, store: store, calls: fakes.apple.requestCount)
            }
        }
    }
}
