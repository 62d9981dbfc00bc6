import Foundation
import LedgerPostgres
import LedgerTestKit
import Testing

@Suite("serve and worker warn about, or refuse, a role that can disable the immutability triggers", .database)
struct LeastPrivilegeTests {
    @Test("as a superuser: a warning; with --require-least-privilege: exit 64. As a member of ledger_app only: no warning, it runs")
    func roles() async throws {
        let database = try await TestDatabase.create()
        defer { database.drop() }
        let superuser = try await LedgerProcess.runDetached(["worker", "--drain", "--database-url", database.conninfo])
        #expect(superuser.status == 0, "\(superuser.stderr)")
        #expect(superuser.stderr.contains("WARNING: connected as"), "\(superuser.stderr)")
        #expect(superuser.stderr.contains("is a superuser"))

        let refused = try await LedgerProcess.runDetached(
            ["worker", "--drain", "--require-least-privilege", "--database-url", database.conninfo])
        #expect(refused.status == 64, "\(refused.stderr)")
        #expect(refused.stderr.contains("refused by --require-least-privilege"))
        let serve = try await LedgerProcess.runDetached(
            ["serve", "--port", "0", "--require-least-privilege", "--database-url", database.conninfo],
            environment: ["LEDGER_API_KEYS": #"{"app": "\#(String(repeating: "a", count: 64))"}"#])
        #expect(serve.status == 64, "\(serve.stderr)")

        // The production setup of docs/operations.md: a login role that is only a member of ledger_app.
        let role = "ledger_service_\(UUID().uuidString.prefix(8).lowercased())"
        let admin = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        try admin.run(script: "CREATE ROLE \(role) LOGIN IN ROLE ledger_app")
        defer { try? admin.run(script: "DROP ROLE IF EXISTS \(role)") }
        let service = try await LedgerProcess.runDetached(
            ["worker", "--drain", "--require-least-privilege", "--database-url", database.conninfo + " user=\(role)"])
        #expect(service.status == 0, "\(service.stderr) \(service.stdout)")
        #expect(!service.stderr.contains("WARNING"), "\(service.stderr)")
    }
}
