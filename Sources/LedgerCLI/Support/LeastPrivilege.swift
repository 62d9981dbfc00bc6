import ArgumentParser
import Foundation
import LedgerPostgres
import Logging

/// `--require-least-privilege`, shared by `serve` and `worker`: whether the session may do more
/// than the application's role allows.
struct LeastPrivilegeOptions: ParsableArguments {
    @Flag(help: ArgumentHelp(
        "Refuse to start (exit 64) when connected as a superuser or the owner of the ledger's tables.",
        discussion: "Without it such a connection is only warned about. Either role can disable the immutability triggers; the service should log in as a role that is only a member of ledger_app (docs/operations.md)."))
    var requireLeastPrivilege = false

    /// Checks the session's role; warns on stderr, or exits 64 with `--require-least-privilege`.
    func check(_ conninfo: String, command: String) throws {
        let connection: PostgresConnection
        do {
            connection = try PostgresConnection(conninfo: conninfo)
        } catch {
            throw CLIFailure(exitCode: .databaseUnreachable, message: "\(error)")
        }
        let privilege = try SessionPrivilege.inspect(on: connection)
        guard let excess = privilege.excess else { return }
        let message = "connected as \(privilege.role), which \(excess): it can disable the ledger's immutability triggers. "
            + "Log in as a role that is only a member of ledger_app (docs/operations.md, \"Roles\")"
        if requireLeastPrivilege {
            throw CLIFailure(exitCode: .validationFailure, message: message + "; refused by --require-least-privilege")
        }
        writeStatusLine(message, command: command, level: .warning, textTag: "WARNING")
    }
}

/// What the session's role may do beyond appending and reading.
struct SessionPrivilege {
    /// The session's role.
    var role: String
    /// Whether it is a superuser, or may create roles (and so make itself a member of the owner's).
    var isSuperuser: Bool
    /// Whether it owns `events` or `seals`, or the database (whose owner owns the schema and may
    /// drop them), or is a member of such a role, even without inheriting its rights.
    var ownsEvents: Bool
    /// Whether it is a member of `ledger_app`.
    var isApplicationRole: Bool

    /// Why this role is more than the service should hold, or nil.
    var excess: String? {
        if isSuperuser { return "is a superuser or may create roles" }
        if ownsEvents { return "owns (or may act as the owner of) the ledger's tables or database" }
        return nil
    }

    static func inspect(on connection: PostgresConnection) throws -> SessionPrivilege {
        let row = try connection.query("""
            SELECT current_user::text, r.rolsuper OR r.rolcreaterole,
                   coalesce((SELECT bool_or(pg_has_role(current_user, c.relowner, 'MEMBER')) FROM pg_class c
                             WHERE c.oid IN (to_regclass('public.events'), to_regclass('public.seals'))), false)
                   OR coalesce((SELECT pg_has_role(current_user, d.datdba, 'MEMBER') FROM pg_database d
                                WHERE d.datname = current_database()), false),
                   CASE WHEN EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'ledger_app')
                        THEN pg_has_role(current_user, 'ledger_app', 'MEMBER') ELSE false END
            FROM pg_roles r WHERE r.rolname = current_user
            """).single()
        return SessionPrivilege(role: try row.decode(String.self, at: 0), isSuperuser: try row.decode(Bool.self, at: 1),
                                ownsEvents: try row.decode(Bool.self, at: 2), isApplicationRole: try row.decode(Bool.self, at: 3))
    }
}
