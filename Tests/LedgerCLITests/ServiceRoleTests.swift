import Foundation
import LedgerPostgres
import LedgerPrivateCluster
import LedgerTestSupport
import Testing

/// The private cluster's roles (docs/operations.md, "Roles"): the long-running processes log in
/// as `ledger_service`, a member of `ledger_app` and `ledger_sealer` only, which can neither
/// disable the ledger's triggers nor write seals out of turn.
@Suite("The private cluster's service role", .serialized)
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
}
