import Foundation
@testable import LedgerPostgres
@testable import LedgerStore
import LedgerTestKit
import Testing

/// The single append's two statements (`EventStore+Append`), the cached-head insert and the
/// general one that reads the head: each stored hash must be the one the database's rule gives,
/// `recorded_at` never goes back along a stream, and every append rule holds through either.
@Suite("Single appends", .database)
struct SingleAppendTests {
    /// Every stored hash that differs from `ledger_event_hash` over the stored row and the
    /// stream's previous event: the database's own rule, which `ledger verify` applies too.
    static func hashesTheDatabaseDisagreesWith(_ database: TestDatabase.Handle) throws -> Int {
        let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        return try connection.query("""
            SELECT count(*) FROM events AS e
            WHERE e.hash <> ledger_event_hash(
                (SELECT p.hash FROM events AS p WHERE p.stream_id = e.stream_id AND p.stream_version = e.stream_version - 1),
                e.stream_id, e.stream_version, e.event_id, e.event_type, e.schema_version, e.data, e.metadata,
                e.occurred_at, e.recorded_at)
            """).single().decode(Int.self, at: 0)
    }

    static func event(_ json: String, type: String = "SessionStarted", at seconds: Double = 1_763_000_000.123_456_7) -> NewEvent {
        NewEvent(type: type, data: Data(json.utf8), metadata: Data(#"{"actor": "test", "app_id":"com.example.app"}"#.utf8),
                 occurredAt: Date(timeIntervalSince1970: seconds))
    }

    @Test("the stored hash is the database's rule (ledger_event_hash) for payloads of every shape, and verify agrees")
    func hashAgreesWithTheDatabase() async throws {
        try await withStore { store, database throws in
            let payloads = [
                #"{"n":1,"note":"é"}"#, #"{ "z" : [1, 2.50, -3], "a": {"bb": null, "c": true}, "ab": "tab\tquote\"" }"#,
                #"{"emoji":"😀","escaped":"\u00e9\ud83d\ude00","control":"\u0007","slash":"a\/b"}"#,
                #"{"money":"12.34","big":123456789012345678901234567890.5,"zero":0.000}"#,
            ]
            var results: [AppendResult] = []
            for (n, payload) in payloads.enumerated() {
                // A stream's first event (no stream expected), then the hint (any, exact).
                results.append(try await store.append([Self.event(payload)], to: "device-app1/h\(n)", expected: .noStream))
                results.append(try await store.append([Self.event(payload, at: 1_763_000_001)], to: "device-app1/h\(n)"))
                results.append(try await store.append([Self.event(payload)], to: "device-app1/h\(n)", expected: .exact(2)))
            }
            // Another store (another process) knows nothing of the streams: the head-reading
            // statement appends (an exact version, any version, a stream that turns out new).
            let other = anotherStore(database, maxConnections: 1)
            defer { other.pool.close() }
            results.append(try await other.append([Self.event(payloads[0])], to: "device-app1/h0", expected: .exact(3)))
            results.append(try await other.append([Self.event(payloads[1])], to: "device-app1/h1"))
            results.append(try await other.append([Self.event(payloads[2])], to: "device-app1/h9"))

            #expect(try Self.hashesTheDatabaseDisagreesWith(database) == 0)
            #expect(try await store.verify().isIntact)
            // What the append returned is what was stored.
            for result in results {
                let appended = try #require(result.events.first)
                let stored = try #require(try await store.event(id: appended.id))
                #expect(stored.hash == appended.hash)
                #expect(stored.position == appended.position && stored.streamVersion == appended.streamVersion)
                #expect(stored.recordedAt == appended.recordedAt)
                #expect(stored.transactionID == appended.transactionID)
            }
            #expect(results.map(\.events[0].streamVersion) == [1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 4, 4, 1])
        }
    }

    @Test("a stream another process wrote is appended after its head; a retry of that process's event answers as it did there; the chain holds")
    func streamWrittenElsewhere() async throws {
        try await withStore { store, database throws in
            let other = anotherStore(database, maxConnections: 1)
            defer { other.pool.close() }
            try await other.append([Self.event(#"{"n":10}"#)], to: "device-app1/old")
            try await other.append([Self.event(#"{"n":11}"#)], to: "device-app1/old")
            let third = try await store.append([Self.event(#"{"n":12}"#)], to: "device-app1/old")
            #expect(third.events.map(\.streamVersion) == [3])
            let elsewhere = try await other.append([Self.event(#"{"n":20}"#)], to: "device-app1/elsewhere")
            var again = Self.event(#"{"n":20}"#)
            again.id = elsewhere.events[0].id
            let retry = try await store.append([again], to: "device-app1/elsewhere")
            #expect(retry.wasDuplicate && retry.events == elsewhere.events)
            #expect(try await store.readStream("device-app1/old").map(\.streamVersion) == [1, 2, 3])
            #expect(try eventCount(database) == 4)
            #expect(try Self.hashesTheDatabaseDisagreesWith(database) == 0)
            #expect(try await store.verify().isIntact)
        }
    }

    @Test("payloads jsonb rewrites (numbers, a repeated key), a send's end and a caller's transaction chain as the database's rule says")
    func databaseHashesTheRest() async throws {
        try await withStore { store, database throws in
            try await store.append([Self.event(#"{"n":1e3}"#)], to: "device-app1/r1")
            try await store.append([Self.event(#"{"n":-0}"#)], to: "device-app1/r1")
            try await store.append([Self.event(#"{"k":1,"k":2}"#)], to: "device-app1/r1")
            let send = "send-\(UUID().uuidString.lowercased())"
            try await store.append([Self.event(#"{"send_id":"x"}"#, type: "SendRequested")], to: send)
            try await store.append([Self.event(#"{"outcome":"ok"}"#, type: "SendSucceeded")], to: send)
            _ = try await store.pool.withConnection { connection in
                try connection.transaction { connection in
                    try store.append([Self.event(#"{"n":2}"#)], to: "device-app1/r1", on: connection)
                }
            }
            #expect(try await store.readStream("device-app1/r1").map(\.streamVersion) == [1, 2, 3, 4])
            #expect(try Self.hashesTheDatabaseDisagreesWith(database) == 0)
            #expect(try await store.verify().isIntact)
        }
    }

    @Test("the rules hold through the cached-head insert: a retry answers as the first time, a taken stream is a conflict, nothing half written")
    func rulesHold() async throws {
        try await withStore { store, database throws in
            let event = Self.event(#"{"n":1}"#)
            let first = try await store.append([event], to: "device-app1/k")
            // The retry tries the next version after the hint and meets the event's id.
            let retry = try await store.append([event], to: "device-app1/k")
            #expect(retry.wasDuplicate && retry.events == first.events)
            let taken = await #expect(throws: EventStoreError.self) {
                try await store.append([Self.event(#"{"n":2}"#)], to: "device-app1/k", expected: .noStream)
            }
            guard case .wrongExpectedVersion(_, _, let actual)? = taken else { Issue.record("\(String(describing: taken))"); return }
            #expect(actual == 1)
            let stale = await #expect(throws: EventStoreError.self) {
                try await store.append([Self.event(#"{"n":3}"#)], to: "device-app1/k", expected: .exact(5))
            }
            guard case .wrongExpectedVersion? = stale else { Issue.record("\(String(describing: stale))"); return }
            let clash = await #expect(throws: EventStoreError.self) {
                try await store.append([Self.event(#"{"n":4}"#, at: 1)].map { var e = $0; e.id = event.id; return e }, to: "device-app1/k")
            }
            guard case .eventIDConflict? = clash else { Issue.record("\(String(describing: clash))"); return }
            #expect(try eventCount(database) == 1)
        }
    }

    @Test("a device's first sealed event chains as the database's rule says, on a new stream and on one with events")
    func firstSealedEvent() async throws {
        try await TestDatabase.with { database throws in
            let store = try PrivacyTests.store(database)
            defer { store.pool.close() }
            try await store.append([try PrivacyTests.firstOpen()], to: "device-com.example.game/new")
            // A device whose stream has events but no key yet (another process appended them).
            let other = anotherStore(database, maxConnections: 1)
            defer { other.pool.close() }
            try await other.append([Self.event(#"{"n":1}"#)], to: "device-com.example.game/old")
            try await store.append([try PrivacyTests.firstOpen()], to: "device-com.example.game/old")
            #expect(try await store.readStream("device-com.example.game/old").map(\.streamVersion) == [1, 2])
            #expect(try PrivacyTests.rawData(database).filter { $0.contains(PrivacyTests.idfa) }.isEmpty)  // sealed
            #expect(try Self.hashesTheDatabaseDisagreesWith(database) == 0)
            // (By a store without the catalog: the other process's event is not one the catalog knows.)
            #expect(try await other.verify().isIntact)
        }
    }

    @Test("recorded_at never goes back along a stream, whichever statement appends and whatever clock it reads")
    func recordedAtNeverGoesBack() async throws {
        try await withStore { store, database throws in
            // A head recorded an hour ahead (a clock that ran fast), hashed by the database's rule:
            // written as the owner past the database's check of the time (schema/0016), as a head
            // stamped before that check existed would be.
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try connection.run(script: "ALTER TABLE events DISABLE TRIGGER events_checked")
            for stream in ["device-app1/ahead", "device-app1/ahead2"] {
                try connection.execute("""
                    INSERT INTO events (stream_id, stream_version, event_id, event_type, schema_version, data, metadata,
                                        occurred_at, recorded_at, hash, shard_key)
                    SELECT \(stream)::text, 1, id, 'SessionStarted', 1, '{"n":0}', '{}', now(), t,
                           ledger_event_hash(NULL, \(stream)::text, 1, id, 'SessionStarted', 1, '{"n":0}', '{}', now(), t),
                           ledger_shard_key(\(stream)::text, '{}', NULL)
                    FROM (SELECT gen_random_uuid() AS id,
                                 date_trunc('milliseconds', clock_timestamp()) + interval '1 hour' AS t) AS x
                    """)
            }
            try connection.run(script: "ALTER TABLE events ENABLE TRIGGER events_checked")
            let ahead = try await store.readStream("device-app1/ahead")[0].recordedAt
            // The head-reading statement (the store knows nothing of the stream); then the
            // cached-head insert, outside and inside a caller's transaction; a batch; several
            // streams at once.
            try await store.append([Self.event(#"{"n":1}"#)], to: "device-app1/ahead")
            try await store.append([Self.event(#"{"n":2}"#)], to: "device-app1/ahead")
            _ = try await store.pool.withConnection { connection in
                try connection.transaction { connection in
                    try store.append([Self.event(#"{"n":3}"#)], to: "device-app1/ahead", on: connection)
                }
            }
            try await store.append([Self.event(#"{"n":4}"#), Self.event(#"{"n":5}"#)], to: "device-app1/ahead")
            try await store.pool.withConnection { connection in
                _ = try store.append([StreamAppend([Self.event(#"{"n":1}"#)], to: "device-app1/ahead2"),
                                      StreamAppend([Self.event(#"{"n":1}"#)], to: "device-app1/fresh")],
                                     on: connection)
            }
            let stream = try await store.readStream("device-app1/ahead")
            #expect(stream.count == 6)
            #expect(stream.allSatisfy { $0.recordedAt == ahead })
            let second = try await store.readStream("device-app1/ahead2")
            #expect(second.count == 2 && second[1].recordedAt == second[0].recordedAt)
            #expect(try #require(try await store.readStream("device-app1/fresh").first).recordedAt < ahead)
            #expect(try Self.hashesTheDatabaseDisagreesWith(database) == 0)
            #expect(try await store.verify().isIntact)
        }
    }
}
