import Foundation
import LedgerPostgres
@testable import LedgerStore
import LedgerTestKit
import Testing

/// The appends' two reads about keys, a stream's head and whether an id is stored, through the
/// view `event_key_rows` (schema/0014): one relation scanned each (one index probe, once the table
/// has rows) whatever the layout. With `events` partitioned by time
/// (`LEDGER_TEST_EVENTS_PARTITIONED=1`), the view reads `event_keys`, so an append does not slow
/// down with every month added. With `events` hash-partitioned on its shard key
/// (`LEDGER_TEST_EVENTS_SHARDED=1`), the reads name no shard key, so each probes every partition's
/// index: four, however many events (docs/scaling.md).
@Suite("Appends' key reads: one relation in either layout", .database)
struct AppendKeyReadTests {
    /// The scan nodes of `sql`'s generic plan as the application's role plans it, e.g.
    /// `Index Scan Backward using … on event_keys k`.
    func scans(_ sql: String, _ types: String, on connection: PostgresConnection) throws -> [String] {
        try connection.run(script: "SET ROLE ledger_app; DEALLOCATE ALL; PREPARE probe(\(types)) AS \(sql)")
        try connection.run(script: "SET plan_cache_mode = force_generic_plan")
        let plan = try connection.query(PostgresQuery(sql: "EXPLAIN (COSTS OFF) EXECUTE probe(\(types.split(separator: ",").map { _ in "NULL" }.joined(separator: ",")))"))
            .map { try $0.decode(String.self, at: 0) }
        try connection.run(script: "RESET plan_cache_mode; DEALLOCATE probe; RESET ROLE")
        return plan.filter { $0.contains("Scan") }.map { $0.trimmingCharacters(in: .whitespaces) }
    }

    /// Whether the scan node `line` reads `table` (`… on events`, `… on events e`), not a partition.
    func reads(_ line: String, _ table: String) -> Bool {
        line.hasSuffix(" on \(table)") || line.contains(" on \(table) ")
    }

    @Test("a stream's head and a stored id each scan one relation, with 30 more partitions too")
    func onePerRead() async throws {
        try await withStore { store, database throws in
            let admin = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            let partitioned = try admin.query("SELECT to_regclass('event_keys') IS NOT NULL").single().decode(Bool.self, at: 0)
            if partitioned {
                #expect(try admin.query("SELECT ledger_add_event_partitions(30)").single().decode(Int.self, at: 0) > 0)
            }
            let keys = partitioned ? "event_keys" : "events"
            let head = try scans(
                "SELECT * FROM (SELECT 1) AS x LEFT JOIN LATERAL (SELECT stream_version, hash, recorded_at FROM event_key_rows "
                    + "WHERE stream_id = $1 ORDER BY stream_version DESC LIMIT 1) AS head ON true", "text", on: admin)
            let stored = try scans("SELECT EXISTS (SELECT 1 FROM event_key_rows WHERE event_id = $1)", "uuid", on: admin)
            if TestDatabase.shardsEvents {
                for read in [head, stored] {
                    #expect(read.count == 4 && (0..<4).allSatisfy { n in read.contains { reads($0, "events_shard_\(n)") } },
                            "\(read)")
                }
            } else {
                #expect(head.count == 1 && reads(head[0], keys), "\(head)")
                #expect(stored.count == 1 && reads(stored[0], keys), "\(stored)")
            }

            // The store's statements, as the application's role, in this layout: single appends
            // (the head-reading one included), a batch, many streams at once, an idempotent retry
            // and a version conflict all answer from these reads.
            let appRole = EventStore(pool: PostgresPool(conninfo: database.conninfo + " options='-c role=ledger_app'",
                                                        logger: TestDatabase.quietLogger), logger: TestDatabase.quietLogger)
            defer { appRole.pool.close() }
            try await store.append([sampleEvent(1)], to: "device-app1/keys")
            let second = try await appRole.append([sampleEvent(2)], to: "device-app1/keys", expected: .exact(1))
            #expect(second.events.map(\.streamVersion) == [2])
            let batch = [sampleEvent(3), sampleEvent(4)]
            let appended = try await appRole.append(batch, to: "device-app1/keys")
            #expect(try await appRole.append(batch, to: "device-app1/keys").events.map(\.position)
                    == appended.events.map(\.position))
            do {
                try await appRole.append([sampleEvent(5)], to: "device-app1/keys", expected: .exact(2))
                Issue.record("expected a version conflict")
            } catch EventStoreError.wrongExpectedVersion(_, _, let actual) {
                #expect(actual == 4)
            }
            let connection = try PostgresConnection(conninfo: database.conninfo + " options='-c role=ledger_app'",
                                                    logger: TestDatabase.quietLogger)
            let many = try appRole.append([StreamAppend([sampleEvent(6)], to: "device-app1/keys"),
                                           StreamAppend([sampleEvent(7)], to: "device-app1/other")], on: connection)
            #expect(many.map { $0.events.map(\.streamVersion) } == [[5], [1]])
            #expect(try await store.verify().isIntact)
        }
    }
}
