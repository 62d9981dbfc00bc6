import Foundation
import LedgerTestKit
import Synchronization
import LedgerDomain
import LedgerPostgres
import LedgerStore
import Logging
import Testing

/// Tampering directly in PostgreSQL, as the database owner with the immutability triggers
/// disabled and as the application role, and what `verify` makes of it.
@Suite("Tamper evidence", .database)
struct TamperTests {
    /// Recomputes, as someone holding the database but not the signing key would, every hash of
    /// `stream` from `version` on and then every seal's digest in place.
    static func rewriteInPlace(stream: String, from version: Int64, on admin: PostgresConnection) throws {
        let last = try admin.query("SELECT max(stream_version) FROM events WHERE stream_id = \(stream)").single().decode(Int64.self, at: 0)
        for current in version...last {
            try admin.execute("""
                UPDATE events e SET hash = ledger_event_hash(
                    (SELECT p.hash FROM events p WHERE p.stream_id = e.stream_id AND p.stream_version = e.stream_version - 1),
                    e.stream_id, e.stream_version, e.event_id, e.event_type, e.schema_version, e.data, e.metadata,
                    e.occurred_at, e.recorded_at)
                WHERE e.stream_id = \(stream) AND e.stream_version = \(current)
                """)
        }
        let seals = try admin.query("SELECT seal_number, up_to_transaction::text, up_to_position FROM seals ORDER BY seal_number")
        var previous: Data?
        var from = ("0", Int64(0))
        for seal in seals {
            let number = try seal.decode(Int64.self, at: 0)
            let upTo = (try seal.decode(String.self, at: 1), try seal.decode(Int64.self, at: 2))
            let digest = try admin.query("""
                SELECT sha256(coalesce(\(previous), ''::bytea) || coalesce((
                    SELECT string_agg(hash, ''::bytea ORDER BY transaction_id, position) FROM events
                    WHERE (transaction_id, position) > (\(from.0)::xid8, \(from.1))
                      AND (transaction_id, position) <= (\(upTo.0)::xid8, \(upTo.1))), ''::bytea))
                """).single().decode(Data.self, at: 0)
            try admin.execute("UPDATE seals SET previous_digest = \(previous), digest = \(digest) WHERE seal_number = \(number)")
            previous = digest
            from = upTo
        }
    }

    @Test("a sealed event edited, its stream re-hashed and its seals recomputed in place: only the signature and the checkpoint catch it")
    func rewriteWithRecomputedSeals() async throws {
        try await withStore { store, database throws in
            let key = SealSigningKey.generate()
            for n in 0..<20 { try await store.append([sampleEvent(n)], to: "device-app1/t\(n % 2)") }
            let seals = try await sealCovering(store, count: 20, signedBy: key)
            let latest = try #require(try await store.latestSeal())
            #expect(latest.signingKeyID == key.publicKey.keyID)
            // The checkpoint an auditor keeps, through its JSON form.
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .iso8601
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            let checkpoint = try decoder.decode(
                SealCheckpoint.self, from: try encoder.encode(SealCheckpoint(seal: latest, publicKey: key.publicKey)))
            #expect(try checkpoint.seal().digest == latest.digest)
            for n in 20..<25 { try await store.append([sampleEvent(n)], to: "device-app1/t\(n % 2)") }
            let later = try await sealCovering(store, count: 25, alreadySealed: 20, signedBy: key)

            let clean = try await store.verify(publicKey: key.publicKey, checkpoint: checkpoint)
            #expect(clean.isIntact, "\(clean.problem?.message ?? "")")
            #expect(clean.sealsSignatureChecked == seals.count + later.count)
            #expect(clean.checkpointSeal == latest.number)

            let admin = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try admin.run(script: "ALTER TABLE events DISABLE TRIGGER events_immutable; ALTER TABLE seals DISABLE TRIGGER seals_immutable")
            try admin.execute("UPDATE events SET data = '{\"n\": 999}' WHERE stream_id = 'device-app1/t0' AND stream_version = 3")
            try Self.rewriteInPlace(stream: "device-app1/t0", from: 3, on: admin)
            try admin.run(script: "ALTER TABLE events ENABLE TRIGGER events_immutable; ALTER TABLE seals ENABLE TRIGGER seals_immutable")

            // Chains and digests are consistent again: without the public key nothing can tell.
            let unkeyed = try await store.verify()
            #expect(unkeyed.isIntact)
            let signed = try await store.verify(publicKey: key.publicKey)
            #expect(signed.problem?.kind == .sealSignature)
            #expect(seals.map(\.number).contains(signed.problem?.sealNumber ?? -1))
            let checked = try await store.verify(checkpoint: checkpoint)
            #expect(checked.problem?.kind == .checkpointMismatch)
            #expect(checked.problem?.sealNumber == latest.number)
        }
    }

