import Foundation
import LedgerPostgres
@testable import LedgerStore
import LedgerTestKit
import Testing

/// The single-event append after a remembered head (`StreamHeads`, `EventStore.appendNextSQL`):
/// a hint that is wrong must cost a statement, never a broken chain or a gap.
@Suite("Appending after a remembered head", .database)
struct StreamHeadHintTests {
    @Test("two stores (two processes) taking turns on one stream keep versions gapless and the chain intact")
    func staleHintsFromAnotherWriter() async throws {
        try await withStore { first, database throws in
            let second = anotherStore(database, maxConnections: 2)
            defer { second.pool.close() }
            var versions: [Int64] = []
            for n in 1...12 {
                // Each store's hint goes stale whenever the other one appended in between.
                let store = n % 3 == 0 ? first : second
                let result = try await store.append([sampleEvent(n)], to: "device-app1/turns")
                versions += result.events.map(\.streamVersion)
            }
            #expect(versions == Array(1...12))
            #expect(first.heads.head(of: "device-app1/turns")?.version == 12)
            // The hint was used where it held: `second` appended 8 events, 4 of them right after
            // one of its own (n = 2, 5, 8, 11), each after an append of `first` in between.
            #expect(second.heads.hitCount == 4)
            #expect(first.heads.hitCount == 0)
            let report = try await first.verify()
            #expect(report.isIntact)
            #expect(report.eventsChecked == 12)
        }
    }

