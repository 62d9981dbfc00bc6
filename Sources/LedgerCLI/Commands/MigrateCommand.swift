import ArgumentParser
import Foundation
import LedgerMigrations
import LedgerPostgres
import LedgerPrivateCluster
import LedgerProjections
import LedgerStore

/// `ledger migrate`: applies schema/ migrations, or lists them with `--status`.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply the numbered SQL files of schema/ that the database has not applied yet.",
        discussion: helpText("""
            Each file is applied once, in its own transaction, and recorded with its SHA-256; a file
            that fails leaves nothing of itself applied, and an applied file that changed is refused.
            Then every projection's tables are made if missing (granted to ledger_app), so the
            service's role need create nothing.

            Examples:
              ledger migrate
              ledger migrate --status
              ledger migrate --status --json
              LEDGER_DATABASE_URL=postgresql://ledger@db.internal/ledger ledger migrate
            """)
    )

    @OptionGroup var database: DatabaseOptions

    @Flag(help: "List applied and pending migrations instead of applying them.")
    var status = false

    @Flag(help: "Print JSON instead of text.")
    var json = false

    @Option(help: ArgumentHelp("The folder of numbered SQL files.", valueName: "path"))
    var schema: String?

    func run() async throws {
        try await reportingFailures {
            let logger = makeLogger("ledger.migrate")
            let migrator: Migrator
            do {
                migrator = try Migrator(directory: schema ?? Migration.defaultDirectory())
            } catch {
                throw CLIFailure(exitCode: .schemaRefused, message: "\(error)")
            }
            let target = try database.resolve(logger: logger)
            let connection = try PostgresConnection(conninfo: target.conninfo, logger: logger)
            do {
                if status {
                    print(render(try migrator.status(on: connection)))
                } else {
                    let applied = try migrator.apply(on: connection)
                    // The projections' tables too, made by the owner and granted to ledger_app, so
                    // that a service logged in as a member of ledger_app only needs create nothing.
                    // (Only on the ledger's own schema: a folder of other migrations has no checkpoints table.)
                    let ledgerSchema = try connection.query("SELECT to_regclass('public.projection_checkpoints') IS NOT NULL")
                        .single().decode(Bool.self, at: 0)
                    if ledgerSchema {
                        let pool = PostgresPool(conninfo: target.conninfo, maxConnections: 1, logger: logger)
                        defer { pool.close() }
                        try await ProjectionRunner(store: EventStore(pool: pool, logger: logger), projections: AllProjections.list,
                                                   logger: logger).prepare()
                    }
                    print(json ? renderJSON(applied: applied) : renderText(applied: applied, total: migrator.migrations.count))
                }
            } catch let error as MigrationError {
                throw CLIFailure(exitCode: .schemaRefused, message: "\(error)")
            }
        }
    }

    private func render(_ statuses: [Migrator.Status]) -> String {
        if json {
            let rows = statuses.map { status -> [String: String] in
                var row = ["version": "\(status.migration.version)", "name": status.migration.name,
                           "state": status.isApplied ? "applied" : "pending", "sha256": status.migration.checksum]
                if let at = status.appliedAt { row["applied_at"] = at.ISO8601Format() }
                return row
            }
            return jsonText(rows)
        }
        if statuses.isEmpty { return "no migrations in schema/" }
        return statuses.map { status in
            let state = status.appliedAt.map { "applied \($0.ISO8601Format())" } ?? "pending"
            return "\(status.migration.fileName)  \(state)"
        }.joined(separator: "\n")
    }

    private func renderText(applied: [Migration], total: Int) -> String {
        if applied.isEmpty { return "schema up to date (\(total) migration\(total == 1 ? "" : "s") applied)" }
        return applied.map { "applied \($0.fileName)" }.joined(separator: "\n")
            + "\nschema up to date (\(total) migration\(total == 1 ? "" : "s") applied)"
    }

    private func renderJSON(applied: [Migration]) -> String {
        jsonText(["applied": applied.map(\.fileName)])
    }
}

/// Stable JSON text (sorted keys) for `--json` output.
func jsonText(_ value: some Encodable) -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return (try? String(decoding: encoder.encode(value), as: UTF8.self)) ?? "null"
}
