import Foundation
@testable import LedgerPostgres
@testable import LedgerStore
import LedgerTestKit
import Testing

/// The lone event appended outside a transaction, hashed by the store (`EventStore+AppendHashed`):
/// its hash must be the one the database's rule gives, its `recorded_at` the database's clock,
/// and every rule the other statements keep must still hold.
@Suite("Single appends hashed by the store", .database)
struct HashedAppendTests {
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

    @Test("the store's hash is the database's (ledger_event_hash) for payloads of every shape, and verify agrees")
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
            // statement appends, with the database's hash where the stream has events (an exact
            // version, any version), with the store's for a stream that turns out new.
            let other = anotherStore(database, maxConnections: 1)
            defer { other.pool.close() }
            results.append(try await other.append([Self.event(payloads[0])], to: "device-app1/h0", expected: .exact(3)))
            results.append(try await other.append([Self.event(payloads[1])], to: "device-app1/h1"))
            results.append(try await other.append([Self.event(payloads[2])], to: "device-app1/h9"))

            #expect(store.hashedAppends.count == 12)
            #expect(other.hashedAppends.count == 1)
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

    @Test("the odds that a stream with no known head is new: guessed new only while four in five such streams were (one miss outweighs four new ones), within ±16")
    func newStreamOdds() {
        let odds = NewStreamOdds()
        #expect(!odds.favoursNew)  // no record: read the head
        odds.note(wasNew: true)
        #expect(odds.favoursNew)
        odds.note(wasNew: false)
        for _ in 0..<3 { odds.note(wasNew: true) }
        #expect(!odds.favoursNew)
        odds.note(wasNew: true)
        #expect(odds.favoursNew)
        // A long run of new streams weighs at most 16: four misses undo it.
        for _ in 0..<100 { odds.note(wasNew: true) }
        for _ in 0..<4 { odds.note(wasNew: false) }
        #expect(!odds.favoursNew)
    }