    // A hint skips the head check, so it must name a committed event: one from a transaction
    // that rolled back would put the next event after versions that are not there.
    @Test("a transaction that rolls back leaves no hint: the next append follows the committed head")
    func noHintFromARolledBackTransaction() async throws {
        try await withStore { store, database throws in
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            let stored = try store.append([sampleEvent(1)], to: "device-app1/rollback", on: connection)
            struct Abandon: Error {}
            #expect(throws: Abandon.self) {
                try connection.transaction { connection in
                    try store.append([sampleEvent(2)], to: "device-app1/rollback", on: connection)
                    try store.append([sampleEvent(3)], to: "device-app1/rollback", on: connection)
                    throw Abandon()
                }
            }
            #expect(store.heads.head(of: "device-app1/rollback")?.version == 1)
            let next = try store.append([sampleEvent(4)], to: "device-app1/rollback", on: connection)
            #expect(next.events.map(\.streamVersion) == [2])
            #expect(store.heads.hitCount == 2)  // event 2 (rolled back) and event 4, each after version 1
            let read = try await store.readStream("device-app1/rollback")
            #expect(read.map(\.streamVersion) == [1, 2])
            #expect(read.first?.hash == stored.events.first?.hash)
            #expect(try await store.verify().isIntact)
        }
    }

    @Test("a transaction's appends become hints when it commits; a plain BEGIN's never do")
    func hintsFromTransactions() async throws {
        try await withStore { store, database throws in
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try connection.transaction { connection in
                try store.append([sampleEvent(1)], to: "device-app1/committed", on: connection)
                try store.append([sampleEvent(2)], to: "device-app1/committed", on: connection)
                #expect(store.heads.head(of: "device-app1/committed") == nil)  // not committed yet
            }
            #expect(store.heads.head(of: "device-app1/committed")?.version == 2)
            // A transaction the wrapper does not manage: its end is not seen, so no hint.
            try connection.run(script: "BEGIN")
            try store.append([sampleEvent(3)], to: "device-app1/plain", on: connection)
            try connection.run(script: "COMMIT")
            #expect(store.heads.head(of: "device-app1/plain") == nil)
            let next = try store.append([sampleEvent(4)], to: "device-app1/committed", on: connection)
            #expect(next.events.map(\.streamVersion) == [3])
            #expect(store.heads.hitCount == 1)
            #expect(try await store.verify().isIntact)
        }
    }

    // A committed event can be lost beneath a running process (a crash with synchronous_commit
    // off, a failover to a standby behind, a restore), and each of those ends every session. The
    // loss is simulated here: the hinted event removed as a superuser (triggers off), every
    // session that saw it ended. A hint is only used on a session older than its event.
    @Test("a hint is not used on a session opened after its event: a lost commit leaves no gap")
    func noHintAcrossLostCommits() async throws {
        try await withStore { store, database throws in
            let stream = "device-app1/lost"
            let first = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try store.append([sampleEvent(1)], to: stream, on: first)
            try store.append([sampleEvent(2)], to: stream, on: first)
            #expect(store.heads.hitCount == 1)  // event 2, after event 1's hint, on the same session
            let admin = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try admin.run(script: """
                SET session_replication_role = replica;
                DELETE FROM events WHERE stream_id = 'device-app1/lost' AND stream_version = 2;
                RESET session_replication_role;
                -- Events partitioned by time keep their keys apart (ops/sql): a lost commit loses those too.
                DO $$ BEGIN IF to_regclass('event_keys') IS NOT NULL THEN
                    SET LOCAL session_replication_role = replica;
                    DELETE FROM event_keys WHERE stream_id = 'device-app1/lost' AND stream_version = 2;
                END IF; END $$;
                SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid();
                """)
            #expect(store.heads.head(of: stream)?.version == 2)  // still remembered, but from before
            let next = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            let appended = try store.append([sampleEvent(3)], to: stream, on: next)
            #expect(appended.events.map(\.streamVersion) == [2])
            #expect(store.heads.hitCount == 1)
            // The old session, had it survived, could still use its hints; this one now has its own.
            try store.append([sampleEvent(4)], to: stream, on: next)
            #expect(store.heads.hitCount == 2)
            #expect(try await store.readStream(stream).map(\.streamVersion) == [1, 2, 3])
            #expect(try await store.verify().isIntact)
        }
    }

    // `.noStream` needs no head read either: the lone event goes in as version 1 through the
    // hinted statement (after version 0, nothing to chain to), and anything else falls back.
    @Test("a lone first event (.noStream) skips the head read; retries, existing streams and id clashes answer as before")
    func firstEventWithoutHeadRead() async throws {
        try await withStore { store, database throws in
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            let first = sampleEvent(1)
            let stored = try store.append([first], to: "device-app1/first", expected: .noStream, on: connection)
            #expect(stored.events.map(\.streamVersion) == [1] && !stored.wasDuplicate)
            // The same statement on the same session, now after a hint.
            try store.append([sampleEvent(2)], to: "device-app1/first", on: connection)
            #expect(store.heads.hitCount == 1)
            let retry = try store.append([first], to: "device-app1/first", expected: .noStream, on: connection)
            #expect(retry.wasDuplicate && retry.events.map(\.position) == stored.events.map(\.position))
            // Another process (no hint) expecting no stream where there is one.
            let other = anotherStore(database, maxConnections: 1)
            defer { other.pool.close() }
            await #expect(throws: EventStoreError.wrongExpectedVersion(stream: "device-app1/first", expected: .noStream, actual: 2)) {
                try await other.append([sampleEvent(3)], to: "device-app1/first", expected: .noStream)
            }
            #expect(try eventCount(database) == 2)
            #expect(try await store.verify().isIntact)
        }
    }

    // Also where events are hash-partitioned on shard_key, whose keys hold an id unique per device
    // only (docs/scaling.md): the cached inserts read whether the id is stored anywhere.
    @Test("a lone first event (.noStream) whose id another device's stream holds is an id conflict, nothing stored")
    func firstEventIDClashOnAnotherDevice() async throws {
        try await withStore { store, database throws in
            let first = sampleEvent(1)
            try await store.append([first], to: "device-app1/first", expected: .noStream)
            let other = anotherStore(database, maxConnections: 1)
            defer { other.pool.close() }
            let clash = NewEvent(id: first.id, type: first.type, data: Data(#"{"n":99}"#.utf8), occurredAt: first.occurredAt)
            await #expect(throws: EventStoreError.eventIDConflict(eventID: first.id)) {
                try await other.append([clash], to: "device-app1/other", expected: .noStream)
            }
            #expect(try eventCount(database) == 1)
        }
    }

    @Test("an event after a known head whose id another device's stream holds is an id conflict, nothing stored")
    func hintedEventIDClashOnAnotherDevice() async throws {
        try await withStore { store, database throws in
            let first = sampleEvent(1)
            try await store.append([first], to: "device-app1/first")
            try await store.append([sampleEvent(2)], to: "device-app1/other")
            #expect(store.heads.head(of: "device-app1/other")?.version == 1)  // the next append goes after the hint
            let clash = NewEvent(id: first.id, type: first.type, data: Data(#"{"n":99}"#.utf8), occurredAt: first.occurredAt)
            await #expect(throws: EventStoreError.eventIDConflict(eventID: first.id)) {
                try await store.append([clash], to: "device-app1/other")
            }
            #expect(try eventCount(database) == 2)
        }
    }

    // Hints shared by 10 tasks on 8 pooled sessions, going stale all the time, plus a second store
    // (4 sessions) with hints of its own: every append lands once, right after the stream's last event.
    @Test("concurrent appends through stale hints keep every stream gapless and every chain intact")
    func concurrentAppendsThroughHints() async throws {
        try await withStore { store, database throws in
            let other = anotherStore(database, maxConnections: 4)
            defer { other.pool.close() }
            let streams = (0..<3).map { "device-app1/busy\($0)" }
            let perTask = 30
            let versions = try await withThrowingTaskGroup(of: [String: [Int64]].self) { group in
                for task in 0..<10 {
                    group.addTask {
                        var mine: [String: [Int64]] = [:]
                        for n in 0..<perTask {
                            let stream = streams[(task + n) % streams.count]
                            let writer = task % 3 == 0 ? other : store
                            let appended = try await writer.append([sampleEvent(task * 1000 + n)], to: stream)
                            mine[stream, default: []] += appended.events.map(\.streamVersion)
                        }
                        return mine
                    }
                }
                var all: [String: [Int64]] = [:]
                for try await part in group { all.merge(part, uniquingKeysWith: +) }
                return all
            }
            for stream in streams {
                let stored = try await store.readStream(stream).map(\.streamVersion)
                #expect(stored == Array(1...Int64(stored.count)), "\(stream)")
                #expect(versions[stream, default: []].sorted() == stored, "\(stream): each append answered its own version")
            }
            #expect(try eventCount(database) == 10 * perTask)
            #expect(store.heads.hitCount + other.heads.hitCount > 0)  // hints were used, not only head reads
            let report = try await store.verify()
            #expect(report.isIntact && report.eventsChecked == 10 * perTask)
        }
    }

    @Test("with a hint, expected versions, idempotent retries and id conflicts answer as without one")
    func hintKeepsTheAppendRules() async throws {
        try await withStore { store, database throws in
            let first = sampleEvent(1)
            try await store.append([first], to: "device-app1/rules", expected: .noStream)
            #expect(store.heads.head(of: "device-app1/rules")?.version == 1)
            // A wrong exact version is refused with the actual one, even though the hint would fit `.any`.
            await #expect(throws: EventStoreError.wrongExpectedVersion(stream: "device-app1/rules", expected: .exact(5), actual: 1)) {
                try await store.append([sampleEvent(2)], to: "device-app1/rules", expected: .exact(5))
            }
            await #expect(throws: EventStoreError.wrongExpectedVersion(stream: "device-app1/rules", expected: .noStream, actual: 1)) {
                try await store.append([sampleEvent(2)], to: "device-app1/rules", expected: .noStream)
            }
            let second = try await store.append([sampleEvent(2)], to: "device-app1/rules", expected: .exact(1))
            #expect(second.events.map(\.streamVersion) == [2])
            #expect(store.heads.hitCount == 1)  // after the hint, not a head read
            // The retry of the first event, made after the hint moved on: the stored answer.
            let retry = try await store.append([first], to: "device-app1/rules")
            #expect(retry.wasDuplicate)
            #expect(retry.events.map(\.streamVersion) == [1])
            // The same id with another content: a conflict, nothing stored.
            let changed = NewEvent(id: first.id, type: first.type, data: Data(#"{"n":99}"#.utf8), occurredAt: first.occurredAt)
            await #expect(throws: EventStoreError.eventIDConflict(eventID: first.id)) {
                try await store.append([changed], to: "device-app1/rules")
            }
            #expect(try eventCount(database) == 2)
            #expect(try await store.verify().isIntact)
        }
    }

    @Test("a new event's default id is a random version-4 UUID")
    func defaultEventIDs() {
        let ids = (0..<2000).map { _ in NewEvent(type: "Sample", data: Data("{}".utf8), occurredAt: Date()).id }
        #expect(Set(ids).count == ids.count)
        for id in ids {
            #expect(id.uuid.6 >> 4 == 4)  // version
            #expect(id.uuid.8 >> 6 == 0b10)  // RFC 4122 variant
        }
    }
}
