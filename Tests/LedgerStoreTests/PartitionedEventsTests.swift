import Foundation
import LedgerMigrations
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import Testing

// Issue 3, item 1: the events table is partition-ready (by time) without code changes elsewhere.
// `ops/sql/partition-events-by-time.sql` partitions a ledger in use; `ops/test` also runs the
// whole suite on partitioned databases (LEDGER_TEST_EVENTS_PARTITIONED). This suite checks what
// only the conversion itself can show: history from before it stays readable and verifiable,
// new events go to the month's partition, and the keys hold across partitions.
@Suite("Events partitioned by time", .database)
struct PartitionedEventsTests {
    @Test("partitioning a ledger in use keeps its history readable and verified; appends, retries and conflicts behave as before")
    func partitionALedgerInUse() async throws {
        // A database migrated here, not cloned from the template (partitioned already when the
        // suite runs with LEDGER_TEST_EVENTS_PARTITIONED).
        try await TestDatabase.with(migrated: false) { database throws in
            try Migrator().apply(on: try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger))
            let store = anotherStore(database, maxConnections: 2)
            defer { store.pool.close() }
            let before = (1...3).map { sampleEvent($0) }
            let first = try await store.append(before, to: "device-app1/old", expected: .noStream)
            try await store.append([sampleEvent(4)], to: "device-app1/old")
            let admin = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            // Converted from a session in a zone whose clocks change between the first of this
            // UTC month and the next (as New York's did in November), where adding a month in
            // local time misses the UTC month: the months are UTC months all the same.
            let zone = try admin.query("""
                WITH m AS (SELECT date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS a,
                                  (date_trunc('month', now() AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC' AS b)
                SELECT coalesce((SELECT name FROM pg_timezone_names, m
                                 WHERE (a AT TIME ZONE name) - (a AT TIME ZONE 'UTC') <> (b AT TIME ZONE name) - (b AT TIME ZONE 'UTC')
                                 ORDER BY name LIMIT 1), 'UTC')
                """).single().decode(String.self, at: 0)
            let faraway = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try faraway.execute("SELECT set_config('TimeZone', \(zone), false)")  // the wrapper's sessions start in UTC
            try faraway.run(script: "BEGIN;\n" + (try TestDatabase.partitionScript()) + "\nCOMMIT;")
            try faraway.run(script: "SET TimeZone = 'UTC'")
            // Next month's rows are ahead of the clock, which the database refuses (schema/0016):
            // its check is off for this transaction, which is rolled back.
            try faraway.run(script: "BEGIN; ALTER TABLE events DISABLE TRIGGER events_checked")
            let routed = try faraway.query("""
                WITH month AS (SELECT (date_trunc('month', now() AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC' AS t)
                INSERT INTO events (stream_id, stream_version, event_id, event_type, schema_version, data, occurred_at,
                                    recorded_at, hash)
                SELECT 'device-app1/edge-' || n, 1, gen_random_uuid(), 'SessionStarted', 1, '{}', t, t + n * interval '1 microsecond',
                       decode(repeat('00', 32), 'hex')
                FROM month, (VALUES (-1), (0)) AS edge (n)
                RETURNING tableoid::regclass::text, to_char(recorded_at AT TIME ZONE 'UTC', 'YYYY_MM')
                """).map { (try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1)) }
            try faraway.run(script: "ROLLBACK")
            #expect(routed.count == 2 && routed.allSatisfy { $0.0 == "events_" + $0.1 }, "\(routed)")
            // Once only: a second run is refused whole, and changes nothing.
            let again = #expect(throws: PostgresError.self) { try TestDatabase.partitionEvents(of: database) }
            #expect(again?.sqlState == "LE200")