    @Test("a guess that a stream is new (a plain insert as version 1) that meets a stream with events appends after its head; a retry still answers as the first time; a stream with a hint is never guessed; the chain holds")
    func wrongGuessOfANewStream() async throws {
        try await withStore { store, database throws in
            // New streams teach the store to guess: the first is read, the next two are guessed.
            for n in 0..<3 { try await store.append([Self.event(#"{"n":\#(n)}"#)], to: "device-app1/new\(n)") }
            #expect(store.newStreamOdds.favoursNew)
            #expect(try await store.readStream("device-app1/new2").map(\.streamVersion) == [1])
            // Another store (another process) writes a stream this one knows nothing of.
            let other = anotherStore(database, maxConnections: 1)
            defer { other.pool.close() }
            try await other.append([Self.event(#"{"n":10}"#)], to: "device-app1/old")
            let second = try await other.append([Self.event(#"{"n":11}"#)], to: "device-app1/old")
            // The guess fails on the stream's unique key, taking a position with it (positions
            // are taken at insert, and may skip: the global order is by transaction); the
            // head-reading statement then appends as version 3.
            let third = try await store.append([Self.event(#"{"n":12}"#)], to: "device-app1/old")
            let stored = try #require(third.events.first)
            #expect(stored.streamVersion == 3)
            #expect(stored.position == second.events[0].position + 2)
            #expect(!store.newStreamOdds.favoursNew)
            // Guessing again (four more new streams), a retry of an event the other store wrote,
            // to a stream this store knows nothing of, answers as it did there and stores nothing.
            let elsewhere = try await other.append([Self.event(#"{"n":20}"#)], to: "device-app1/elsewhere")
            for n in 3..<7 { try await store.append([Self.event(#"{"n":\#(n)}"#)], to: "device-app1/new\(n)") }
            #expect(store.newStreamOdds.favoursNew)
            var again = Self.event(#"{"n":20}"#)
            again.id = elsewhere.events[0].id
            let retry = try await store.append([again], to: "device-app1/elsewhere")
            #expect(retry.wasDuplicate && retry.events == elsewhere.events)
            #expect(!store.newStreamOdds.favoursNew)
            // A hint this session may not use (the session is newer than it) still says the
            // stream has events: no guess, so no position skipped, and the odds are not moved.
            for n in 7..<11 { try await store.append([Self.event(#"{"n":\#(n)}"#)], to: "device-app1/new\(n)") }
            #expect(store.newStreamOdds.favoursNew)
            let later = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            let lastPosition = try later.query("SELECT max(position) FROM events").single().decode(Int64.self, at: 0)
            let next = try store.append([Self.event(#"{"n":13}"#)], to: "device-app1/old", on: later)
            #expect(next.events.map(\.streamVersion) == [4] && next.events[0].position == lastPosition + 1)
            #expect(store.newStreamOdds.favoursNew)
            #expect(try await store.readStream("device-app1/old").map(\.streamVersion) == [1, 2, 3, 4])
            #expect(try eventCount(database) == 16)
            #expect(try Self.hashesTheDatabaseDisagreesWith(database) == 0)
            #expect(try await store.verify().isIntact)
        }
    }

    @Test("what the store cannot hash itself goes through the database's hashing: numbers it would rewrite, a repeated key, a send's end, a caller's transaction")
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
            // Only the send's first event was hashed by the store.
            #expect(store.hashedAppends.count == 1)
            #expect(try await store.readStream("device-app1/r1").map(\.streamVersion) == [1, 2, 3, 4])
            #expect(try Self.hashesTheDatabaseDisagreesWith(database) == 0)
            #expect(try await store.verify().isIntact)
        }
    }

    @Test("the rules hold through a plain insert: a retry answers as the first time, a taken stream is a conflict, nothing half written")
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

    // A device's first personal event makes its key in the same statement (EventStore+FirstKey);
    // for a stream that turns out new, that statement takes the store's hash of the sealed event.
    @Test("a new device's first sealed event, stored with its new key, is hashed by the store; a device with events gets the database's hash")
    func firstSealedEvent() async throws {
        try await TestDatabase.with { database throws in
            let store = try PrivacyTests.store(database)
            defer { store.pool.close() }
            try await store.append([try PrivacyTests.firstOpen()], to: "device-com.example.game/new")
            #expect(store.hashedAppends.count == 1)
            // A device whose stream has events but no key yet (another process appended them).
            let other = anotherStore(database, maxConnections: 1)
            defer { other.pool.close() }
            try await other.append([Self.event(#"{"n":1}"#)], to: "device-com.example.game/old")
            try await store.append([try PrivacyTests.firstOpen()], to: "device-com.example.game/old")
            #expect(store.hashedAppends.count == 1)
            #expect(try await store.readStream("device-com.example.game/old").map(\.streamVersion) == [1, 2])
            #expect(try PrivacyTests.rawData(database).filter { $0.contains(PrivacyTests.idfa) }.isEmpty)  // sealed
            #expect(try Self.hashesTheDatabaseDisagreesWith(database) == 0)
            // (By a store without the catalog: the other process's event is not one the catalog knows.)
            #expect(try await other.verify().isIntact)
        }
    }

    // recorded_at is "the ledger's" time: the database's clock, which the store reads through the
    // session's measured offset. Here the session is told its server runs 3 s ahead (within the
    // database's tolerance, schema/0016), then an hour ahead (a reading the server's clock was
    // stepped away from since), which the database refuses: the store measures again and the
    // event is stamped by the database's clock, stored once.
    @Test("recorded_at is the database's clock as measured on the session; a reading the database refuses is measured again")
    func recordedAtFollowsTheServerClock() async throws {
        try await withStore { store, database throws in
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            let measured = try connection.serverClock()
            #expect(abs(measured.offset) < 1 && measured.uncertainty < 1)  // one machine: the same clock
            connection.measuredClock = ServerClock(reading: Date().addingTimeInterval(3), readAt: .now, uncertainty: 0)
            let before = Date()
            let result = try store.append([Self.event(#"{"n":1}"#)], to: "device-app1/clock", on: connection)
            let recorded = try #require(result.events.first?.recordedAt)
            #expect(recorded.timeIntervalSince(before) > 2.9 && recorded.timeIntervalSince(before) < 3.5)
            #expect(store.hashedAppends.count == 1)

            connection.measuredClock = ServerClock(reading: Date().addingTimeInterval(3_600), readAt: .now, uncertainty: 0)
            let stepped = try store.append([Self.event(#"{"n":2}"#)], to: "device-app1/clock2", on: connection)
            let stamped = try #require(stepped.events.first?.recordedAt)
            #expect(stamped.timeIntervalSinceNow < 10, "stamped by the database's clock, not the refused reading")
            #expect(store.hashedAppends.count == 1, "the refused insert stored nothing; the database's statement did")
            #expect(abs(try connection.serverClock().offset) < 1, "measured again")
            #expect(try await store.readStream("device-app1/clock2").count == 1)
            #expect(try await store.verify().isIntact)
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
                                        occurred_at, recorded_at, hash)
                    SELECT \(stream)::text, 1, id, 'SessionStarted', 1, '{"n":0}', '{}', now(), t,
                           ledger_event_hash(NULL, \(stream)::text, 1, id, 'SessionStarted', 1, '{"n":0}', '{}', now(), t)
                    FROM (SELECT gen_random_uuid() AS id,
                                 date_trunc('milliseconds', clock_timestamp()) + interval '1 hour' AS t) AS x
                    """)
            }
            try connection.run(script: "ALTER TABLE events ENABLE TRIGGER events_checked")
            let ahead = try await store.readStream("device-app1/ahead")[0].recordedAt
            // The database's head-reading statement (the store knows nothing of the stream); then
            // hashed by the store after its hint; then the database's statements again: a
            // caller's transaction (hinted), a batch, several streams at once.
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
            #expect(store.hashedAppends.count == 1)
            #expect(try Self.hashesTheDatabaseDisagreesWith(database) == 0)
            #expect(try await store.verify().isIntact)
        }
    }
}
