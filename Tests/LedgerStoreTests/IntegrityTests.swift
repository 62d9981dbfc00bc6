import Foundation
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import Testing

@Suite("Immutability and verification", .database)
struct IntegrityTests {
    @Test("UPDATE, DELETE and TRUNCATE on events fail: as the application role by privilege, as a superuser by trigger")
    func immutable() async throws {
        try await withStore { store, database throws in
            try await store.append([sampleEvent(1)], to: "device-app1/imm")
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try connection.run(script: "SET ROLE ledger_app")
            let update = #expect(throws: PostgresError.self) { try connection.execute("UPDATE events SET data = '{}'") }
            #expect(update?.sqlState == SQLState.insufficientPrivilege)
            let delete = #expect(throws: PostgresError.self) { try connection.execute("DELETE FROM events") }
            #expect(delete?.sqlState == SQLState.insufficientPrivilege)
            // The application role can still append and read.
            try connection.run(script: "RESET ROLE")
            let appRole = EventStore(pool: PostgresPool(conninfo: database.conninfo + " options='-c role=ledger_app'",
                                                        logger: TestDatabase.quietLogger), logger: TestDatabase.quietLogger)
            try await appRole.append([sampleEvent(2)], to: "device-app1/imm")
            #expect(try await appRole.readStream("device-app1/imm").count == 2)

            for statement in ["UPDATE events SET data = '{}'", "DELETE FROM events", "TRUNCATE events"] {
                let error = #expect(throws: PostgresError.self) { try connection.execute(PostgresQuery(sql: statement)) }
                #expect(error?.sqlState == "LE100", "\(statement)")
                #expect(error?.message.contains("append-only") == true)
            }
            #expect(try eventCount(database) == 2)
        }
    }

    // schema/0013: gap-safe reads trust transaction_id (issue 3, item 6), so the application's
    // role may not choose it, nor the position.
    @Test("the application role cannot insert an event with a transaction id or position of its choosing")
    func databaseColumnsAreTheDatabases() async throws {
        try await withStore { _, database throws in
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try connection.run(script: "SET ROLE ledger_app")
            let columns = "stream_id, stream_version, event_id, event_type, schema_version, data, metadata, occurred_at, recorded_at, hash, shard_key"
            let values = "'device-app1/cols', 1, gen_random_uuid(), 'SessionStarted', 1, '{}', '{}', now(), now(), decode(repeat('00', 32), 'hex'), 'app1/cols'"
            for (extra, value, overriding) in [("transaction_id", "'1'::xid8", ""), ("position", "1", " OVERRIDING SYSTEM VALUE")] {
                let sql = "INSERT INTO events (\(extra), \(columns))\(overriding) VALUES (\(value), \(values))"
                let error = #expect(throws: PostgresError.self) { try connection.execute(PostgresQuery(sql: sql)) }
                #expect(error?.sqlState == SQLState.insufficientPrivilege, "\(extra)")
            }
            #expect(try eventCount(database) == 0)
            // The event's own columns and its shard key (schema/0021) go in (hashed by the rule the
            // database checks, schema/0016), and the database fills in the rest.
            try connection.execute(PostgresQuery(sql: """
                INSERT INTO events (\(columns))
                SELECT 'device-app1/cols', 1, id, 'SessionStarted', 1, '{}', '{}', t, t,
                       ledger_event_hash(NULL, 'device-app1/cols', 1, id, 'SessionStarted', 1, '{}', '{}', t, t), 'app1/cols'
                FROM (SELECT gen_random_uuid() AS id, now() AS t) AS x
                """))
            #expect(try eventCount(database) == 1)
        }
    }

