import ArgumentParser
import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerPrivateCluster
import LedgerStore
import Logging

/// Options every database command shares.
struct DatabaseOptions: ParsableArguments {
    @Option(
        name: .customLong("database-url"),
        help: ArgumentHelp(
            "A libpq conninfo string or postgresql:// URI. Defaults to $LEDGER_DATABASE_URL, else the private cluster.",
            valueName: "url"))
    var databaseURL: String?

    /// Resolves the database, exiting with code 3 and one line on stderr if it cannot be reached.
    func resolve(logger: Logger) throws -> DatabaseTarget {
        var environment = ProcessInfo.processInfo.environment
        if let databaseURL { environment["LEDGER_DATABASE_URL"] = databaseURL }
        do {
            return try DatabaseTarget.resolve(environment: environment, logger: logger)
        } catch {
            throw CLIFailure(exitCode: .databaseUnreachable, message: error.description)
        }
    }
}

extension DatabaseOptions {
    /// Resolves the database and opens a pool and a catalog-checked store over it (the caller
    /// closes the pool). Exits with code 3 when the database cannot be reached.
    func openStore(logger: Logger, connections: Int = 2) throws -> (pool: PostgresPool, store: EventStore) {
        let target = try resolve(logger: logger)
        let pool = PostgresPool(conninfo: target.conninfo, maxConnections: connections, logger: logger)
        return (pool, EventStore(pool: pool, catalog: .standard, logger: logger))
    }
}

extension DatabaseOptions {
    /// For read-only work (replay, explain, export): a store on `LEDGER_READ_DATABASE_URL` (a
    /// streaming standby, docs/operations.md "Read replicas") when it is set and no
    /// `--database-url` was given, else ``openStore(logger:connections:)``'s. On the read database
    /// an "as of position P" read first waits until it has replayed P, for
    /// `LEDGER_READ_WAIT_SECONDS` (default 5), and otherwise fails with exit code 14.
    func openReadStore(logger: Logger, asOf: AsOf?, connections: Int = 2) async throws -> (pool: PostgresPool, store: EventStore) {
        guard let pool = try openReadPool(logger: logger, connections: connections) else {
            return try openStore(logger: logger, connections: connections)
        }
        let store = EventStore(pool: pool, catalog: .standard, logger: logger)
        if case .position(let position) = asOf {
            do {
                try await store.waitUntilReadable(through: position, timeout: Self.readWait())
            } catch let error as EventStoreError {
                pool.close()
                throw CLIFailure(exitCode: .readDatabaseBehind, message: error.description)
            }
        }
        return (pool, store)
    }
}

extension DatabaseOptions {
    /// A pool on `LEDGER_READ_DATABASE_URL` when it is set and no `--database-url` was given
    /// (`alongsideDatabaseURL`: even then, for `serve`, whose `--database-url` is its primary);
    /// nil otherwise. Exits with code 3 when that database cannot be reached.
    func openReadPool(logger: Logger, connections: Int, alongsideDatabaseURL: Bool = false) throws -> PostgresPool? {
        guard databaseURL == nil || alongsideDatabaseURL, let url = ProcessInfo.processInfo.environment["LEDGER_READ_DATABASE_URL"], !url.isEmpty else {
            return nil
        }
        do {
            _ = try PostgresConnection(conninfo: url, logger: logger)
        } catch {
            throw CLIFailure(exitCode: .databaseUnreachable, message: "cannot connect to LEDGER_READ_DATABASE_URL: \(error.message)")
        }
        return PostgresPool(conninfo: url, maxConnections: connections, logger: logger)
    }

    /// How long a read as of a position waits for the read database: `LEDGER_READ_WAIT_SECONDS`, default 5.
    static func readWait() -> Duration {
        let seconds = ProcessInfo.processInfo.environment["LEDGER_READ_WAIT_SECONDS"].flatMap(Double.init) ?? 5
        return .milliseconds(Int64(max(0, seconds) * 1000))
    }
}

/// A failure the CLI reports as one line on stderr, with a meaningful exit code.
struct CLIFailure: Error, CustomStringConvertible {
    var exitCode: ExitCode
    var message: String
    var description: String { message }
}

extension ExitCode {
    /// The database (configured or private) could not be reached or started.
    static let databaseUnreachable = ExitCode(3)
    /// A migration was refused: a changed applied file, or a file that failed to apply.
    static let schemaRefused = ExitCode(4)
    /// The read database (`LEDGER_READ_DATABASE_URL`) had not replayed the asked position in time.
    static let readDatabaseBehind = ExitCode(14)
}

/// Runs a command body, turning known failures into one line on stderr and an exit code.
func reportingFailures(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let failure as CLIFailure {
        writeStatusLine(failure.message, level: .error, textTag: "error")
        throw failure.exitCode
    } catch let error as PostgresError {
        writeStatusLine("\(error)", level: .error, textTag: "error")
        throw ExitCode.failure
    }
}

/// The CLI's logger: warnings and above on stderr unless LEDGER_LOG_LEVEL says otherwise, in the
/// format of LEDGER_LOG_FORMAT (``ProcessLogging``).
func makeLogger(_ label: String) -> Logger {
    var logger = Logger(label: label)
    logger.logLevel = ProcessLogging.level
    return logger
}
