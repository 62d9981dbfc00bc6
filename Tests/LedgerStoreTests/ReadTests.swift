import Foundation
import LedgerPostgres
@testable import LedgerStore
import LedgerTestKit
import Testing

@Suite("Reading", .database)
struct ReadTests {
    /// The classic gap: positions come from a sequence, so an older transaction can commit a
    /// smaller position after a reader has already seen a larger one.
    @Test("a global reader never skips an event whose transaction commits after a later one was read")
    func outOfOrderCommits() async throws {
        try await withStore { store, database throws in
            // The open transaction's part runs synchronously on this thread, so that no await
            // (and no busy cooperative pool) stretches it out and holds other tests' horizon.
            let slow = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            let fast = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try slow.run(script: "BEGIN")
            let early = try store.append([sampleEvent(1)], to: "device-app1/slow", on: slow)
            let late = try store.append([sampleEvent(2)], to: "device-app1/fast", on: fast)
            #expect(early.events[0].position < late.events[0].position)

            // A naive reader by position would now see position 2 and move its checkpoint past 1.
            let naive = try fast.query("SELECT max(position) FROM events").single().decode(Int64.self, at: 0)
            #expect(naive == late.events[0].position)

            // The gap-safe reader holds back while the older transaction is open.
            let during = try store.readAll(after: .start, on: fast)
            #expect(during.events.isEmpty)
            #expect(during.checkpoint == .start)

            try slow.run(script: "COMMIT")
            let after = try await readAllEventually(store, count: 2)
            #expect(after.map(\.position) == [early.events[0].position, late.events[0].position])
            // And what the naive reader lost is behind its checkpoint for good.
            let naiveNext = try fast.query("SELECT count(*) FROM events WHERE position > \(naive)")
                .single().decode(Int.self, at: 0)
            #expect(naiveNext == 0)
        }
    }

    /// Ops' question when projections stop moving: which session holds the horizon back. The
    /// report counts the committed events waiting and names the open transaction in front of them.
    @Test("the read horizon counts the events held back and names the transaction holding them")
    func readHorizonNamesTheHolder() async throws {
        try await withStore { store, database throws in
            let slow = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            let fast = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try slow.execute("SET application_name = 'horizon-test'")
            let slowPID = try slow.query("SELECT pg_backend_pid()").single().decode(Int32.self, at: 0)
            try slow.run(script: "BEGIN")
            _ = try store.append([sampleEvent(1)], to: "device-app1/slow", on: slow)
            _ = try store.append([sampleEvent(2)], to: "device-app1/fast", on: fast)

            let held = try ReadHorizon.read(on: fast, limit: 1_000)
            // The committed one waits; the open transaction's own event is not committed at all.
            #expect(held.eventsWaiting == 1)
            let holder = try #require(held.holders.first { $0.pid == slowPID })
            #expect(holder.database == database.name)
            #expect(holder.application == "horizon-test")
            #expect(holder.state == "idle in transaction")
            #expect((holder.secondsOpen ?? -1) >= 0, "a superuser sees when it started")
            #expect(held.secondsWaiting >= 0)
            #expect(held.holders.map(\.transactionID) == held.holders.map(\.transactionID).sorted(), "lowest id first")
            try slow.run(script: "COMMIT")

            let released = try ReadHorizon.read(on: fast, limit: 1_000)
            #expect(!released.holders.contains { $0.pid == slowPID })
        }
    }

    /// Transaction ids 9 and 10 sort "10" < "9" as text: the global order must be numeric, or
    /// readers deliver events twice and skip others when ids cross a power of ten.
    @Test("the global order is by transaction id as a number, across a power of ten")
    func transactionIDOrderIsNumeric() async throws {
        try await withStore { store, database throws in
            let admin = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            for (transaction, stream) in [(10, "device-app1/ten"), (9, "device-app1/nine")] {
                try admin.execute("""
                    INSERT INTO events (transaction_id, stream_id, stream_version, event_id, event_type, schema_version,
                                        data, occurred_at, recorded_at, hash, shard_key)
                    SELECT \(String(transaction))::xid8, \(stream)::text, 1, id, 'SessionStarted', 1, '{}', now(), now(),
                           ledger_event_hash(NULL, \(stream)::text, 1, id, 'SessionStarted', 1, '{}', '{}', now(), now()),
                           ledger_shard_key(\(stream)::text, '{}', NULL)
                    FROM (SELECT \(UUID()) AS id) AS x
                    """)
            }
            let first = try await store.readAll(limit: 1)
            #expect(first.events.map(\.transactionID) == [9])
            let second = try await store.readAll(after: first.checkpoint, limit: 1)
            #expect(second.events.map(\.transactionID) == [10])
            let third = try await store.readAll(after: second.checkpoint, limit: 1)
            #expect(third.events.isEmpty)
            let sealed = try #require(try await store.seal())
            #expect(sealed.eventCount == 2)
            #expect(sealed.upTo.transactionID == 10)
        }
    }

