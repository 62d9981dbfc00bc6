import Foundation
import LedgerPostgres
import LedgerTestKit
import Testing

@Suite("ledger migrate", .database)
struct MigrateCommandTests {
    func folder(_ files: [String: String]) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-cli-schema-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        for (name, sql) in files { try sql.write(toFile: path + "/" + name, atomically: true, encoding: .utf8) }
        return path
    }

    @Test("applies, reports up to date, lists status as JSON, and refuses a failing file with exit 4")
    func applyStatusAndFailure() async throws {
        let database = try await TestDatabase.create(migrated: false)
        defer { database.drop() }
        let schema = try folder(["0001_one.sql": "CREATE TABLE one (id int);"])
        let url = ["--database-url", database.conninfo, "--schema", schema]

        let first = try await LedgerProcess.runDetached(["migrate"] + url)
        #expect(first.status == 0)
        #expect(first.stdout.contains("applied 0001_one.sql"))
        let second = try await LedgerProcess.runDetached(["migrate"] + url)
        #expect(second.stdout.contains("schema up to date (1 migration applied)"))

        try "CREATE TABLE two (id int);\nSELEC broken;".write(toFile: schema + "/0002_two.sql", atomically: true, encoding: .utf8)
        let failed = try await LedgerProcess.runDetached(["migrate"] + url)
        #expect(failed.status == 4)
        let lines = failed.stderr.split(separator: "\n")
        #expect(lines.count == 1)
        #expect(lines.first?.contains("0002_two.sql failed to apply (SQLSTATE 42601)") == true)
        let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        #expect(try connection.query("SELECT to_regclass('two') IS NULL").single().decode(Bool.self, at: 0))

        let status = try await LedgerProcess.runDetached(["migrate", "--status", "--json"] + url)
        #expect(status.status == 0)
        let rows = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [[String: String]]
        #expect(rows?.map { $0["state"] } == ["applied", "pending"])
        #expect(rows?.map { $0["name"] } == ["one", "two"])
    }

    @Test("an unreachable LEDGER_DATABASE_URL is one line on stderr and exit 3")
    func unreachableDatabase() async throws {
        let result = try await LedgerProcess.runDetached(
            ["migrate"], environment: ["LEDGER_DATABASE_URL": "postgresql://ledger@127.0.0.1:1/ledger?connect_timeout=2"])
        #expect(result.status == 3)
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(result.stderr.hasPrefix("ledger: error: cannot connect to LEDGER_DATABASE_URL"))
        #expect(result.stderr.contains("Connection refused"))
    }

    @Test("a missing PostgreSQL installation is one line on stderr and exit 3")
    func missingInstallation() async throws {
        let cluster = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-nopg-\(UUID().uuidString)").path
        let result = try await LedgerProcess.runDetached(
            ["migrate"], environment: ["LEDGER_PG_BINDIR": "/nonexistent/bin", "LEDGER_CLUSTER_DIR": cluster])
        #expect(result.status == 3)
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(result.stderr.contains("PostgreSQL server programs (initdb, pg_ctl) not found in /nonexistent/bin"))
        #expect(result.stderr.contains("ops/setup"), "the line says how to fix it")
        #expect(!FileManager.default.fileExists(atPath: cluster + "/data"), "nothing was initialised")
    }

    @Test("--help shows an example")
    func helpHasExamples() async throws {
        let result = try await LedgerProcess.runDetached(["migrate", "--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("ledger migrate --status"))
    }
}
