import ArgumentParser
import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerPrivateCluster
import LedgerStore

/// `ledger export`: the log as JSON lines, for auditors.
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write the log as JSON lines (every stored column, hashes in hex), in the order readers apply it.",
        discussion: helpText("""
            Reads gap-safely in batches, from the start or after --after-position, optionally only
            some event types or stream categories, and as of a position or time. Each line is one
            event: position, transaction_id, stream_id, stream_version, event_id, event_type,
            schema_version, data, metadata, occurred_at, recorded_at and hash, so the chain can be
            re-checked outside the ledger (see docs/auditing.md).

            Examples:
              ledger export > ledger.jsonl
              ledger export --type AttributionDecided --as-of 2026-11-20T00:00:00Z
              ledger export --category device --category decision --after-position 120000
            """)
    )

    @OptionGroup var database: DatabaseOptions

    @Option(help: "Start after this global position.")
    var afterPosition: Int64 = 0

    @Option(name: .customLong("type"), help: "Only this event type (repeatable).")
    var types: [String] = []

    @Option(name: .customLong("category"), help: "Only streams of this category: device, send, decision, skan (repeatable).")
    var categories: [String] = []

    @Option(help: "What the ledger held at this time (ISO 8601) or position (a number).")
    var asOf: String?

    func run() async throws {
        try await reportingFailures {
            let at = try parseAsOf(asOf)
            let logger = makeLogger("ledger.export")
            let (pool, store) = try database.openStore(logger: logger)
            defer { pool.close() }
            let filter = EventFilter(types: types, categories: categories)
            var checkpoint = GlobalCheckpoint.start
            var written = 0
            let out = FileHandle.standardOutput
            while true {
                let batch = try await store.readAll(after: checkpoint, limit: 5000, filter: filter, asOf: at)
                guard !batch.events.isEmpty else { break }
                var lines = ""
                for event in batch.events where event.position > afterPosition {
                    lines += try EventLine.text(event) + "\n"
                    written += 1
                }
                out.write(Data(lines.utf8))
                checkpoint = batch.checkpoint
            }
            FileHandle.standardError.write(Data("ledger export: \(written) events\n".utf8))
        }
    }
}
