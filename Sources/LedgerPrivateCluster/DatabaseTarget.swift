import Foundation
import LedgerPostgres
import Logging

/// The database the ledger uses: the one `LEDGER_DATABASE_URL` names, or the private cluster's.
///
/// Used by the CLI, the tests, the benchmarks and the demo, so that "no configuration" means the
/// same thing everywhere.
public struct DatabaseTarget: Sendable {
    /// A libpq conninfo string or URI for the ledger's database.
    public let conninfo: String
    /// The private cluster, when one was started (nil with `LEDGER_DATABASE_URL`).
    public let cluster: PrivateCluster?

    /// Resolves the target from the environment, starting the private cluster if none is configured,
    /// and makes sure the database exists and answers.
    ///
    /// - Parameter database: the database to use in the private cluster (created if missing).
    /// - Throws: ``PrivateClusterError`` with a one-line reason.
    public static func resolve(
        database: String = "ledger",
        environment: [String: String] = ProcessInfo.processInfo.environment,
        logger: Logger = Logger(label: "ledger.database")
    ) throws(PrivateClusterError) -> DatabaseTarget {
        if let url = environment["LEDGER_DATABASE_URL"], !url.isEmpty {
            do {
                _ = try PostgresConnection(conninfo: url, logger: logger)
            } catch {
                throw .unreachable(source: "LEDGER_DATABASE_URL", reason: error.message)
            }
            return DatabaseTarget(conninfo: url, cluster: nil)
        }
        let cluster = try PrivateCluster.startOrReuse(directory: PrivateCluster.defaultDirectory(environment: environment),
                                                      logger: logger)
        do {
            try cluster.createDatabaseIfMissing(database, logger: logger)
        } catch {
            throw .unreachable(source: "the private PostgreSQL at \(cluster.socketDirectory)", reason: error.message)
        }
        return DatabaseTarget(conninfo: cluster.conninfo(database: database), cluster: cluster)
    }
}

extension DatabaseTarget {
    /// The login role the private cluster makes for the long-running processes.
    public static let serviceRole = "ledger_service"

    /// The conninfo `ledger serve` and `ledger worker` connect with. With `LEDGER_DATABASE_URL`
    /// it is that one: its role is the operator's choice (docs/operations.md, "Roles"). In the
    /// private cluster it is ``serviceRole``, a login role that is a member of `ledger_app` and
    /// `ledger_sealer` and nothing else, so that the service cannot disable the ledger's
    /// triggers; the role is made here when missing, once the migrations have made those two.
    /// Before them (an unmigrated database) it is the owner's, whose statements then fail as they
    /// would.
    public func serviceConninfo(logger: Logger) throws(PostgresError) -> String {
        guard let cluster else { return conninfo }
        let admin = try PostgresConnection(conninfo: conninfo, logger: logger)
        let roles = try admin.query(
            "SELECT count(*) FROM pg_roles WHERE rolname IN ('ledger_app', 'ledger_sealer')"
        ).single().decode(Int64.self, at: 0)
        guard roles == 2 else { return conninfo }
        let role = PostgresQuery.quoteIdentifier(Self.serviceRole)
        do {
            try admin.run(script: """
                DO $$ BEGIN
                    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '\(Self.serviceRole)') THEN
                        CREATE ROLE \(role) LOGIN;
                    END IF;
                END $$;
                GRANT ledger_app, ledger_sealer TO \(role);
                """)
        } catch where error.sqlState == "42710" || error.sqlState == SQLState.uniqueViolation {
            // Another process made it at the same moment.
        }
        return "host=\(cluster.socketDirectory) port=\(cluster.port) user=\(Self.serviceRole) dbname=\(database)"
    }

    /// The database this target names (`dbname` in the private cluster's conninfo).
    var database: String {
        conninfo.split(separator: " ").first { $0.hasPrefix("dbname=") }.map { String($0.dropFirst("dbname=".count)) } ?? "ledger"
    }
}

extension PrivateCluster {
    /// Creates a database unless it exists; safe when several processes race to create it.
    public func createDatabaseIfMissing(_ name: String, template: String? = nil, logger: Logger) throws(PostgresError) {
        let admin = try PostgresConnection(conninfo: conninfo(database: "postgres"), logger: logger)
        let exists = try admin.query("SELECT 1 FROM pg_database WHERE datname = \(name)").count == 1
        guard !exists else { return }
        do {
            let templateClause = template.map { " TEMPLATE \(PostgresQuery.quoteIdentifier($0))" } ?? ""
            try admin.run(script: "CREATE DATABASE \(PostgresQuery.quoteIdentifier(name))\(templateClause)")
        } catch where error.sqlState == "42P04" || error.sqlState == SQLState.uniqueViolation {
            // Another process created it first.
        }
    }
}
