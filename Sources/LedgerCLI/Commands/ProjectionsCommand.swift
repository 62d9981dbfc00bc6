import ArgumentParser
import Foundation
import LedgerPostgres
import LedgerPrivateCluster
import LedgerProjections
import LedgerStore
import Logging

/// `ledger projections`: where each projection stands, and rebuilding one after a fix.
struct ProjectionsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "projections",
        abstract: "Show where each projection stands in the log, or rebuild one from position 0.",
        discussion: helpText("""
            Projections turn the log into answers (per-device SKAN state, AdServices tokens, Branch
            identity, Google obligations). Each keeps a checkpoint in the log and records the code
            version its tables were built with; after deploying a change to a projection, `status`
            reports it stale and `rebuild` builds it anew while appends go on.

            Examples:
              ledger projections status
              ledger projections rebuild skan_devices
              ledger projections rebuild --all
            """),
        subcommands: [Status.self, Rebuild.self]
    )

    /// `ledger projections status`.
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List every projection: versions, checkpoint, lag, and whether it must be rebuilt.",
            discussion: helpText("""
                Creates any projection table or checkpoint row that is missing, then prints one line
                per projection: the version of the running code, the version its tables were built
                with, its checkpoint position, the events applied since its last (re)build, and how
                far behind the log it is (events of its types not yet applied, and seconds since the
                oldest of them was recorded). A projection built by other code than is running is
                marked stale: rebuild it.

                Reads are gap-safe: no reader sees an event until every transaction that took its
                transaction id before the event's, anywhere on the server, has ended. When committed
                events have waited 5 seconds or more behind that read horizon (--horizon-after), the
                report ends with the transactions in front of them, lowest id first (process id,
                database, state, how long open, statement) and how to end one; projections will not
                move until they end.

                With --json, one JSON object per line (name, codeVersion, builtWithVersion, position,
                transactionID, eventsApplied, eventsBehind, secondsBehind, rebuiltAt, stale), then,
                when the horizon is held back as above, {"readHorizon": {transactionID,
                eventsWaiting, holders}}.

                Examples:
                  ledger projections status
                  ledger projections status --json | jq 'select(.stale)'
                  ledger projections status --horizon-after 0
                """)
        )

        @OptionGroup var database: DatabaseOptions

        @Flag(help: "Print one JSON object per projection, one per line.")
        var json = false

        @Option(help: ArgumentHelp(
            "Name the transactions holding the read horizon back once committed events have waited this long.",
            valueName: "seconds"))
        var horizonAfter: Double = defaultHorizonReportThreshold

        @Option(help: ArgumentHelp("How many of those transactions to name, lowest transaction id first.", valueName: "count"))
        var horizonHolders: Int = 5

        func run() async throws {
            try await reportingFailures {
                let logger = makeLogger("ledger.projections")
                let target = try database.resolve(logger: logger)
                let pool = PostgresPool(conninfo: target.conninfo, maxConnections: 1, logger: logger)
                defer { pool.close() }
                let store = EventStore(pool: pool, logger: logger)
                let statuses = try await projectionFailures {
                    try await ProjectionRunner(store: store, projections: AllProjections.list, logger: logger).prepare()
                    return try await pool.withConnection { try ProjectionStatus.read(AllProjections.list, on: $0) }
                }
                // The horizon is a hint for ops: a failure to read it (a restricted role, say) is
                // logged and the statuses are still printed.
                let held: ReadHorizon?
                do {
                    let limit = max(1, horizonHolders)
                    held = horizonHeldBack(try await pool.withConnection { try ReadHorizon.read(on: $0, limit: limit) }, after: horizonAfter)
                } catch {
                    logger.warning("could not read the read horizon", metadata: ErrorLogMetadata.of(error))
                    held = nil
                }
                if json {
                    for status in statuses { print(try statusJSON(status)) }
                    if let held { print(try horizonJSON(held)) }
                } else {
                    print(statusTable(statuses))
                    if let held { print("\n" + horizonReport(held)) }
                }
            }
        }
    }

    /// `ledger projections rebuild`.
    struct Rebuild: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Rebuild a projection (or all of them) from position 0 and swap it in atomically.",
            discussion: helpText("""
                Builds the projection into shadow tables from the whole log while appends and the live
                runner go on, catches up, then swaps the shadow tables in within one transaction:
                readers see the old tables until the swap and the new ones after it, never a
                half-built projection. Run it after deploying a change that `ledger projections
                status` reports as stale. A progress bar on stderr shows events/s and time left.

                Exit codes: 0 rebuilt, 6 no projection has that name, 7 another process is already
                rebuilding it, 3 the database is unreachable, 1 the rebuild failed (nothing was
                swapped in).

                Examples:
                  ledger projections rebuild skan_devices
                  ledger projections rebuild --all
                """)
        )

        @OptionGroup var database: DatabaseOptions

        @Argument(help: ArgumentHelp("The projection to rebuild (names: `ledger projections status`).", valueName: "name"))
        var name: String?

        @Flag(help: "Rebuild every projection, one after the other.")
        var all = false

        @Option(help: ArgumentHelp(
            "The most device states held in memory; past it they are written to the shadow tables and read back when needed (about 3 KB each).",
            valueName: "count"))
        var maxStatesInMemory = 20_000

        func validate() throws {
            if maxStatesInMemory < 1 { throw ValidationError("--max-states-in-memory must be at least 1.") }
            if all, name != nil { throw ValidationError("Give a projection name or --all, not both.") }
            if !all, name == nil { throw ValidationError("Give the projection to rebuild, or --all.") }
        }

        func run() async throws {
            try await reportingFailures {
                let projections: [any Projection]
                if let name {
                    guard let projection = AllProjections.list.first(where: { $0.name == name }) else {
                        throw CLIFailure(exitCode: .unknownProjection, message: "no projection is called \(name); known: "
                            + AllProjections.list.map(\.name).joined(separator: ", "))
                    }
                    projections = [projection]
                } else {
                    projections = AllProjections.list
                }
                let logger = makeLogger("ledger.projections.rebuild")
                let target = try database.resolve(logger: logger)
                let pool = PostgresPool(conninfo: target.conninfo, maxConnections: 1, logger: logger)
                defer { pool.close() }
                let rebuilder = ProjectionRebuilder(store: EventStore(pool: pool, logger: logger),
                                                    maxStatesInMemory: maxStatesInMemory, logger: logger)
                for projection in projections {
                    let bar = ProgressBar(label: "rebuild \(projection.name)", unit: "events")
                    let report = try await projectionFailures {
                        try await rebuilder.rebuild(projection) { progress in
                            bar.update(done: Int(progress.eventsDone), total: Int(progress.eventsTotal), detail: progress.phase)
                        }
                    }
                    bar.finish()
                    let rate = report.seconds > 0 ? Double(report.events) / report.seconds : 0
                    print("rebuilt \(report.projection) (version \(report.version)): \(report.events) events in "
                        + String(format: "%.2f", report.seconds) + " s (\(Int(rate)) events/s), checkpoint position "
                        + "\(report.checkpoint.position)"
                        + (report.spills > 0 ? ", states written out \(report.spills) times to stay within memory" : ""))
                }
            }
        }
    }
}

