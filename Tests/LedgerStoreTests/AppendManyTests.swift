import Foundation
import LedgerDomain
import LedgerPostgres
@testable import LedgerStore
import LedgerTestKit
import Testing

/// Appending to several streams in one statement (`EventStore.append(_:on:)`, issue 3's "appends
/// to many streams in one transaction"; the send worker records a claim's tries this way): each
/// part keeps the rules of a lone append, and the whole call stores all or nothing.
@Suite("Appending to several streams at once", .database)
struct AppendManyTests {
    @Test("parts on new and existing streams get gapless versions and an intact hash chain")
    func versionsAndChain() async throws {
        try await withStore { store, database throws in
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try store.append([sampleEvent(1), sampleEvent(2)], to: "device-app1/many-a", on: connection)
            let results = try store.append([
                StreamAppend([sampleEvent(3)], to: "device-app1/many-a", expected: .exact(2)),
                StreamAppend([sampleEvent(4), sampleEvent(5), sampleEvent(6)], to: "device-app1/many-b", expected: .noStream),
                StreamAppend([sampleEvent(7)], to: "device-app1/many-c"),
            ], on: connection)
            try #require(results.count == 3)
            #expect(results.map { $0.events.map(\.streamVersion) } == [[3], [1, 2, 3], [1]])
            #expect(results.allSatisfy { !$0.wasDuplicate })
            let positions = results.flatMap { $0.events.map(\.position) }
            #expect(positions == positions.sorted() && Set(positions).count == 5)
            let b = try await store.readStream("device-app1/many-b")
            #expect(b.map(\.streamVersion) == [1, 2, 3])
            #expect(b.map(\.hash) == results[1].events.map(\.hash))
            // Every hash is recomputed from the stored bytes and the event before it.
            let report = try await store.verify()
            #expect(report.isIntact)
            #expect(report.eventsChecked == 7)
            // The hint remembers each stream's new head: a lone append next goes through it.
            #expect(store.heads.head(of: "device-app1/many-b")?.version == 3)
            try store.append([sampleEvent(8)], to: "device-app1/many-b", on: connection)
            #expect(store.heads.hitCount == 1)
        }
    }

