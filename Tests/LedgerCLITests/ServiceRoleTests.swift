import Foundation
import LedgerTestKit
import NIOHTTP1
import LedgerPostgres
import LedgerPrivateCluster
import LedgerStore
import Testing

/// The private cluster's roles (docs/operations.md, "Roles"): the long-running processes log in
/// as `ledger_service`, a member of `ledger_app` and `ledger_sealer` only, which can neither
/// disable the ledger's triggers nor write seals out of turn.
@Suite("The private cluster's service role", .database, .serialized)
struct ServiceRoleTests {
    @Test("ledger worker in the private cluster logs in as ledger_service and passes --require-least-privilege",
          .timeLimit(.minutes(5)))
    func workerLogsInAsTheServiceRole() async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("ledger-roles-\(UUID().uuidString.prefix(8))").path
        let environment = ["LEDGER_CLUSTER_DIR": directory]
        defer {
            _ = try? LedgerProcess.run(["cluster", "stop"], environment: environment)
            try? FileManager.default.removeItem(atPath: directory)
        }
        let migrated = try await LedgerProcess.runDetached(["migrate"], environment: environment)
        try #require(migrated.status == 0, "\(migrated.stderr)")

        // Before any service process ran, the owner is the only login: the worker makes the role.
        let worker = try await LedgerProcess.runDetached(["worker", "--drain", "--require-least-privilege"], environment: environment)
        #expect(worker.status == 0, "\(worker.stderr)")
        #expect(!worker.stderr.contains("WARNING"), "\(worker.stderr)")

        let cluster = try await TestDatabase.offThePool {
            try PrivateCluster.startOrReuse(directory: directory, logger: TestDatabase.quietLogger)
        }
        let admin = try PostgresConnection(conninfo: cluster.conninfo(database: "ledger"), logger: TestDatabase.quietLogger)
        let role = try admin.query("""
            SELECT rolsuper OR rolcreaterole, rolcanlogin, pg_has_role('ledger_service', 'ledger_app', 'MEMBER'),
                   pg_has_role('ledger_service', 'ledger_sealer', 'MEMBER'),
                   pg_has_role('ledger_service', (SELECT relowner FROM pg_class WHERE oid = 'events'::regclass), 'MEMBER')
            FROM pg_roles WHERE rolname = 'ledger_service'
            """).single()
        #expect(try role.decode(Bool.self, at: 0) == false, "neither a superuser nor a maker of roles")
        #expect(try role.decode(Bool.self, at: 1) == true)
        #expect(try role.decode(Bool.self, at: 2) == true && role.decode(Bool.self, at: 3) == true)
        #expect(try role.decode(Bool.self, at: 4) == false, "not the owner of events")

        // What the role may not do, tried as the role.
        var service = cluster.conninfo(database: "ledger")
        service = service.replacingOccurrences(of: "user=\(cluster.superuser)", with: "user=ledger_service")
        let session = try PostgresConnection(conninfo: service, logger: TestDatabase.quietLogger)
        let disable = #expect(throws: PostgresError.self) {
            try session.run(script: "ALTER TABLE events DISABLE TRIGGER events_checked")
        }
        #expect(disable?.sqlState == SQLState.insufficientPrivilege)
        let outOfTurn = #expect(throws: PostgresError.self) {
            try session.execute("""
                INSERT INTO seals (seal_number, up_to_transaction, up_to_position, event_count, previous_digest, digest)
                VALUES (7, '1'::xid8, 1, 0, NULL, sha256(''::bytea))
                """)
        }
        #expect(outOfTurn?.sqlState == "LE007", "\(outOfTurn?.message ?? "")")
        try session.run(script: "SET ROLE ledger_app")
        let appSeal = #expect(throws: PostgresError.self) {
            try session.execute("""
                INSERT INTO seals (seal_number, up_to_transaction, up_to_position, event_count, previous_digest, digest)
                VALUES (1, '1'::xid8, 1, 0, NULL, sha256(''::bytea))
                """)
        }
        #expect(appSeal?.sqlState == SQLState.insufficientPrivilege, "ledger_app writes no seals")
    }

    @Test("ledger serve logged in as a member of ledger_app only: says once that it does not seal, and keeps serving",
          .timeLimit(.minutes(3)))
    func serveWithoutTheSealersRole() async throws {
        let database = try await TestDatabase.create()
        defer { database.drop() }
        let admin = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        let role = "ledger_app_only_\(ProcessInfo.processInfo.processIdentifier)"
        try admin.run(script: "DROP ROLE IF EXISTS \(role); CREATE ROLE \(role) LOGIN IN ROLE ledger_app")
        defer { _ = try? admin.run(script: "DROP OWNED BY \(role); DROP ROLE IF EXISTS \(role)") }
        let conninfo = database.conninfo + " user=\(role)"  // in a conninfo string the last keyword wins
        // As in production: the owner migrates, which also makes the projections' tables.
        let migrated = try await LedgerProcess.runDetached(["migrate", "--database-url", database.conninfo])
        try #require(migrated.status == 0, "\(migrated.stderr)")
        // Something to seal (with nothing readable, a sealer has nothing to write).
        let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 1, logger: TestDatabase.quietLogger)
        defer { pool.close() }
        try await EventStore(pool: pool, logger: TestDatabase.quietLogger)
            .append([try VerifyCommandTests.session(1)], to: "device-com.example.game/unsealed")

        let logPath = FileManager.default.temporaryDirectory.appendingPathComponent("serve-\(UUID()).log").path
        defer { try? FileManager.default.removeItem(atPath: logPath) }
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: LedgerProcess.binary)
        process.arguments = ["serve", "--port", "0", "--seal-every", "1", "--require-least-privilege", "--database-url", conninfo]
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "LEDGER_DATABASE_URL")
        environment["LEDGER_API_KEYS"] = #"{"com.example.game": "\#(String(repeating: "0", count: 64))"}"#
        environment["LEDGER_LOG_FORMAT"] = "text"
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        func log() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
        #expect(try await waitUntil(timeout: .seconds(60)) { log().contains("not sealing") || !process.isRunning }, "\(log())")
        #expect(process.isRunning, "serve stopped: \(log())")
        #expect(log().components(separatedBy: "not sealing").count == 2, "said once: \(log())")
        // Still serving after the sealer gave up (ready: database reachable), and nothing sealed.
        #expect(try await waitUntil(timeout: .seconds(30)) { log().contains("listening on http://127.0.0.1:") }, "\(log())")
        let text = log()
        let port = try #require(text.range(of: "listening on http://127.0.0.1:").map { String(text[$0.upperBound...].prefix { $0.isNumber }) })
        let ready = try await ServeRestartTests.status(.GET, "http://127.0.0.1:\(port)/ready")
        #expect(ready == 200, "\(log())")
        #expect(process.isRunning, "serve stopped: \(log())")
        #expect(try admin.query("SELECT count(*) FROM seals").single().decode(Int64.self, at: 0) == 0)
        process.interrupt()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(log())")
    }
}
