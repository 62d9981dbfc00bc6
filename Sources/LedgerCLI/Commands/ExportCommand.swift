import ArgumentParser
import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerPrivateCluster
import LedgerStore
import Logging
import Synchronization

/// `ledger export`: the log as JSON lines, for auditors.
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write the log as JSON lines in its stored form, verifiable without the database.",
        discussion: helpText("""
            By default every readable event exactly as stored, in global order, then every seal:
            position, transaction_id, stream_id, stream_version, event_id, event_type,
            schema_version, data and metadata as the texts the hashes cover (personal fields stay
            sealed ciphertext), occurred_at_us and recorded_at_us (whole microseconds), hash; each
            seal with its digest and signature. `ledger verify --export FILE [--public-key K]`
            re-checks every hash, chain and seal from the file alone and names the first line that
            fails (docs/auditing.md).

            --decrypted writes events for people instead: personal fields opened (this output
            HOLDS PERSONAL DATA: handle it as such), times as ISO 8601; it can be filtered by type,
            stream category, position and time, and cannot be verified.

            With LEDGER_READ_DATABASE_URL set (and no --database-url), reads that standby alone.

            Examples:
              ledger export > ledger.jsonl && ledger verify --export ledger.jsonl --public-key "$K"
              ledger export --decrypted --type AttributionDecided --as-of 2026-11-20T00:00:00Z
              ledger export --decrypted --category device --category decision --after-position 120000
            """)
    )

    @OptionGroup var database: DatabaseOptions

    @Flag(help: "Write events with personal fields opened, for people (holds personal data; not verifiable).")
    var decrypted = false

    @Option(help: "Start after this global position (--decrypted only).")
    var afterPosition: Int64 = 0

    @Option(name: .customLong("type"), help: "Only this event type (repeatable; --decrypted only).")
    var types: [String] = []

    @Option(name: .customLong("category"), help: "Only streams of this category: device, send, decision, skan (repeatable; --decrypted only).")
    var categories: [String] = []

    @Option(help: "What the ledger held at this time (ISO 8601) or position (a number; --decrypted only).")
    var asOf: String?

    func validate() throws {
        if !decrypted, afterPosition != 0 || !types.isEmpty || !categories.isEmpty || asOf != nil {
            throw ValidationError("--after-position, --type, --category and --as-of filter the --decrypted form: the stored form is the whole log, so that it can be verified")
        }
    }

    func run() async throws {
        if !decrypted {
            try await reportingFailures {
                let logger = makeLogger("ledger.export")
                let (pool, store) = try await database.openReadStore(logger: logger, asOf: nil)
                defer { pool.close() }
                let out = LineWriter()
                let bar = ProgressDisplay.bar(label: "export", unit: "events")
                let (events, seals) = try await store.exportStored(progress: bar.map { bar in
                    { @Sendable done, total in bar.update(done: done, total: total) }
                }) { line in out.write(line) }
                out.flush()
                bar?.finish()
                writeStatusLine("\(events) events and \(seals) seals, stored form", command: "export")
            }
            return
        }
        try await reportingFailures {
            let at = try parseAsOf(asOf)
            let logger = makeLogger("ledger.export")
            let (pool, store) = try await database.openReadStore(logger: logger, asOf: at)
            defer { pool.close() }
            let filter = EventFilter(types: types, categories: categories)
            var checkpoint = GlobalCheckpoint.start
            var written = 0
            let out = FileHandle.standardOutput
            // Measured in log positions: the filter leaves out events, so no count of them is known.
            let bar = ProgressDisplay.bar(label: "export", unit: "positions")
            let lastPosition = bar == nil ? 0 : try await store.pool.withConnection { Int(try EventStore.lastPosition(on: $0)) }
            while true {
                let batch = try await store.readAll(after: checkpoint, limit: 5000, filter: filter, asOf: at)
                bar?.update(done: batch.events.isEmpty ? lastPosition : Int(batch.checkpoint.position), total: lastPosition,
                            detail: "\(written) written")
                guard !batch.events.isEmpty else { break }
                var lines = ""
                for event in batch.events where event.position > afterPosition {
                    lines += try EventLine.text(event) + "\n"
                    written += 1
                }
                out.write(Data(lines.utf8))
                checkpoint = batch.checkpoint
            }
            bar?.finish()
            writeStatusLine("\(written) events, decrypted: this output holds personal data", command: "export", level: .warning)
        }
    }
}

/// Buffers lines for standard output and writes them in chunks of about 1 MiB.
final class LineWriter: Sendable {
    private let buffer = Mutex("")

    func write(_ line: String) {
        buffer.withLock { buffer in
            buffer += line
            buffer += "\n"
            if buffer.utf8.count > 1 << 20 { Self.emit(&buffer) }
        }
    }

    func flush() { buffer.withLock { Self.emit(&$0) } }

    private static func emit(_ buffer: inout String) {
        FileHandle.standardOutput.write(Data(buffer.utf8))
        buffer = ""
    }
}