extension ExitCode {
    /// No projection has the name given.
    static let unknownProjection = ExitCode(6)
    /// Another process is rebuilding the projection.
    static let rebuildInProgress = ExitCode(7)
}

/// Runs `body`, turning projection errors into one-line CLI failures; an undefined table means
/// the schema is not migrated yet, which the line says.
private func projectionFailures<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as ProjectionError {
        switch error {
        case .unknownProjection: throw CLIFailure(exitCode: .unknownProjection, message: error.description)
        case .rebuildInProgress: throw CLIFailure(exitCode: .rebuildInProgress, message: error.description)
        case .notPrepared, .applyFailed: throw CLIFailure(exitCode: .failure, message: error.description)
        }
    } catch let error as PostgresError where error.sqlState == "42P01" {
        throw CLIFailure(exitCode: .failure, message: "\(error) (run `ledger migrate` first)")
    }
}

/// One projection's status as a JSON object: its fields, plus `stale`.
func statusJSON(_ status: ProjectionStatus) throws -> String {
    let encoder = JSONEncoder()
    encoder.dateEncodingStrategy = .iso8601
    var object = try JSONSerialization.jsonObject(with: encoder.encode(status)) as? [String: Any] ?? [:]
    object["stale"] = status.isStale
    let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
    return String(decoding: data, as: UTF8.self)
}