    // Issue 3, item 8: periodic seals commit to the global order.
    @Test("a store sealing periodically seals what is appended, seal after seal, until cancelled; verify accepts them")
    func periodicSeals() async throws {
        try await withStore { store, database throws in
            let sealing = Task { await store.sealPeriodically(every: .milliseconds(20)) }
            var appended: Int64 = 0
            for round in 1...2 {
                for n in 0..<5 { try await store.append([sampleEvent(n)], to: "device-app1/seal\(round)") }
                appended += 5
                let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
                let deadline = ContinuousClock.now + .seconds(60)
                while try connection.query("SELECT coalesce(sum(event_count), 0)::bigint FROM seals").single()
                    .decode(Int64.self, at: 0) < appended {
                    guard ContinuousClock.now < deadline else { throw HorizonStalled(count: Int(appended)) }
                    try await Task.sleep(for: .milliseconds(10))
                }
            }
            sealing.cancel()
            await sealing.value
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            let seals = try connection.query("SELECT count(*), sum(event_count)::bigint FROM seals").single()
            #expect(try seals.decode(Int.self, at: 0) >= 2)
            #expect(try seals.decode(Int64.self, at: 1) == 10)
            let report = try await store.verify()
            #expect(report.isIntact, "\(report)")
        }
    }

    // schema/0008: the value rules are domains on the columns, and hold for any INSERT.
    @Test("a direct INSERT breaking a value rule fails with check_violation naming the rule, and stores nothing")
    func valueRulesHoldForDirectSQL() async throws {
        try await withStore { _, database throws in
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try connection.run(script: "SET ROLE ledger_app")
            let valid: [String: String] = [
                "stream_id": "'device-app1/x'", "stream_version": "1", "event_type": "'SessionStarted'", "schema_version": "1",
                "data": "'{}'", "metadata": "'{}'", "hash": "decode(repeat('00', 32), 'hex')", "shard_key": "'app1/x'",
            ]
            let broken: [(column: String, value: String, rule: String)] = [
                ("stream_id", "''", "events_stream_id_length"), ("stream_id", "repeat('s', 257)", "events_stream_id_length"),
                ("stream_version", "0", "events_stream_version_positive"), ("event_type", "''", "events_event_type_length"),
                ("schema_version", "0", "events_schema_version_positive"), ("data", "'[]'", "events_data_is_object"),
                ("metadata", "'\"text\"'", "events_metadata_is_object"), ("hash", "'\\x00'::bytea", "events_hash_length"),
            ]
            for (column, value, rule) in broken {
                var values = valid
                values[column] = value
                let names = values.keys.sorted()
                let sql = "INSERT INTO events (event_id, occurred_at, recorded_at, \(names.joined(separator: ", "))) "
                    + "VALUES (gen_random_uuid(), now(), now(), \(names.map { values[$0]! }.joined(separator: ", ")))"
                let error = #expect(throws: PostgresError.self) { try connection.execute(PostgresQuery(sql: sql)) }
                #expect(error?.sqlState == "23514", "\(column) = \(value)")
                #expect(error?.message.contains(rule) == true, "\(column) = \(value): \(error?.message ?? "")")
            }
            #expect(try eventCount(database) == 0)
            // The valid row itself goes in, hashed by the rule the database checks (schema/0016).
            try connection.execute(PostgresQuery(sql: """
                INSERT INTO events (event_id, occurred_at, recorded_at, stream_id, stream_version, event_type, schema_version,
                                    data, metadata, hash, shard_key)
                SELECT id, t, t, 'device-app1/x', 1, 'SessionStarted', 1, '{}', '{}',
                       ledger_event_hash(NULL, 'device-app1/x', 1, id, 'SessionStarted', 1, '{}', '{}', t, t), 'app1/x'
                FROM (SELECT gen_random_uuid() AS id, now() AS t) AS x
                """))
            #expect(try eventCount(database) == 1)
        }
    }

