import Foundation
import LedgerPostgres
import LedgerStore
import LedgerTestSupport
import Testing

@Suite("ledger verify")
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
            let event = NewEvent(type: "SessionStarted", data: Data("{\"n\":\(n)}".utf8), occurredAt: Date())
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
}