/// How long committed events must have waited behind the read horizon before `status` names the
/// transactions in front (`--horizon-after`): a horizon a few milliseconds behind the appends in
/// flight is the normal state of a busy ledger.
let defaultHorizonReportThreshold = 5.0

/// `horizon` when committed events have waited behind it for at least `threshold` seconds, else nil.
func horizonHeldBack(_ horizon: ReadHorizon, after threshold: Double) -> ReadHorizon? {
    horizon.eventsWaiting > 0 && horizon.secondsWaiting >= threshold ? horizon : nil
}

/// The read horizon as one JSON object, `{"readHorizon": …}`.
func horizonJSON(_ horizon: ReadHorizon) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return String(decoding: try encoder.encode(["readHorizon": horizon]), as: UTF8.self)
}

/// The sessions holding the read horizon back, one line each, and how to end one.
func horizonReport(_ horizon: ReadHorizon) -> String {
    let count = horizon.holders.count
    let waiting = horizon.eventsWaiting >= ReadHorizon.countLimit ? "\(horizon.eventsWaiting) or more" : "\(horizon.eventsWaiting)"
    var lines = ["Read horizon held back: \(waiting) committed event(s), the oldest for "
        + String(format: "%.1f s", horizon.secondsWaiting) + ", wait behind \(count) open transaction(s)"
        + " on the server; no projection or subscription sees them until these end:"]
    for holder in horizon.holders {
        let who = holder.pid.map { "pid \($0)" } ?? "prepared transaction"
        let where_ = [holder.database.map { "database \($0)" }, holder.user.map { "user \($0)" },
                      holder.application.flatMap { $0.isEmpty ? nil : "application \($0)" }].compactMap { $0 }
        let statement = (holder.query ?? "").split(whereSeparator: \.isNewline).joined(separator: " ")
        // Another role's session shows no state, start or statement without pg_read_all_stats.
        let state = holder.state.map { state in holder.secondsOpen.map { state + " for " + String(format: "%.1f s", $0) } ?? state }
            ?? "state not shown to this role"
        lines.append("  \(who) (\(where_.joined(separator: ", "))): \(state)" + (statement.isEmpty ? "" : " — \(statement.prefix(100))"))
    }
    if let pid = horizon.holders.first?.pid {
        lines.append("End a session with SELECT pg_terminate_backend(\(pid)); (docs/operations.md, \"Projections do not move\").")
    } else {
        lines.append("A prepared transaction ends with COMMIT PREPARED or ROLLBACK PREPARED '<gid>' (docs/operations.md).")
    }
    return lines.joined(separator: "\n")
}

/// The statuses as an aligned table, with a hint under each stale projection.
func statusTable(_ statuses: [ProjectionStatus]) -> String {
    let header = ["NAME", "CODE", "BUILT", "POSITION", "APPLIED", "BEHIND", "SECONDS BEHIND", ""]
    let rows = statuses.map { status -> [String] in
        [status.name, "v\(status.codeVersion)", status.builtWithVersion.map { "v\($0)" } ?? "-", "\(status.position)",
         "\(status.eventsApplied)", "\(status.eventsBehind)", String(format: "%.1f", status.secondsBehind),
         status.isStale ? "stale — run `ledger projections rebuild \(status.name)`" : "ok"]
    }
    let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
    func line(_ cells: [String]) -> String {
        cells.enumerated().map { column, cell in
            // Names and notes read left to right; numbers line up on the right.
            let pad = String(repeating: " ", count: widths[column] - cell.count)
            return (column == 0 || column == cells.count - 1) ? cell + pad : pad + cell
        }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
    }
    return ([line(header)] + rows.map(line)).joined(separator: "\n")
}
