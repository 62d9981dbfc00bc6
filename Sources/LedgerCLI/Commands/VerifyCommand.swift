import ArgumentParser
import Foundation
import LedgerPostgres
import LedgerPrivateCluster
import LedgerStore

/// `ledger verify`: proves the history untouched, or names the first broken link.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Recompute every stream's hash chain and every seal; name the first broken event.",
        discussion: helpText("""
            Each event's hash covers its stored bytes and the previous event of its stream, so an
            edited event breaks its stream's chain; seals commit to the global order, so removed
            events break a seal. Reads one consistent snapshot; appends may go on meanwhile.

            Exit codes: 0 intact, 5 a broken link was found, 3 the database is unreachable.

            Examples:
              ledger verify
              ledger verify --json
            """)
    )

    @OptionGroup var database: DatabaseOptions

    @Flag(help: "Print the report as JSON.")
    var json = false

    func run() async throws {
        try await reportingFailures {
            let logger = makeLogger("ledger.verify")
            let target = try database.resolve(logger: logger)
            let pool = PostgresPool(conninfo: target.conninfo, maxConnections: 1, logger: logger)
            defer { pool.close() }
            let store = EventStore(pool: pool, logger: logger)
            let bar: ProgressBar? = json ? nil : ProgressBar(label: "verify", unit: "events")
            let progress: (@Sendable (Int, Int) -> Void)? = bar.map { bar in
                { @Sendable done, total in bar.update(done: done, total: total) }
            }
            let report = try await store.verify(progress: progress)
            bar?.finish()
            if json {
                var output: [String: String] = [
                    "intact": "\(report.isIntact)", "events_checked": "\(report.eventsChecked)",
                    "streams_checked": "\(report.streamsChecked)", "seals_checked": "\(report.sealsChecked)",
                ]
                if let problem = report.problem {
                    output["problem"] = problem.kind.rawValue
                    output["message"] = problem.message
                    output["stream_id"] = problem.streamID
                    output["event_id"] = problem.eventID?.uuidString.lowercased()
                }
                print(jsonText(output))
            } else if let problem = report.problem {
                print("BROKEN: \(problem.message)")
            } else {
                print("OK: \(report.eventsChecked) events in \(report.streamsChecked) streams and "
                    + "\(report.sealsChecked) seals verified")
            }
            if !report.isIntact { throw ExitCode(5) }
        }
    }
}

/// `ledger seal`: commits a digest over every event not yet sealed.
struct SealCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "seal",
        abstract: "Seal the events appended since the last seal (run it periodically, e.g. every minute).",
        discussion: helpText("""
            A seal is sha256(previous seal || the hashes of the new events in global order), kept in
            the append-only seals table; `ledger verify` recomputes them.

            Example:
              ledger seal
            """)
    )

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        try await reportingFailures {
            let logger = makeLogger("ledger.seal")
            let target = try database.resolve(logger: logger)
            let pool = PostgresPool(conninfo: target.conninfo, maxConnections: 1, logger: logger)
            defer { pool.close() }
            if let seal = try await EventStore(pool: pool, logger: logger).seal() {
                print("seal \(seal.number): \(seal.eventCount) events through position \(seal.upTo.position)")
            } else {
                print("nothing new to seal")
            }
        }
    }
}