    @Test("the global log reads in batches, filtered by type or stream category")
    func globalBatchesAndFilters() async throws {
        try await withStore { store, _ throws in
            for n in 0..<30 {
                let stream = n % 3 == 0 ? "send-\(n)" : "device-app1/d\(n % 5)"
                try await store.append([sampleEvent(n, type: n % 2 == 0 ? "SessionStarted" : "FirstOpen")], to: stream)
            }
            let seen = try await readAllInBatches(store, count: 30, batchSize: 7).map(\.position)
            #expect(seen.count == 30)
            #expect(Set(seen).count == 30)
            let sends = try await readAllEventually(store, count: 10, filter: EventFilter(categories: ["send"]))
            #expect(sends.count == 10)
            #expect(sends.allSatisfy { $0.streamID.hasPrefix("send-") })
            let expectedFirstOpens = (0..<30).filter { $0 % 2 == 1 && $0 % 3 != 0 }.count
            let firstOpens = try await readAllEventually(
                store, count: expectedFirstOpens, filter: EventFilter(types: ["FirstOpen"], categories: ["device"]))
            #expect(firstOpens.allSatisfy { $0.type == "FirstOpen" && $0.streamID.hasPrefix("device-") })
            #expect(firstOpens.count == expectedFirstOpens)
        }
    }

    @Test("reads as of a position or a time show what the ledger held then")
    func asOf() async throws {
        try await withStore { store, _ throws in
            let first = try await store.append([sampleEvent(1), sampleEvent(2)], to: "device-app1/hist")
            let boundary = try #require(first.events.last)
            try await store.append([sampleEvent(3)], to: "device-app1/hist")
            let byPosition = try await store.readStream("device-app1/hist", asOf: .position(boundary.position))
            #expect(byPosition.map(\.streamVersion) == [1, 2])
            let byTime = try await store.readStream("device-app1/hist", asOf: .recordedAt(boundary.recordedAt))
            #expect(byTime.map(\.streamVersion) == [1, 2])
            // The global log too, once all three are readable: as of the position or the time of
            // the second event, the third is not there.
            try await waitForHorizon(store, count: 3)
            #expect(try await store.readAll().events.count == 3)
            for asOf in [AsOf.position(boundary.position), .recordedAt(boundary.recordedAt)] {
                let then = try await store.readAll(asOf: asOf).events
                #expect(then.map(\.id) == first.events.map(\.id), "\(asOf)")
            }
            let before = try await store.readStream("device-app1/hist", asOf: .recordedAt(boundary.recordedAt.addingTimeInterval(-60)))
            #expect(before.isEmpty)
        }
    }

    @Test("a subscription sees every event exactly once, across a restart from its checkpoint")
    func subscriptionAcrossRestart() async throws {
        try await withStore { store, _ throws in
            let writer = Task {
                var ids: [UUID] = []
                for n in 0..<120 {
                    let event = sampleEvent(n)
                    try await store.append([event], to: "device-app1/s\(n % 7)")
                    ids.append(event.id)
                }
                return ids
            }
            var received: [UUID] = []
            var checkpoint = GlobalCheckpoint.start
            for try await batch in store.subscribe(batchSize: 16, pollInterval: .milliseconds(100)) {
                received += batch.events.map(\.id)
                checkpoint = batch.checkpoint
                if received.count >= 50 { break }
            }
            // "Restart": a new subscription from the stored checkpoint.
            let written = try await writer.value
            for try await batch in store.subscribe(after: checkpoint, batchSize: 16, pollInterval: .milliseconds(100)) {
                received += batch.events.map(\.id)
                if received.count >= written.count { break }
            }
            #expect(received.count == written.count)
            #expect(Set(received) == Set(written))
        }
    }

