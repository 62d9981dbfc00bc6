import Foundation
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import Testing

@Suite("ledger projections", .database)
struct ProjectionsCommandTests {
    static let names = [
        "adservices_tokens", "attribution_process", "branch_identity", "google_obligations", "skan_devices", "skan_postbacks",
    ]

    /// The `--json` lines of `ledger projections status`, by name.
    func statusJSON(_ conninfo: String) async throws -> [String: [String: Any]] {
        let result = try await LedgerProcess.runDetached(["projections", "status", "--json", "--database-url", conninfo])
        #expect(result.status == 0, "\(result.stderr)")
        var byName: [String: [String: Any]] = [:]
        for line in result.stdout.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            // Other tests' transactions on the server can hold the read horizon back: that report is
            // a line of its own.
            if object["readHorizon"] != nil { continue }
            byName[try #require(object["name"] as? String)] = object
        }
        return byName
    }

    /// Waits until the log's gap-safe horizon has passed `count` events (other tests' transactions
    /// on the same server hold it back for a moment), with a bound.
    func waitForHorizon(_ pool: PostgresPool, count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let readable = try await pool.query(
                "SELECT count(*) FROM events WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())"
            ).single().decode(Int.self, at: 0)
            if readable >= count { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("the horizon did not pass \(count) events within 60 s")
    }

    @Test("status lists every projection, as a table and as JSON lines")
    func statusListsProjections() async throws {
        let database = try await TestDatabase.create()
        defer { database.drop() }
        let result = try await LedgerProcess.runDetached(["projections", "status", "--database-url", database.conninfo])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == Self.names.count + 1, "\(result.stdout)")
        #expect(lines.first?.hasPrefix("NAME") == true)
        for name in Self.names {
            #expect(lines.contains { $0.hasPrefix(name + " ") && $0.hasSuffix("ok") }, "\(result.stdout)")
        }
        let json = try await statusJSON(database.conninfo)
        #expect(json.keys.sorted() == Self.names)
        #expect(json.values.allSatisfy { $0["stale"] as? Bool == false && $0["eventsApplied"] as? Int == 0 })
    }

    /// Projections stop moving while any transaction that started before an event is open:
    /// status counts what waits and names the sessions in front, oldest first, with the way out.
    @Test("status names the open transaction that holds the read horizon back")
    func statusNamesTheHorizonHolder() async throws {
        let database = try await TestDatabase.create()
        defer { database.drop() }
        let pool = PostgresPool(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        defer { pool.close() }
        let store = EventStore(pool: pool, logger: TestDatabase.quietLogger)
        let holder = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        try holder.execute("SET application_name = 'left-open'")
        let pid = try holder.query("SELECT pg_backend_pid()").single().decode(Int32.self, at: 0)
        try holder.run(script: "BEGIN")
        _ = try holder.query("SELECT pg_current_xact_id()")
        try await store.append([NewEvent(type: "SKANRegistered", data: Data("{}".utf8), occurredAt: Date())], to: "device-app1/dev1")

        // Other tests' transactions on the server may be older: ask for enough names to see ours.
        let arguments = ["projections", "status", "--horizon-after", "0", "--horizon-holders", "1000", "--database-url", database.conninfo]
        let text = try await LedgerProcess.runDetached(arguments)
        let json = try await LedgerProcess.runDetached(arguments + ["--json"])
        try holder.run(script: "ROLLBACK")

        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("Read horizon held back: 1 committed event(s), the oldest for "), "\(text.stdout)")
        #expect(text.stdout.contains("pid \(pid) (database \(database.name), "), "\(text.stdout)")
        #expect(text.stdout.contains("application left-open): idle in transaction for "), "\(text.stdout)")
        #expect(text.stdout.contains("SELECT pg_terminate_backend("), "\(text.stdout)")

        let last = try #require(json.stdout.split(separator: "\n").last)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
        let horizon = try #require(report["readHorizon"] as? [String: Any])
        #expect(horizon["eventsWaiting"] as? Int == 1)
        let holders = try #require(horizon["holders"] as? [[String: Any]])
        #expect(holders.contains { $0["pid"] as? Int == Int(pid) && $0["state"] as? String == "idle in transaction" })

        // Nothing held back: no report (the default threshold, and nothing waits once it ended).
        try await waitForHorizon(pool, count: 1)
        let quiet = try await LedgerProcess.runDetached(["projections", "status", "--database-url", database.conninfo])
        #expect(!quiet.stdout.contains("Read horizon"), "\(quiet.stdout)")
    }