    @Test("a seal signed by another key, or unsigned, fails verification with the ledger's public key")
    func foreignAndUnsignedSeals() async throws {
        try await withStore { store, _ throws in
            let key = SealSigningKey.generate()
            try await store.append([sampleEvent(1)], to: "device-app1/k")
            _ = try await sealCovering(store, count: 1, signedBy: SealSigningKey.generate())
            let report = try await store.verify(publicKey: key.publicKey)
            #expect(report.problem?.kind == .sealSignature)
            #expect(report.problem?.message.contains("another key") == true)
        }
        try await withStore { store, _ throws in
            try await store.append([sampleEvent(2)], to: "device-app1/k2")
            _ = try await sealCovering(store, count: 1)
            let report = try await store.verify(publicKey: SealSigningKey.generate().publicKey)
            #expect(report.problem?.kind == .sealSignature)
            #expect(report.problem?.message.contains("no seal is signed") == true)
        }
    }

    @Test("seals made before the ledger had a key are proven through the first signed one; after it, sealing needs the key")
    func unsignedPrefixThenSigned() async throws {
        try await withStore { store, _ throws in
            let key = SealSigningKey.generate()
            try await store.append([sampleEvent(1)], to: "device-app1/p")
            _ = try await sealCovering(store, count: 1)
            try await store.append([sampleEvent(2)], to: "device-app1/p")
            _ = try await sealCovering(store, count: 2, alreadySealed: 1, signedBy: key)
            let report = try await store.verify(publicKey: key.publicKey)
            #expect(report.isIntact, "\(report.problem?.message ?? "")")
            #expect(report.sealsUnsignedBeforeFirstSigned >= 1)
            try await store.append([sampleEvent(3)], to: "device-app1/p")
            try await waitForHorizon(store, count: 3)
            let refusal = await #expect(throws: EventStoreError.self) { try await store.seal() }
            guard case .sealKeyRequired = refusal else { Issue.record("not sealKeyRequired: \(String(describing: refusal))"); return }
            #expect(try await store.seal(signedBy: key) != nil)
        }
    }

    /// An insert of version `version` of `stream` after its stored version `version - 1` (or as
    /// a first event), with `recordedAt` (SQL) and its hash chained by the database's own rule
    /// unless `hash` (SQL, may read `p.hash` and `x.t`) says otherwise.
    static func directInsert(stream: String, version: Int64, recordedAt: String, hash: String? = nil) -> PostgresQuery {
        let chained = """
            ledger_event_hash(p.hash, '\(stream)', \(version), x.id, 'SessionStarted', 1, '{"n": 4}', '{}', x.t, x.t)
            """
        return PostgresQuery(sql: """
            INSERT INTO events (stream_id, stream_version, event_id, event_type, schema_version, data, metadata, occurred_at,
                                recorded_at, hash, shard_key)
            SELECT '\(stream)', \(version), x.id, 'SessionStarted', 1, '{"n": 4}', '{}', x.t, x.t, \(hash ?? chained),
                   ledger_shard_key('\(stream)', '{}', p.shard_key)
            FROM (SELECT gen_random_uuid() AS id, \(recordedAt) AS t) AS x
            LEFT JOIN events AS p ON p.stream_id = '\(stream)' AND p.stream_version = \(version - 1)
            """)
    }

