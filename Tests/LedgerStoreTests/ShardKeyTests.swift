import Foundation
import LedgerPostgres
@testable import LedgerStore
import LedgerTestKit
import Testing

/// The shard key every append writes (schema/0021): a device's facts, the sends they cause and
/// its decisions share `<app>/<device>`, an app's SKAN streams `<app>/skan`, by every append
/// statement (the general single one, the cached-head one, the batch and the multi-stream one).
/// With `LEDGER_TEST_EVENTS_SHARDED=1` `events` is hash-partitioned on that key
/// (ops/sql/distribute-events-by-shard-key.sql), and the same test shows the device's group in
/// one partition, as Citus would keep it on one shard.
@Suite("The shard key of each event", .database)
struct ShardKeyTests {
    static func event(_ type: String, _ json: String = "{}") -> NewEvent {
        NewEvent(type: type, data: Data(json.utf8), occurredAt: testEpoch)
    }

    @Test("a device's events, its sends' streams and its decisions share the device's shard key, by every append path")
    func deviceGroupSharesOneKey() async throws {
        try await withStore { store, database throws in
            let device = "device-app1/dev-a", decision = "decision-app1/dev-a"
            let send = "send-\(UUID().uuidString.lowercased())", batchedSend = "send-\(UUID().uuidString.lowercased())"
            let requested = #"{"device_stream_id":"device-app1/dev-a","provider":"google"}"#
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            // The general single append (no hint yet), then the cached-head one (the hint it left).
            try store.append([Self.event("SessionStarted")], to: device, on: connection)
            try store.append([Self.event("SessionStarted")], to: device, on: connection)
            #expect(store.heads.hitCount == 1)
            // A fact and the send it causes in one statement, as the dispatcher records them.
            _ = try store.append([
                StreamAppend([Self.event("ConversionReported")], to: device),
                StreamAppend([Self.event("SendRequested", requested)], to: send, expected: .noStream),
            ], on: connection)
            // The send's later events name no device: after a hint (cached head), then its end
            // (the general statement, which reads the head), then from a store with no hints.
            try store.append([Self.event("SendAttempted", #"{"attempt":1}"#)], to: send, on: connection)
            try store.append([Self.event("SendSucceeded", #"{"attempt":1}"#)], to: send, on: connection)
            // A send requested and tried in one batch: the second event takes the first's key.
            try store.append([Self.event("SendRequested", requested), Self.event("SendAttempted", #"{"attempt":1}"#)],
                             to: batchedSend, on: connection)
            let freshStore = EventStore(pool: store.pool, logger: TestDatabase.quietLogger)
            try freshStore.append([Self.event("SendAttempted", #"{"attempt":2}"#)], to: batchedSend, on: connection)
            try store.append([Self.event("AttributionDecided")], to: decision, on: connection)
            // An app's SKAN and AdAttributionKit postbacks: one key per app.
            try store.append([Self.event("SKANPostbackReceived")], to: "skan-app1/tx-1", on: connection)
            try store.append([Self.event("SKANPostbackReceived")], to: "skan-app1/aak/pb-1", on: connection)

            let rows = try connection.query("SELECT stream_id, shard_key FROM events ORDER BY position").map {
                (try $0.decode(String.self, at: 0), try $0.decode(String?.self, at: 1))
            }
            #expect(rows.count == 12)
            for (stream, key) in rows {
                #expect(key == (stream.hasPrefix("skan-") ? "app1/skan" : "app1/dev-a"), "\(stream)")
            }
            // Where events are partitioned on the key, the group is in one partition.
            let partitions = try connection.query("""
                SELECT count(DISTINCT tableoid)::int FROM events WHERE stream_id = ANY(\(PostgresQuery.textArrayLiteral([device, decision, send, batchedSend]))::text[])
                """).single().decode(Int.self, at: 0)
            #expect(partitions == 1)
            if TestDatabase.shardsEvents {
                let kind = try connection.query("SELECT relkind::text FROM pg_class WHERE oid = 'events'::regclass").single()
                    .decode(String.self, at: 0)
                #expect(kind == "p")
                let placed = try connection.query("""
                    SELECT count(*)::int FROM events WHERE tableoid::regclass::text = 'events_shard_'
                        || (SELECT r FROM (SELECT satisfies_hash_partition('events'::regclass, 4, r, 'app1/dev-a'::text) AS ok, r
                                                   FROM generate_series(0, 3) AS r) AS t WHERE ok)
                    """).single().decode(Int.self, at: 0)
                #expect(placed == 10)
            }
            #expect(try await store.verify().isIntact)
        }
    }

    @Test("a stream other than a device's, decision's, send's or SKAN's is its own shard key")
    func otherStreamsAreTheirOwnKey() async throws {
        try await withStore { store, database throws in
            try await store.append([Self.event("Noted"), Self.event("Noted")], to: "audit-app1")
            try await store.append([Self.event("Noted")], to: "audit-app1")
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            let keys = try connection.query("SELECT shard_key FROM events ORDER BY position").map { try $0.decode(String?.self, at: 0) }
            #expect(keys == ["audit-app1", "audit-app1", "audit-app1"])
        }
    }
}