    @Test("rebuild of one projection applies the log; status then shows the events applied")
    func rebuildOne() async throws {
        let database = try await TestDatabase.create()
        defer { database.drop() }
        let pool = PostgresPool(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        defer { pool.close() }
        let store = EventStore(pool: pool, logger: TestDatabase.quietLogger)
        let registered = Date(timeIntervalSince1970: 1_763_000_000)
        try await store.append([
            NewEvent(type: "SKANRegistered", data: Data("{}".utf8), occurredAt: registered),
            NewEvent(type: "SKANConversionValueUpdated", data: Data(#"{"fine_value":5,"lock_window":false}"#.utf8),
                     occurredAt: registered.addingTimeInterval(3600)),
        ], to: "device-app1/dev1")
        try await store.append([NewEvent(type: "SKANRegistered", data: Data("{}".utf8), occurredAt: registered)],
                               to: "device-app1/dev2")
        try await waitForHorizon(pool, count: 3)

        let before = try await statusJSON(database.conninfo)
        #expect(before["skan_devices"]?["eventsBehind"] as? Int == 3)

        let rebuilt = try await LedgerProcess.runDetached(
            ["projections", "rebuild", "skan_devices", "--database-url", database.conninfo])
        #expect(rebuilt.status == 0, "\(rebuilt.stderr)")
        #expect(rebuilt.stdout.hasPrefix("rebuilt skan_devices (version ") && rebuilt.stdout.contains("): 3 events in "),
                "\(rebuilt.stdout)")
        #expect(rebuilt.stderr.contains("rebuild skan_devices ["), "the progress bar is on stderr")

        let after = try await statusJSON(database.conninfo)
        #expect(after["skan_devices"]?["eventsApplied"] as? Int == 3)
        #expect(after["skan_devices"]?["eventsBehind"] as? Int == 0)
        #expect(after["skan_devices"]?["rebuiltAt"] is String)
        #expect(after["branch_identity"]?["eventsApplied"] as? Int == 0, "only the projection named was rebuilt")
        let value = try await pool.query(
            "SELECT conversion_value FROM skan_devices WHERE device_stream_id = 'device-app1/dev1'"
        ).single().decode(Int.self, at: 0)
        #expect(value == 5)

        let text = try await LedgerProcess.runDetached(["projections", "status", "--database-url", database.conninfo])
        let line = text.stdout.split(separator: "\n").first { $0.hasPrefix("skan_devices ") }
        #expect(line?.split(separator: " ", omittingEmptySubsequences: true).dropFirst(4).first == "3", "\(text.stdout)")

        let all = try await LedgerProcess.runDetached(["projections", "rebuild", "--all", "--database-url", database.conninfo])
        #expect(all.status == 0, "\(all.stderr)")
        #expect(all.stdout.split(separator: "\n").map { $0.split(separator: " ").dropFirst().first } == Self.names.map { Substring($0) })
    }

    @Test("an unknown projection name is one line naming the known ones, exit 6")
    func unknownProjection() async throws {
        let result = try await LedgerProcess.runDetached(
            ["projections", "rebuild", "skan_device", "--database-url", "postgresql://nobody@127.0.0.1:1/none"])
        #expect(result.status == 6)
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("ledger: error: no projection is called skan_device; known: "))
        #expect(Self.names.allSatisfy { result.stderr.contains($0) })
    }

    @Test("a rebuild another process is running is refused with exit 7")
    func rebuildAlreadyRunning() async throws {
        let database = try await TestDatabase.create()
        defer { database.drop() }
        let holder = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        try holder.execute("SELECT pg_advisory_lock(hashtextextended('ledger.rebuild.skan_devices', 0))")
        let result = try await LedgerProcess.runDetached(
            ["projections", "rebuild", "skan_devices", "--database-url", database.conninfo])
        #expect(result.status == 7)
        #expect(result.stderr.contains("skan_devices is already being rebuilt"), "\(result.stderr)")
    }

    @Test("without a name or --all, or with both, the usage is refused (exit 64)")
    func usage() async throws {
        let neither = try await LedgerProcess.runDetached(["projections", "rebuild"])
        #expect(neither.status == 64)
        #expect(neither.stderr.contains("or --all"))
        let both = try await LedgerProcess.runDetached(["projections", "rebuild", "skan_devices", "--all"])
        #expect(both.status == 64)
    }

    @Test("on a database not migrated, status says to run ledger migrate (exit 1)")
    func notMigrated() async throws {
        let database = try await TestDatabase.create(migrated: false)
        defer { database.drop() }
        let result = try await LedgerProcess.runDetached(["projections", "status", "--database-url", database.conninfo])
        #expect(result.status == 1)
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(result.stderr.contains("ledger migrate"), "\(result.stderr)")
    }

    @Test("--help shows examples")
    func help() async throws {
        let group = try await LedgerProcess.runDetached(["projections", "--help"])
        #expect(group.status == 0)
        #expect(group.stdout.contains("ledger projections rebuild --all"))
        let status = try await LedgerProcess.runDetached(["projections", "status", "--help"])
        #expect(status.status == 0)
        #expect(status.stdout.contains("ledger projections status --json"))
        let rebuild = try await LedgerProcess.runDetached(["projections", "rebuild", "--help"])
        #expect(rebuild.status == 0)
        #expect(rebuild.stdout.contains("ledger projections rebuild skan_devices"))
        let top = try await LedgerProcess.runDetached(["--help"])
        #expect(top.stdout.contains("projections"))
    }
}
