import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import Testing

@Suite("ledger verify", .database)
struct VerifyCommandTests {
    @Test("OK on an untouched history; exit 5 naming the event and stream a superuser edited")
    func verifyExitCodes() async throws {
        let database = try await TestDatabase.create()
        defer { database.drop() }
        let pool = PostgresPool(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        defer { pool.close() }
        let store = EventStore(pool: pool, logger: TestDatabase.quietLogger)
        var ids: [UUID] = []
        for n in 0..<10 {
            let event = try Self.session(n)
            ids.append(event.id)
            try await store.append([event], to: "device-app-\(n % 3)")
        }
        let ok = try await LedgerProcess.runDetached(["verify", "--database-url", database.conninfo])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stdout.hasPrefix("OK: 10 events in 3 streams"))
        // Issue 3, item 8: a progress bar, on stderr (stdout stays the answer), ending at the whole count.
        #expect(ok.stderr.contains("verify [\(String(repeating: "#", count: 30))] 10/10 events"), "\(ok.stderr)")

        let admin = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        try admin.run(script: "ALTER TABLE events DISABLE TRIGGER events_immutable")
        try admin.execute("UPDATE events SET occurred_at = occurred_at - interval '1 day' WHERE event_id = \(ids[4])")
        try admin.run(script: "ALTER TABLE events ENABLE TRIGGER events_immutable")
        let broken = try await LedgerProcess.runDetached(["verify", "--json", "--database-url", database.conninfo])
        #expect(broken.status == 5)
        #expect(!broken.stderr.contains("verify ["), "no bar with --json")
        let report = try JSONSerialization.jsonObject(with: Data(broken.stdout.utf8)) as? [String: String]
        #expect(report?["intact"] == "false")
        #expect(report?["problem"] == "hash_mismatch")
        #expect(report?["event_id"] == ids[4].uuidString.lowercased())
        #expect(report?["stream_id"] == "device-app-1")
        // Without --json, the one line a person reads names them too.
        let plain = try await LedgerProcess.runDetached(["verify", "--database-url", database.conninfo])
        #expect(plain.status == 5)
        let line = plain.stdout.split(separator: "\n").first { $0.hasPrefix("BROKEN: ") }
        #expect(line?.contains("event \(ids[4].uuidString.lowercased())") == true, "\(plain.stdout)")
        #expect(line?.contains("stream device-app-1") == true, "\(plain.stdout)")
    }

    /// Waits (bounded) until every event is below the gap-safe horizon, so a seal covers them all:
    /// other tests' transactions on the same server can hold the horizon back for a moment.
    static func waitUntilReadable(_ pool: PostgresPool) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let row = try await pool.query("""
                SELECT count(*) FILTER (WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())), count(*) FROM events
                """).single()
            if try row.decode(Int.self, at: 0) == row.decode(Int.self, at: 1) { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("the horizon stayed behind the events for 60 s")
    }

    /// A session as the catalog has it (`ledger verify` checks every event against it), with
    /// text that JSON escapes and bytes beyond ASCII.
    static func session(_ n: Int) throws -> NewEvent {
        try NewEvent(SessionStarted(device: DeviceContext(
            platform: .ios, idfv: "21DB6612-09B3-4ECC-84AC-B353B0AF1334", limitAdTracking: true, ip: "203.0.113.\(n % 250)",
            userAgent: UserAgentParts(appName: "Game", appVersion: "1.\(n)", osName: "iOS", osVersion: "17.4",
                                      locale: "en_US", deviceModel: "iPhone15,2", build: "21E236"),
            osVersion: "17.4", appVersion: "1.\(n)", bundleID: "com.example.game", customUserID: "joueur é \"/\(n)")),
                         occurredAt: Date())
    }