    @Test("verify passes on an untouched history and names the event a superuser edited")
    func verifyNamesEditedEvent() async throws {
        try await withStore { store, database throws in
            var target: UUID?
            for n in 0..<40 {
                let event = sampleEvent(n)
                if n == 17 { target = event.id }
                try await store.append([event], to: "device-app1/v\(n % 4)")
            }
            let seals = try await sealCovering(store, count: 40)
            let clean = try await store.verify()
            #expect(clean.isIntact)
            #expect(clean.eventsChecked == 40)
            #expect(clean.streamsChecked == 4)
            #expect(clean.sealsChecked == seals.count)

            let admin = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try admin.run(script: "ALTER TABLE events DISABLE TRIGGER events_immutable")
            try admin.execute("UPDATE events SET data = '{\"n\": 999}' WHERE event_id = \(try #require(target))")
            try admin.run(script: "ALTER TABLE events ENABLE TRIGGER events_immutable")
            let report = try await store.verify()
            #expect(report.problem?.kind == .hashMismatch)
            #expect(report.problem?.eventID == target)
            #expect(report.problem?.streamID == "device-app1/v1")
            #expect(report.problem?.message.contains(target!.uuidString.lowercased()) == true)
        }
    }

    @Test("verify names a removed event: by its stream's version gap, or by the seal over a stream's tail")
    func verifyNamesRemovedEvents() async throws {
        try await withStore { store, database throws in
            for n in 0..<12 { try await store.append([sampleEvent(n)], to: "device-app1/r\(n % 2)") }
            let firstSeals = try await sealCovering(store, count: 12)
            try await store.append([sampleEvent(100)], to: "device-app1/r0")
            _ = try await sealCovering(store, count: 13, alreadySealed: 12)
            let admin = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try admin.run(script: "ALTER TABLE events DISABLE TRIGGER events_immutable")
            // The last event of stream r1: its chain stays consistent, only the seal can tell.
            try admin.execute("DELETE FROM events WHERE stream_id = 'device-app1/r1' AND stream_version = 6")
            var report = try await store.verify()
            #expect(report.problem?.kind == .sealMismatch)
            // The seal that covers the removed event: one of those made over the first twelve.
            #expect(firstSeals.map(\.number).contains(report.problem?.sealNumber ?? -1))
            // An event in the middle of stream r0: a version gap.
            try admin.execute("DELETE FROM events WHERE stream_id = 'device-app1/r0' AND stream_version = 3")
            try admin.run(script: "ALTER TABLE events ENABLE TRIGGER events_immutable")
            report = try await store.verify()
            #expect(report.problem?.kind == .versionGap)
            #expect(report.problem?.streamID == "device-app1/r0")
            #expect(report.problem?.streamVersion == 4)
        }
    }

    @Test("a seal covers only readable events; sealing twice with nothing new makes no seal")
    func sealing() async throws {
        try await withStore { store, _ throws in
            #expect(try await store.seal() == nil)
            try await store.append((0..<5).map { sampleEvent($0) }, to: "device-app1/seal")
            let first = try await sealCovering(store, count: 5)
            #expect(first.first?.number == 1)
            #expect(first.reduce(0) { $0 + $1.eventCount } == 5)
            #expect(try await store.seal() == nil)
            try await store.append([sampleEvent(9)], to: "device-app1/seal")
            let second = try await sealCovering(store, count: 6, alreadySealed: 5)
            #expect(second.first?.number == Int64(first.count + 1))
            #expect(second.reduce(0) { $0 + $1.eventCount } == 1)
            #expect(try await store.verify().sealsChecked == first.count + second.count)
        }
    }

    @Test("batches chain from the stream's head (new stream, after single appends, after batches): verify recomputes every hash")
    func batchChainsVerify() async throws {
        try await withStore { store, _ throws in
            try await store.append((0..<7).map { sampleEvent($0) }, to: "device-app1/chain")
            try await store.append([sampleEvent(7)], to: "device-app1/chain")
            try await store.append([sampleEvent(8)], to: "device-app1/chain")
            try await store.append((9..<12).map { sampleEvent($0) }, to: "device-app1/chain", expected: .exact(9))
            let last = try await store.append((12..<14).map { sampleEvent($0) }, to: "device-app1/chain")
            #expect(last.events.map(\.streamVersion) == [13, 14])
            let read = try await store.readStream("device-app1/chain")
            #expect(read.map(\.streamVersion) == Array(1...14))
            let report = try await store.verify()
            #expect(report.isIntact)
            #expect(report.eventsChecked == 14)
        }
    }
}