    @Test("as the application role: the database refuses an event back-dated, ahead of its clock, unchained or after a gap")
    func applicationRoleCannotForgeTimeOrChain() async throws {
        try await withStore { store, database throws in
            for n in 0..<3 { try await store.append([sampleEvent(n)], to: "device-app1/late") }
            let app = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try app.run(script: "SET ROLE ledger_app")
            let attempts: [(String, PostgresQuery, String)] = [
                ("back-dated along its stream", Self.directInsert(stream: "device-app1/late", version: 4,
                                                                  recordedAt: "'2020-01-01T00:00:00Z'::timestamptz"), "LE006"),
                ("back-dated as a new stream", Self.directInsert(stream: "device-app1/new", version: 1,
                                                                 recordedAt: "now() - interval '1 day'"), "LE006"),
                ("ahead of the server's clock", Self.directInsert(stream: "device-app1/late", version: 4,
                                                                  recordedAt: "clock_timestamp() + interval '1 day'"), "LE006"),
                ("a hash that does not chain", Self.directInsert(stream: "device-app1/late", version: 4, recordedAt: "now()",
                                                                 hash: "sha256('forged'::bytea)"), "LE005"),
                ("after a missing version", Self.directInsert(stream: "device-app1/late", version: 5, recordedAt: "now()"), "LE005"),
            ]
            for (what, query, code) in attempts {
                let refused = #expect(throws: PostgresError.self, "\(what)") { try app.execute(query) }
                #expect(refused?.sqlState == code, "\(what): \(refused?.message ?? "")")
            }
            // What the rules allow still goes in: the next version, now, chained.
            try app.execute(Self.directInsert(stream: "device-app1/late", version: 4, recordedAt: "clock_timestamp()"))
            #expect(try await store.readStream("device-app1/late").count == 4)
            #expect(try await store.readStream("device-app1/new").isEmpty)
            #expect(try await store.verify().isIntact)
        }
    }

    /// Versions 1…3 of `stream` in one INSERT, without hashes (the database's check chains each
    /// after the one before) but for `forged`, whose hash is made up.
    static func multiRowInsert(stream: String, forged: Int64? = nil) -> PostgresQuery {
        PostgresQuery(sql: """
            INSERT INTO events (stream_id, stream_version, event_id, event_type, schema_version, data, metadata, occurred_at,
                                recorded_at, hash, shard_key)
            SELECT '\(stream)', v, gen_random_uuid(), 'SessionStarted', 1, '{"n": 4}', '{}', now(), now(),
                   CASE WHEN v = \(forged ?? 0) THEN sha256('forged'::bytea) END, ledger_shard_key('\(stream)', '{}', NULL)
            FROM generate_series(1::bigint, 3) AS v ORDER BY v
            """)
    }