    /// A database with a device whose first open holds personal data, and signed seals over it.
    static func sealedLedger(_ database: TestDatabase.Handle, key: SealSigningKey) async throws {
        let pool = PostgresPool(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        defer { pool.close() }
        let store = EventStore(pool: pool, catalog: .standard, logger: TestDatabase.quietLogger)
        let open = FirstOpen(appID: try AppID("com.example.game"), device: DeviceContext(
            platform: .ios, idfa: "EA7583CD-A667-48BC-B806-42ECB2B48606", limitAdTracking: false, ip: "203.0.113.7",
            userAgent: UserAgentParts(appName: "Game", appVersion: "1.0", osName: "iOS", osVersion: "17.4", locale: "en_US",
                                      deviceModel: "iPhone15,2", build: "21E236"),
            osVersion: "17.4", appVersion: "1.0", bundleID: "com.example.game"))
        try await store.append([try NewEvent(open, occurredAt: Date())], to: "device-com.example.game/export-1")
        let plain = EventStore(pool: pool, logger: TestDatabase.quietLogger)
        for n in 0..<5 {
            try await plain.append([try Self.session(n)], to: "device-com.example.game/export-\(n % 2)")
        }
        try await Self.waitUntilReadable(pool)
        let sealed = try await LedgerProcess.runDetached(["seal", "--database-url", database.conninfo],
                                                         environment: ["LEDGER_SEAL_SIGNING_KEY": key.base64])
        #expect(sealed.status == 0, "\(sealed.stderr)")
        #expect(sealed.stdout.contains("signed by \(key.publicKey.keyID)"), "\(sealed.stdout)")
    }

    @Test("export writes the stored form; verify --export re-checks it with no database; one byte changed fails naming the line")
    func exportRoundTrip() async throws {
        let database = try await TestDatabase.create()
        defer { database.drop() }
        let key = SealSigningKey.generate()
        try await Self.sealedLedger(database, key: key)
        let export = try await LedgerProcess.runDetached(["export", "--database-url", database.conninfo])
        #expect(export.status == 0, "\(export.stderr)")
        #expect(!export.stdout.contains("EA7583CD"), "the stored form keeps personal fields sealed")
        let lines = export.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.filter { $0.contains(#""kind":"event""#) }.count == 6)
        #expect(lines.filter { $0.contains(#""kind":"seal""#) }.count >= 1)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("export-\(UUID()).jsonl")
        defer { try? FileManager.default.removeItem(at: file) }
        try export.stdout.write(to: file, atomically: true, encoding: .utf8)
        // No database: the URL points nowhere.
        let offline = ["verify", "--export", file.path, "--public-key", key.publicKey.base64,
                       "--database-url", "host=/nonexistent dbname=none connect_timeout=1"]
        let ok = try await LedgerProcess.runDetached(offline)
        #expect(ok.status == 0, "\(ok.stdout) \(ok.stderr)")
        #expect(ok.stdout.hasPrefix("OK: 6 events in 2 streams"), "\(ok.stdout)")

        // One byte of an event's data changed (its third line): that line is named.
        var edited = lines
        let target = try #require(edited.firstIndex { $0.contains(#"\"app_version\": \"1.1\""#) })
        edited[target] = edited[target].replacingOccurrences(of: #"\"app_version\": \"1.1\""#, with: #"\"app_version\": \"1.7\""#)
        try edited.joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
        let broken = try await LedgerProcess.runDetached(offline + ["--json"])
        #expect(broken.status == 5)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(broken.stdout.utf8)) as? [String: String])
        #expect(report["line"] == String(target + 1), "\(broken.stdout)")

        // A seal line's digest changed: the seal line is named.
        edited = lines
        let sealLine = try #require(edited.firstIndex { $0.contains(#""kind":"seal""#) })
        let digest = try #require(edited[sealLine].range(of: #""digest":""#))
        let at = edited[sealLine].index(digest.upperBound, offsetBy: 0)
        let flipped: Character = edited[sealLine][at] == "0" ? "1" : "0"
        edited[sealLine].replaceSubrange(at...at, with: String(flipped))
        try edited.joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
        let seal = try await LedgerProcess.runDetached(offline + ["--json"])
        #expect(seal.status == 5)
        let sealReport = try #require(try JSONSerialization.jsonObject(with: Data(seal.stdout.utf8)) as? [String: String])
        #expect(sealReport["line"] == String(sealLine + 1), "\(seal.stdout)")

        // The decrypted form is for people: personal fields opened, and it says so.
        let people = try await LedgerProcess.runDetached(["export", "--decrypted", "--database-url", database.conninfo])
        #expect(people.stdout.contains("EA7583CD"))
        #expect(people.stderr.contains("personal data"))
    }

    @Test("checkpoint, append more, verify against the checkpoint; a rewrite with recomputed seals fails on the signature")
    func checkpointThroughTheCLI() async throws {
        let database = try await TestDatabase.create()
        defer { database.drop() }
        let key = SealSigningKey.generate()
        try await Self.sealedLedger(database, key: key)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("checkpoint-\(UUID()).json")
        defer { try? FileManager.default.removeItem(at: file) }
        let made = try await LedgerProcess.runDetached(["checkpoint", "--output", file.path, "--database-url", database.conninfo],
                                                       environment: ["LEDGER_SEAL_SIGNING_KEY": key.base64])
        #expect(made.status == 0, "\(made.stderr)")
        let pool = PostgresPool(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        defer { pool.close() }
        try await EventStore(pool: pool, logger: TestDatabase.quietLogger).append(
            [try Self.session(99)], to: "device-com.example.game/later")
        try await Self.waitUntilReadable(pool)
        let resealed = try await LedgerProcess.runDetached(["seal", "--database-url", database.conninfo],
                                                           environment: ["LEDGER_SEAL_SIGNING_KEY": key.base64])
        #expect(resealed.status == 0)
        let verify = ["verify", "--checkpoint", file.path, "--database-url", database.conninfo]
        let ok = try await LedgerProcess.runDetached(verify, environment: ["LEDGER_SEAL_PUBLIC_KEY": key.publicKey.base64])
        #expect(ok.status == 0, "\(ok.stdout) \(ok.stderr)")
        #expect(ok.stdout.contains("the log extends the checkpoint"), "\(ok.stdout)")

        let admin = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        try admin.run(script: "ALTER TABLE seals DISABLE TRIGGER seals_immutable")
        try admin.execute("UPDATE seals SET digest = sha256(digest) WHERE seal_number = 1")
        try admin.run(script: "ALTER TABLE seals ENABLE TRIGGER seals_immutable")
        let broken = try await LedgerProcess.runDetached(verify + ["--json"], environment: ["LEDGER_SEAL_PUBLIC_KEY": key.publicKey.base64])
        #expect(broken.status == 5)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(broken.stdout.utf8)) as? [String: String])
        #expect(["seal_mismatch", "seal_signature", "checkpoint_mismatch"].contains(report["problem"] ?? ""), "\(broken.stdout)")
    }
}