    /// The restart as it happens in production: a new process (own pool, own store) resumes from
    /// a checkpoint it stored as two numbers, while four writers commit out of order meanwhile.
    @Test("a subscriber restarted with a new pool sees every event of 4 concurrent writers exactly once, then only new ones")
    func subscriptionRestartWithConcurrentWriters() async throws {
        try await TestDatabase.with { database throws in
            let writerPool = PostgresPool(conninfo: database.conninfo, maxConnections: 4, logger: TestDatabase.quietLogger)
            defer { writerPool.close() }
            let writers = EventStore(pool: writerPool, logger: TestDatabase.quietLogger)
            let writing = Task {
                try await withThrowingTaskGroup(of: [UUID].self) { group in
                    for writer in 0..<4 {
                        group.addTask {
                            var ids: [UUID] = []
                            for n in 0..<40 {
                                let batch = (0...(n % 3)).map { sampleEvent(writer * 10_000 + n * 10 + $0) }
                                try await writers.append(batch, to: "device-app1/w\(writer)")
                                ids += batch.map(\.id)
                            }
                            return ids
                        }
                    }
                    return try await group.reduce(into: [UUID]()) { $0 += $1 }
                }
            }

            var received: [UUID] = []
            var stored: (transactionID: UInt64, position: Int64) = (0, 0)
            do {
                let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 2, logger: TestDatabase.quietLogger)
                defer { pool.close() }
                let first = EventStore(pool: pool, logger: TestDatabase.quietLogger)
                for try await batch in first.subscribe(batchSize: 10, pollInterval: .milliseconds(100)) {
                    received += batch.events.map(\.id)
                    stored = (batch.checkpoint.transactionID, batch.checkpoint.position)
                    if received.count >= 60 { break }
                }
            }
            let written = try await writing.value
            #expect(written.count == 4 * (14 * 1 + 13 * 2 + 13 * 3))

            let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 2, logger: TestDatabase.quietLogger)
            defer { pool.close() }
            let second = EventStore(pool: pool, logger: TestDatabase.quietLogger)
            let resumed = second.subscribe(after: GlobalCheckpoint(transactionID: stored.transactionID, position: stored.position),
                                           batchSize: 10, pollInterval: .milliseconds(100)).makeAsyncIterator()
            while received.count < written.count {
                guard let batch = try await resumed.next() else { break }
                received += batch.events.map(\.id)
            }
            #expect(received.count == written.count)
            #expect(Set(received) == Set(written))

            // Caught up: what comes next is the next event, not a repeat.
            let sentinel = sampleEvent(999_999)
            try await second.append([sentinel], to: "device-app1/sentinel")
            var after: [UUID] = []
            while !after.contains(sentinel.id) {
                guard let batch = try await resumed.next() else { break }
                after += batch.events.map(\.id)
            }
            #expect(after == [sentinel.id])
        }
    }

    @Test("a subscription that has caught up and waits is woken by the append's notification, not by its poll")
    func liveWakeUp() async throws {
        try await withStore { store, _ throws in
            // A poll far longer than a notification takes; a wait that the poll ends is not counted
            // as rung, so an event delivered by the poll fails the last expectation. No event is
            // stored before, so no earlier notification can ring during the wait.
            let pollInterval = Duration.seconds(60)
            let iterator = store.subscribe(pollInterval: pollInterval).makeAsyncIterator()
            let doorbell = iterator.doorbell
            let pending = Task { try await iterator.next() }
            // Append only once the subscription listens, has read nothing and waits for its poll,
            // so that its own read cannot be what finds the event.
            let deadline = ContinuousClock.now + .seconds(30)
            while doorbell.suspendedWaitTimeout != pollInterval {
                guard ContinuousClock.now < deadline else {
                    Issue.record("the subscription never began to wait for its poll")
                    return
                }
                try await Task.sleep(for: .milliseconds(1))
            }
            let ringsBefore = doorbell.answeredRings
            let event = sampleEvent(1)
            try await store.append([event], to: "device-app1/live")
            let batch = try await pending.value
            #expect(batch?.events.map(\.id) == [event.id])
            #expect(doorbell.answeredRings > ringsBefore, "the event came by the poll: no notification woke the subscription")
        }
    }
}