            // Another process, as the application role, with no hint of any stream.
            let app = EventStore(pool: PostgresPool(conninfo: database.conninfo + " options='-c role=ledger_app'",
                                                    maxConnections: 4, logger: TestDatabase.quietLogger),
                                 logger: TestDatabase.quietLogger)
            defer { app.pool.close() }
            let next = try await app.append([sampleEvent(5)], to: "device-app1/old")
            #expect(next.events.map(\.streamVersion) == [5])
            let batch = (1...100).map { sampleEvent($0) }
            let stored = try await app.append(batch, to: "device-app1/new", expected: .noStream)
            let retry = try await app.append(batch, to: "device-app1/new", expected: .noStream)
            #expect(retry.wasDuplicate && retry.events.map(\.position) == stored.events.map(\.position))
            let oldRetry = try await app.append(before, to: "device-app1/old", expected: .noStream)
            #expect(oldRetry.wasDuplicate && oldRetry.events.map(\.position) == first.events.map(\.position))
            var changed = before[0]
            changed.data = Data(#"{"n":99}"#.utf8)
            await #expect(throws: EventStoreError.eventIDConflict(eventID: changed.id)) {
                try await app.append([changed], to: "device-app1/elsewhere")
            }
            await #expect(throws: EventStoreError.wrongExpectedVersion(stream: "device-app1/old", expected: .exact(4), actual: 5)) {
                try await app.append([sampleEvent(6)], to: "device-app1/old", expected: .exact(4))
            }
            #expect(try eventCount(database) == 105)

            // The old rows stayed where they were; the new ones went to the month's partition.
            let partitions = try admin.query("""
                SELECT tableoid::regclass::text, count(*) FROM events GROUP BY 1 ORDER BY 1
                """).map { (try $0.decode(String.self, at: 0), try $0.decode(Int.self, at: 1)) }
            #expect(partitions.count == 2, "\(partitions)")
            #expect(partitions.contains { $0.0.hasPrefix("events_before_") && $0.1 == 4 }, "\(partitions)")
            #expect(partitions.contains { !$0.0.hasPrefix("events_before_") && $0.1 == 101 }, "\(partitions)")

            // A stream read crosses partitions; the global order runs on from the old positions.
            #expect(try await app.readStream("device-app1/old").map(\.streamVersion) == [1, 2, 3, 4, 5])
            let all = try await readAllInBatches(app, count: 105, batchSize: 40)
            #expect(all.count == 105)
            #expect(all.prefix(4).map(\.streamID) == Array(repeating: "device-app1/old", count: 4))
            #expect(all[4...].allSatisfy { $0.position > all[3].position })

            // Keys hold across partitions: a taken id (in the old partition) stores nothing, even
            // from direct SQL, where the unpartitioned table raised 23505 instead.
            try admin.run(script: "SET ROLE ledger_app")
            let inserted = try admin.query("""
                INSERT INTO events (stream_id, stream_version, event_id, event_type, schema_version, data, occurred_at,
                                    recorded_at, hash)
                SELECT 'device-app1/direct', 1, id, 'SessionStarted', 1, '{}', now(), now(),
                       ledger_event_hash(NULL, 'device-app1/direct', 1, id, 'SessionStarted', 1, '{}', '{}', now(), now())
                FROM (SELECT \(before[0].id) AS id) AS x
                RETURNING position
                """)
            #expect(inserted.count == 0)
            // The keys are the database's: the application role cannot take one without its event.
            let forged = #expect(throws: PostgresError.self) {
                try admin.execute("INSERT INTO event_keys VALUES (gen_random_uuid(), 'device-app1/blocked', 1)")
            }
            #expect(forged?.sqlState == SQLState.insufficientPrivilege)
            let update = #expect(throws: PostgresError.self) { try admin.execute("UPDATE events SET data = '{}'") }
            #expect(update?.sqlState == SQLState.insufficientPrivilege)
            try admin.run(script: "RESET ROLE")
            for statement in ["UPDATE events SET data = '{}'", "DELETE FROM events", "TRUNCATE events",
                              "UPDATE event_keys SET stream_version = 9", "DELETE FROM event_keys"] {
                let error = #expect(throws: PostgresError.self) { try admin.execute(PostgresQuery(sql: statement)) }
                #expect(error?.sqlState == "LE100", "\(statement)")
            }
            // TRUNCATE of a partition by name, which the parent's trigger does not see.
            for partition in partitions.map(\.0) {
                let error = #expect(throws: PostgresError.self) {
                    try admin.execute(PostgresQuery(sql: "TRUNCATE \(PostgresQuery.quoteIdentifier(partition))"))
                }
                #expect(error?.sqlState == "LE100", "\(partition)")
            }
            #expect(try eventCount(database) == 105)

            // Sealed by the sealer's role (schema/0017), verified by the application's.
            let sealer = EventStore(pool: PostgresPool(conninfo: database.conninfo + " options='-c role=ledger_sealer'",
                                                       maxConnections: 1, logger: TestDatabase.quietLogger),
                                    logger: TestDatabase.quietLogger)
            defer { sealer.pool.close() }
            _ = try await sealCovering(sealer, count: 105)
            let report = try await app.verify()
            #expect(report.isIntact && report.eventsChecked == 105 && report.sealsChecked >= 1)

            // Months ahead are added where missing, once each.
            let added = try admin.query("SELECT ledger_add_event_partitions(5)").single().decode(Int.self, at: 0)
            #expect(added == 2)  // the script added three
            #expect(try admin.query("SELECT ledger_add_event_partitions(5)").single().decode(Int.self, at: 0) == 0)
            let fifth = try admin.query("""
                SELECT to_regclass('events_' || to_char(date_trunc('month', now() AT TIME ZONE 'UTC') + interval '5 months', 'YYYY_MM'))::text
                """).single().decode(String?.self, at: 0)
            #expect(fifth != nil)
        }
    }

    @Test("an event stamped ahead of the server's clock before the conversion stays in the first partition")
    func recordedAheadOfTheClock() async throws {
        try await TestDatabase.with(migrated: false) { database throws in
            let admin = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try Migrator().apply(on: admin)
            // A single append may stamp recorded_at a little ahead of the server's clock (the
            // store's reading of it): such a row still belongs before the conversion.
            try admin.execute(PostgresQuery(sql: """
                INSERT INTO events (stream_id, stream_version, event_id, event_type, schema_version, data, metadata,
                                    occurred_at, recorded_at, hash)
                SELECT 'device-app1/ahead', 1, id, 'SessionStarted', 1, '{}', '{}', t, t,
                       ledger_event_hash(NULL, 'device-app1/ahead', 1, id, 'SessionStarted', 1, '{}', '{}', t, t)
                FROM (SELECT gen_random_uuid() AS id, clock_timestamp() + interval '2 seconds' AS t) AS ahead
                """))
            try TestDatabase.partitionEvents(of: database)
            let home = try admin.query("SELECT tableoid::regclass::text FROM events").map { try $0.decode(String.self, at: 0) }
            #expect(home.count == 1 && home[0].hasPrefix("events_before_"), "\(home)")
            let store = anotherStore(database, maxConnections: 1)
            defer { store.pool.close() }
            #expect(try await store.verify().isIntact)
        }
    }
}
