import ArgumentParser
import AttributionLedger
import Foundation
import LedgerHTTPAPI
import LedgerPostgres
import LedgerPrivateCluster
import LedgerProjections
import LedgerStore

/// `ledger serve`: the HTTP API (and, unless told otherwise, the projection runner) in one process.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the HTTP API: append device facts, read device state, SKAN, attribution and history.",
        discussion: helpText("""
            API keys come from LEDGER_API_KEYS (JSON: app id → SHA-256 hex digest of the key, or a
            list of digests) or the file LEDGER_API_KEYS_FILE / --api-keys-file names. The server
            stores no key, only digests: make one with `printf %s "$KEY" | ledger serve --hash-key`.
            The projection runner follows the log in the same process unless --no-projections.
            SIGTERM or SIGINT stops accepting connections and lets requests in flight finish.
            The API is described in docs/openapi.yaml and docs/http-api.md.

            Exit codes: 0 stopped cleanly, 64 bad options or configuration, 3 the database is unreachable
            at start (later outages are waited out: docs/operations.md).

            Examples:
              LEDGER_API_KEYS='{"com.example.game":"<sha256 hex>"}' ledger serve
              ledger serve --host 0.0.0.0 --port 8080 --api-keys-file /etc/ledger/api-keys.json
              printf %s "$KEY" | ledger serve --hash-key
            """)
    )

    @OptionGroup var database: DatabaseOptions

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on (0: any free port, printed at start).")
    var port = 8080

    @Option(help: ArgumentHelp("A JSON file of API key digests by app (instead of LEDGER_API_KEYS).", valueName: "path"))
    var apiKeysFile: String?

    @Option(help: "The largest request body accepted, in bytes.")
    var maxBodyBytes = 4 * 1_048_576

    @Option(help: "The most events one append request may carry.")
    var maxEventsPerBatch = 1000

    @Option(help: "Database connections the server may open.")
    var connections = 8

    @Flag(inversion: .prefixedNo, help: "Run the projection runner in this process.")
    var projections = true

    @Flag(help: "Read an API key from stdin, print its SHA-256 digest for the key configuration, and exit.")
    var hashKey = false

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be 0–65535") }
        guard maxBodyBytes >= 1024 else { throw ValidationError("--max-body-bytes must be at least 1024") }
        guard maxEventsPerBatch >= 1 else { throw ValidationError("--max-events-per-batch must be 1 or more") }
        guard connections >= 2 else { throw ValidationError("--connections must be 2 or more") }
    }

    func run() async throws {
        if hashKey {
            let key = (readLine(strippingNewline: true) ?? "")
            guard !key.isEmpty else { throw CLIFailure(exitCode: .validationFailure, message: "no key on stdin") }
            print(APIKeys.digest(of: key))
            return
        }
        try await reportingFailures {
            let logger = makeLogger("ledger.serve")
            var environment = ProcessInfo.processInfo.environment
            if let apiKeysFile {
                environment["LEDGER_API_KEYS"] = nil
                environment["LEDGER_API_KEYS_FILE"] = apiKeysFile
            }
            let keys: APIKeys
            do {
                keys = try APIKeys.fromEnvironment(environment)
            } catch {
                throw CLIFailure(exitCode: .validationFailure, message: "configuration: \(error)")
            }
            let target = try database.resolve(logger: logger)
            let pool = PostgresPool(conninfo: target.conninfo, maxConnections: connections, logger: logger)
            defer { pool.close() }
            let registry = LedgerMetricsBackend.prometheus
            let ledger = AttributionLedger(pool: pool, defaultActor: "http-api", logger: logger)
            let server = LedgerHTTPServer(
                ledger: ledger, keys: keys,
                configuration: LedgerHTTPConfiguration(host: host, port: port, maxBodyBytes: maxBodyBytes,
                                                       maxEventsPerBatch: maxEventsPerBatch),
                metrics: registry, logger: logger)
            let runner = projections
                ? ProjectionRunner(store: ledger.store, projections: AllProjections.list, logger: logger) : nil
            let host = host
            let apps = keys.apps.count
            try await withThrowingTaskGroup(of: Void.self) { group in
                if let runner {
                    group.addTask {
                        do { try await runner.run() } catch is CancellationError {}
                    }
                }
                group.addTask {
                    try await server.run { port in
                        FileHandle.standardError.write(Data(
                            "ledger serve: listening on http://\(host):\(port) (\(apps) app\(apps == 1 ? "" : "s") with keys)\n".utf8))
                    }
                }
                // The first task to end (the server after SIGTERM, or a failure) stops the other.
                defer { group.cancelAll() }
                try await group.next()
            }
            FileHandle.standardError.write(Data("ledger serve: stopped\n".utf8))
        }
    }
}