    @Test("one part's expected version does not hold: a typed conflict naming its stream, and no part is stored")
    func conflictStoresNothing() async throws {
        try await withStore { store, database throws in
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try store.append([sampleEvent(1)], to: "device-app1/many-x", on: connection)
            #expect(throws: EventStoreError.wrongExpectedVersion(stream: "device-app1/many-x", expected: .exact(5), actual: 1)) {
                try store.append([
                    StreamAppend([sampleEvent(2)], to: "device-app1/many-y"),
                    StreamAppend([sampleEvent(3)], to: "device-app1/many-x", expected: .exact(5)),
                ], on: connection)
            }
            #expect(try eventCount(database) == 1)
        }
    }

    @Test("a retried call answers with the first call's positions and stores nothing new; a stored part beside a new one is a duplicate")
    func idempotentRetry() async throws {
        try await withStore { store, database throws in
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            let parts = [StreamAppend([sampleEvent(1), sampleEvent(2)], to: "device-app1/many-r1"),
                         StreamAppend([sampleEvent(3)], to: "device-app1/many-r2")]
            let first = try store.append(parts, on: connection)
            let again = try store.append(parts, on: connection)
            #expect(again.map { $0.events.map(\.position) } == first.map { $0.events.map(\.position) })
            #expect(again.allSatisfy { $0.wasDuplicate })
            #expect(try eventCount(database) == 3)

            let mixed = try store.append([parts[1], StreamAppend([sampleEvent(4)], to: "device-app1/many-r3")], on: connection)
            #expect(mixed.map(\.wasDuplicate) == [true, false])
            #expect(try eventCount(database) == 4)
            // The same id in another stream is a conflict, whichever part carries it.
            let reused = parts[1].events[0]
            #expect(throws: EventStoreError.eventIDConflict(eventID: reused.id)) {
                try store.append([StreamAppend([sampleEvent(5)], to: "device-app1/many-r4"),
                                  StreamAppend([reused], to: "device-app1/many-r5")], on: connection)
            }
            #expect(try eventCount(database) == 4)
            #expect(try await store.verify().isIntact)
        }
    }

    @Test("a stream named twice is appended part after part")
    func sameStreamTwice() async throws {
        try await withStore { store, database throws in
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            let results = try store.append([StreamAppend([sampleEvent(1)], to: "device-app1/many-twice"),
                                            StreamAppend([sampleEvent(2)], to: "device-app1/many-other"),
                                            StreamAppend([sampleEvent(3)], to: "device-app1/many-twice", expected: .exact(1))],
                                           on: connection)
            #expect(results.map { $0.events.map(\.streamVersion) } == [[1], [1], [2]])
            #expect(try await store.verify().isIntact)
        }
    }

    @Test("inside the caller's transaction a rollback takes every part back")
    func insideCallersTransaction() async throws {
        try await withStore { store, database throws in
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            struct Abandon: Error {}
            #expect(throws: Abandon.self) {
                try connection.transaction { connection in
                    try store.append([StreamAppend([sampleEvent(1)], to: "device-app1/many-t1"),
                                      StreamAppend([sampleEvent(2)], to: "device-app1/many-t2")], on: connection)
                    throw Abandon()
                }
            }
            #expect(try eventCount(database) == 0)
        }
    }

    @Test("personal fields of several devices are sealed with each device's own key, made in one statement; an erased device gets none")
    func sealsPerDevice() async throws {
        try await TestDatabase.with { database in
            let store = try PrivacyTests.store(database)
            defer { store.pool.close() }
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            let devices = ["device-com.example.game/many-1", "device-com.example.game/many-2", "device-com.example.game/many-3"]
            try connection.execute("""
                INSERT INTO privacy_erasures (subject, requested_by, requested_at, event_id)
                VALUES (\(devices[2]), 'test', now(), \(UUID()))
                """)
            let events = try devices.map { _ in try PrivacyTests.firstOpen() }
            try store.append(zip(devices, events).map { StreamAppend([$1], to: $0) }, on: connection)
            let keys = try connection.query("SELECT subject FROM privacy_keys ORDER BY subject").map { try $0.decode(String.self, at: 0) }
            #expect(keys == Array(devices.prefix(2)))
            let raw = try PrivacyTests.rawData(database).joined()
            #expect(!raw.contains(PrivacyTests.idfa) && !raw.contains(PrivacyTests.ip))
            for device in devices.prefix(2) {
                let read = try await store.readStream(device)
                #expect(read.count == 1 && String(decoding: read[0].data, as: UTF8.self).contains(PrivacyTests.idfa))
            }
            let erased = try await store.readStream(devices[2])
            #expect(erased.count == 1 && String(decoding: erased[0].data, as: UTF8.self).contains("\"ledger_erased\""))
            // The keys are remembered once the call's transaction committed: the next append of
            // personal data to these devices makes no key and looks none up.
            let cached = devices.prefix(2).compactMap { store.privacy.cachedKey(for: $0, now: Date()) }
            #expect(cached.count == 2)
            #expect(try await store.verify().isIntact)
        }
    }

    @Test("a condition lets only the streams it returns append, in one statement with its own changes")
    func conditionChoosesStreams() async throws {
        try await withStore { store, database throws in
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try connection.execute("CREATE TABLE gate (stream_id text PRIMARY KEY)")
            try connection.execute("INSERT INTO gate VALUES ('device-app1/gate-1'), ('device-app1/gate-3')")
            try connection.execute("""
                CREATE FUNCTION open_gate(p_streams text[]) RETURNS SETOF text LANGUAGE sql
                AS $$ DELETE FROM gate WHERE stream_id = ANY(p_streams) RETURNING stream_id $$
                """)
            let condition = AppendCondition(function: "open_gate", arguments: [.text("{device-app1/gate-1,device-app1/gate-2}")])
            let results = try store.append([StreamAppend([sampleEvent(1), sampleEvent(2)], to: "device-app1/gate-1"),
                                            StreamAppend([sampleEvent(3)], to: "device-app1/gate-2")],
                                           where: condition, on: connection)
            #expect(Array(results.keys) == ["device-app1/gate-1"])
            #expect(results["device-app1/gate-1"]?.events.map(\.streamVersion) == [1, 2])
            #expect(try eventCount(database) == 2)
            let left = try connection.query("SELECT stream_id FROM gate").map { try $0.decode(String.self, at: 0) }
            #expect(left == ["device-app1/gate-3"])
            #expect(try await store.verify().isIntact)
        }
    }

    @Test("an allowed part that cannot be stored fails the statement, and the condition's changes are undone with it")
    func conditionRollsBackWithTheAppend() async throws {
        try await withStore { store, database throws in
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try connection.execute("CREATE TABLE gate (stream_id text PRIMARY KEY)")
            try connection.execute("INSERT INTO gate VALUES ('device-app1/gate-4'), ('device-app1/gate-5')")
            try store.append([sampleEvent(1)], to: "device-app1/gate-5", on: connection)
            try connection.execute("""
                CREATE FUNCTION open_every_gate() RETURNS SETOF text LANGUAGE sql AS $$ DELETE FROM gate RETURNING stream_id $$
                """)
            let condition = AppendCondition(function: "open_every_gate", arguments: [])
            #expect(throws: EventStoreError.self) {
                try store.append([StreamAppend([sampleEvent(2)], to: "device-app1/gate-4"),
                                  StreamAppend([sampleEvent(3)], to: "device-app1/gate-5", expected: .exact(7))],
                                 where: condition, on: connection)
            }
            #expect(try eventCount(database) == 1)
            #expect(try connection.query("SELECT count(*) FROM gate").single().decode(Int.self, at: 0) == 2)
            // A stream named twice is refused before anything runs.
            #expect(throws: EventStoreError.invalidStreamID("device-app1/gate-4", rule: "once_per_conditional_append")) {
                try store.append([StreamAppend([sampleEvent(4)], to: "device-app1/gate-4"),
                                  StreamAppend([sampleEvent(5)], to: "device-app1/gate-4")], where: condition, on: connection)
            }
            #expect(try connection.query("SELECT count(*) FROM gate").single().decode(Int.self, at: 0) == 2)
        }
    }

    @Test("outside a transaction, a conditional append makes the devices' keys in one statement and remembers them once stored")
    func conditionalAppendSeals() async throws {
        try await TestDatabase.with { database in
            let store = try PrivacyTests.store(database)
            defer { store.pool.close() }
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            let devices = ["device-com.example.game/cond-1", "device-com.example.game/cond-2"]
            let condition = AppendCondition(function: "string_to_table", arguments: [.text(devices.joined(separator: ",")), .text(",")])
            let parts = try devices.map { StreamAppend([try PrivacyTests.firstOpen()], to: $0) }
            let results = try store.append(parts, where: condition, on: connection)
            #expect(Set(results.keys) == Set(devices))
            #expect(try connection.query("SELECT count(*) FROM privacy_keys").single().decode(Int.self, at: 0) == 2)
            let raw = try PrivacyTests.rawData(database).joined()
            #expect(!raw.contains(PrivacyTests.idfa) && !raw.contains(PrivacyTests.ip))
            #expect(devices.allSatisfy { store.privacy.cachedKey(for: $0, now: Date()) != nil })
            let read = try await store.readStream(devices[1])
            #expect(String(decoding: try #require(read.first).data, as: UTF8.self).contains(PrivacyTests.idfa))
        }
    }

    @Test("a conditional append that stores nothing remembers no key it made (nothing flushed it)")
    func nothingStoredNothingCached() async throws {
        try await TestDatabase.with { database in
            let store = try PrivacyTests.store(database)
            defer { store.pool.close() }
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            let devices = ["device-com.example.game/none-1", "device-com.example.game/none-2"]
            let nothing = AppendCondition(function: "string_to_table", arguments: [.null, .text(",")])
            let results = try store.append(try devices.map { StreamAppend([try PrivacyTests.firstOpen()], to: $0) },
                                           where: nothing, on: connection)
            #expect(results.isEmpty)
            #expect(try eventCount(database) == 0)
            #expect(devices.allSatisfy { store.privacy.cachedKey(for: $0, now: Date()) == nil })
        }
    }

    @Test("a condition's function must be a plain identifier: anything else is refused before anything runs")
    func conditionFunctionNameIsChecked() async throws {
        try await withStore { store, database throws in
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try connection.execute("CREATE TABLE gate (stream_id text PRIMARY KEY)")
            let names = ["string_to_table($2, $3) AS gate(stream_id)); DROP TABLE gate; --", "String_To_Table",
                         "public.string_to_table", "1gate", "", String(repeating: "g", count: 64)]
            for name in names {
                let condition = AppendCondition(function: name, arguments: [.text("device-app1/gate-1"), .text(",")])
                #expect(throws: EventStoreError.invalidConditionFunction(name)) {
                    try store.append([StreamAppend([sampleEvent(1)], to: "device-app1/gate-1")], where: condition, on: connection)
                }
            }
            #expect(try eventCount(database) == 0)
            #expect(try connection.query("SELECT count(*) FROM gate").single().decode(Int.self, at: 0) == 0)
        }
    }
}