    @Test("as the application role: every row of a multi-row INSERT or a COPY is checked, and a failing row stores none of the statement's")
    func applicationRoleStatementsAreCheckedWhole() async throws {
        try await withStore { store, database throws in
            let app = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try app.run(script: "SET ROLE ledger_app")
            // Version 2 forged: the statement fails on it, its versions 1 and 3 with it.
            let forged = #expect(throws: PostgresError.self) { try app.execute(Self.multiRowInsert(stream: "device-app1/multi", forged: 2)) }
            #expect(forged?.sqlState == "LE005")
            #expect(forged?.message.contains("event 2 of stream device-app1/multi") == true, "\(forged?.message ?? "")")
            #expect(try await store.readStream("device-app1/multi").isEmpty)
            // Unforged, the three go in, each chained after the statement's own row before it.
            try app.execute(Self.multiRowInsert(stream: "device-app1/multi"))
            #expect(try await store.readStream("device-app1/multi").map(\.streamVersion) == [1, 2, 3])
            // COPY is checked the same way: a forged second row stores neither.
            let columns = ["stream_id", "stream_version", "event_id", "event_type", "schema_version", "data", "metadata",
                           "occurred_at", "recorded_at", "hash", "shard_key"]
            let now = try app.query("SELECT now()").single().decode(Date.self, at: 0)
            let first = UUID()
            let firstHash = try app.query("""
                SELECT ledger_event_hash(NULL, 'device-app1/copied', 1, \(first), 'SessionStarted', 1, '{}', '{}', \(now), \(now))
                """).single().decode(Data.self, at: 0)
            func row(_ version: Int64, _ id: UUID, _ hash: Data) -> [PostgresValue] {
                [.text("device-app1/copied"), .int64(version), .uuid(id), .text("SessionStarted"), .int32(1), .jsonb("{}"),
                 .jsonb("{}"), .timestamptz(now), .timestamptz(now), .bytea(hash), .text("app1/copied")]
            }
            let copied = #expect(throws: PostgresError.self) {
                _ = try app.copyFrom(table: "events", columns: columns,
                                 rows: [row(1, first, firstHash), row(2, UUID(), Data(repeating: 7, count: 32))])
            }
            #expect(copied?.sqlState == "LE005")
            #expect(try await store.readStream("device-app1/copied").isEmpty)
            _ = try app.copyFrom(table: "events", columns: columns, rows: [row(1, first, firstHash)])
            #expect(try await store.readStream("device-app1/copied").count == 1)
            #expect(try await store.verify().isIntact)
        }
    }

    @Test("as the application role: a forged event, hashed and timed by the rules, fails the catalog in verify (payload, stream, type)",
          arguments: [("send-app1/forged", "SendSucceeded", #"{"attempt": 0}"#),
                      ("device-app1/forged", "SendSucceeded", #"{"attempt": 1}"#),
                      ("decision-app1/forged", "AttributionDecided", #"{"winner": "google"}"#),
                      ("device-app1/forged", "Forged", #"{"n": 1}"#)])
    func forgedEventFailsTheCatalog(stream: String, type: String, data: String) async throws {
        try await withStore { _, database throws in
            let store = EventStore(pool: PostgresPool(conninfo: database.conninfo, maxConnections: 2, logger: TestDatabase.quietLogger),
                                   catalog: .standard, logger: TestDatabase.quietLogger)
            defer { store.pool.close() }
            let app = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try app.run(script: "SET ROLE ledger_app")
            let forged = UUID()
            try app.execute("""
                INSERT INTO events (stream_id, stream_version, event_id, event_type, schema_version, data, metadata, occurred_at,
                                    recorded_at, hash, shard_key)
                SELECT \(stream)::text, 1, \(forged), \(type)::text, 1, \(data)::jsonb, '{}', t, t,
                       ledger_event_hash(NULL, \(stream)::text, 1, \(forged), \(type)::text, 1, \(data)::jsonb, '{}', t, t),
                       ledger_shard_key(\(stream)::text, \(data)::jsonb, NULL)
                FROM (SELECT clock_timestamp() AS t) AS x
                """)
            let report = try await store.verify()
            #expect(report.problem?.kind == .catalog, "\(report.problem?.message ?? "intact")")
            #expect(report.problem?.eventID == forged)
            #expect(report.problem?.streamID == stream)
            #expect(report.problem?.message.contains(type) == true)
        }
    }

    @Test("as the owner with the database's check disabled: an event inserted back-dated is named by verify")
    func backDatedInsertPastTheCheck() async throws {
        try await withStore { store, database throws in
            for n in 0..<3 { try await store.append([sampleEvent(n)], to: "device-app1/late") }
            let admin = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try admin.run(script: "ALTER TABLE events DISABLE TRIGGER events_checked")
            try admin.execute(Self.directInsert(stream: "device-app1/late", version: 4, recordedAt: "'2020-01-01T00:00:00Z'::timestamptz"))
            try admin.run(script: "ALTER TABLE events ENABLE TRIGGER events_checked")
            let forged = try #require(try await store.readStream("device-app1/late").last)
            let report = try await store.verify()
            #expect(report.problem?.kind == .timeOrder)
            #expect(report.problem?.eventID == forged.id)
            #expect(report.problem?.streamVersion == 4)
        }
    }

    @Test("the application's role writes no seals: its sealing loop says so once and ends; the sealer's role seals",
          .timeLimit(.minutes(2)))
    func sealsAreTheSealersToWrite() async throws {
        try await withStore { store, database throws in
            try await store.append([sampleEvent(1)], to: "device-app1/s")
            try await waitForHorizon(store, count: 1)
            let logs = LogCapture()
            let app = EventStore(pool: PostgresPool(conninfo: database.conninfo + " options='-c role=ledger_app'",
                                                    maxConnections: 1, logger: TestDatabase.quietLogger),
                                 logger: logs.logger(label: "ledger.store"))
            defer { app.pool.close() }
            let refused = await #expect(throws: PostgresError.self) { try await app.seal() }
            #expect(refused?.sqlState == SQLState.insufficientPrivilege)
            await app.sealPeriodically(every: .milliseconds(10))  // returns: this role never will seal
            #expect(logs.all.filter { $0.level == .warning && $0.message.contains("not sealing") }.count == 1)
            let sealer = EventStore(pool: PostgresPool(conninfo: database.conninfo + " options='-c role=ledger_sealer'",
                                                       maxConnections: 1, logger: TestDatabase.quietLogger),
                                    logger: TestDatabase.quietLogger)
            defer { sealer.pool.close() }
            #expect(try await sealer.seal() != nil)
            #expect(try await store.verify().isIntact)
        }
    }

    @Test("the last event of a sealed stream removed: the seal is named with the positions it covers")
    func removedSealedTail() async throws {
        try await withStore { store, database throws in
            for n in 0..<6 { try await store.append([sampleEvent(n)], to: "device-app1/tail\(n % 2)") }
            // One seal over all six (other tests' transactions can hold the horizon back meanwhile).
            try await waitForHorizon(store, count: 6)
            let seals = try await sealCovering(store, count: 6)
            try #require(seals.count == 1)
            let admin = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try admin.run(script: "ALTER TABLE events DISABLE TRIGGER events_immutable")
            try admin.execute("DELETE FROM events WHERE stream_id = 'device-app1/tail1' AND stream_version = 3")
            try admin.run(script: "ALTER TABLE events ENABLE TRIGGER events_immutable")
            let report = try await store.verify()
            #expect(report.problem?.kind == .sealMismatch)
            #expect(report.problem?.positions != nil)
            #expect(report.problem?.message.contains("covers 6 events but 5 are there now") == true)
        }
    }

    @Test("sealed events reordered (their transaction ids swapped by the owner): the seal is named with the positions it covers")
    func reorderedSealedEvents() async throws {
        try await withStore { store, database throws in
            var positions: [Int64] = []
            for n in 0..<4 { positions.append(try await store.append([sampleEvent(n)], to: "device-app1/r\(n)").events[0].position) }
            try await waitForHorizon(store, count: 4)
            let seals = try await sealCovering(store, count: 4)
            try #require(seals.count == 1)
            let admin = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try admin.run(script: "ALTER TABLE events DISABLE TRIGGER events_immutable")
            try admin.execute("""
                UPDATE events e SET transaction_id = o.transaction_id
                FROM events o WHERE (e.position, o.position) IN ((\(positions[1]), \(positions[2])), (\(positions[2]), \(positions[1])))
                """)
            try admin.run(script: "ALTER TABLE events ENABLE TRIGGER events_immutable")
            let report = try await store.verify()
            #expect(report.problem?.kind == .sealMismatch, "\(report.problem?.message ?? "intact")")
            #expect(report.problem?.sealNumber == seals[0].number)
            #expect(report.problem?.positions?.contains(positions[1]) == true)
        }
    }

    @Test("events after the last seal are reported as unsealed, with their positions")
    func unsealedReported() async throws {
        try await withStore { store, _ throws in
            for n in 0..<4 { try await store.append([sampleEvent(n)], to: "device-app1/u") }
            _ = try await sealCovering(store, count: 4)
            var positions: [Int64] = []
            for n in 4..<7 { positions.append(try await store.append([sampleEvent(n)], to: "device-app1/u").events[0].position) }
            let report = try await store.verify()
            #expect(report.isIntact)
            #expect(report.unsealedEvents == 3)
            #expect(report.unsealedPositions == positions.min()!...positions.max()!)
        }
    }

    /// The export's lines, collected.
    static func exportLines(_ store: EventStore) async throws -> [String] {
        let lines = Mutex<[String]>([])
        _ = try await store.exportStored { line in lines.withLock { $0.append(line) } }
        return lines.withLock { $0 }
    }

    @Test("an export where a stream's versions do not follow the global order verifies; a missing version is named")
    func exportOutOfGlobalOrder() async throws {
        try await withStore { store, database throws in
            // A takes the lower transaction id, B appends version 1 of x2 and commits, then A appends
            // version 2 of x2: in (transaction, position) order version 2 comes first.
            let a = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            let b = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try a.transaction { a in
                try store.append([sampleEvent(1)], to: "device-app1/x1", on: a)
                try store.append([sampleEvent(2)], to: "device-app1/x2", on: b)
                try store.append([sampleEvent(3)], to: "device-app1/x2", on: a)
            }
            try await waitForHorizon(store, count: 3)
            _ = try await sealCovering(store, count: 3)
            let lines = try await Self.exportLines(store)
            let order = lines.compactMap { line -> String? in
                guard line.contains(#""stream_id":"device-app1/x2""#) else { return nil }
                return line.contains(#""stream_version":2"#) ? "v2" : "v1"
            }
            #expect(order == ["v2", "v1"], "the case under test: version 2 first in the global order")
            let report = StoredExportVerifier().verify(lines: lines.map { Substring($0) })
            #expect(report.isIntact, "\(report.problem ?? "")")
            #expect(report.eventsChecked == 3)
            #expect(report.streamsChecked == 2)
            #expect(report.sealsChecked >= 1)
            // Without version 1 of x2 (and without the seals, which would name the seal first),
            // the missing version is named at the line of the event that needed it.
            let events = lines.filter { $0.contains(#""kind":"event""#) }
            let missing = events.filter { !($0.contains(#""stream_id":"device-app1/x2""#) && $0.contains(#""stream_version":1"#)) }
            let broken = StoredExportVerifier().verify(lines: missing.map { Substring($0) })
            #expect(broken.problem?.contains("has no version 1 before version 2") == true, "\(broken.problem ?? "")")
        }
    }
}
