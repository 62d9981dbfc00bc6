import Foundation
@testable import LedgerCLI
import LedgerDomain
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import Testing

/// Progress of `ledger export`, `decisions redo`, `worker --rebuild-queue` and `append`: shown to
/// a person at a terminal only, never with `--json`, and for `append` only past a few thousand
/// lines.
@Suite("Progress on long work")
struct ProgressDisplayTests {
    @Test func shownOnlyOnATerminalWithoutJSON() {
        #expect(ProgressDisplay.shows(stderrIsTerminal: true, json: false, items: 1))
        #expect(!ProgressDisplay.shows(stderrIsTerminal: false, json: false, items: 1))
        #expect(!ProgressDisplay.shows(stderrIsTerminal: true, json: true, items: 1))
        #expect(!ProgressDisplay.shows(stderrIsTerminal: false, json: true, items: 1))
    }

    @Test func appendShowsProgressOnlyPastAFewThousandLines() {
        let threshold = ProgressDisplay.appendThreshold
        #expect(threshold >= 1000 && threshold <= 10_000)
        #expect(!ProgressDisplay.shows(stderrIsTerminal: true, json: false, items: threshold, threshold: threshold))
        #expect(ProgressDisplay.shows(stderrIsTerminal: true, json: false, items: threshold + 1, threshold: threshold))
        #expect(!ProgressDisplay.shows(stderrIsTerminal: true, json: true, items: threshold + 1, threshold: threshold))
    }

    /// Whether `stderr` holds only the command's own lines (`ledger …`, such as the warning about
    /// the test database's superuser): no bar line, no carriage return, no escape sequence.
    static func holdsNoProgress(_ stderr: String) -> Bool {
        !stderr.contains("\r") && !stderr.contains("\u{1B}")
            && stderr.split(separator: "\n").allSatisfy { $0.hasPrefix("ledger ") || $0.hasPrefix("ledger:") }
    }

    /// With stderr a pipe, the long commands write their own lines and nothing else: no bar, no
    /// carriage return, no escape sequence.
    @Test(.database, .timeLimit(.minutes(3)))
    func noProgressBytesWhenStderrIsNotATerminal() async throws {
        try await TestDatabase.with { database in
            let pool = PostgresPool(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            defer { pool.close() }
            let store = EventStore(pool: pool, logger: TestDatabase.quietLogger)
            for number in 0..<20 {
                try await store.append([try VerifyCommandTests.session(number)], to: "device-app-\(number % 4)")
            }
            // One line each: the command's own summary.
            let export = try await LedgerProcess.runDetached(["export", "--database-url", database.conninfo])
            #expect(export.status == 0, "\(export.stderr)")
            #expect(export.stderr.hasPrefix("ledger export: ") && export.stderr.hasSuffix(" seals, stored form\n"), "\(export.stderr)")
            #expect(export.stderr.split(separator: "\n").count == 1, "\(export.stderr)")
            let decrypted = try await LedgerProcess.runDetached(["export", "--decrypted", "--database-url", database.conninfo])
            #expect(decrypted.status == 0, "\(decrypted.stderr)")
            #expect(decrypted.stderr == "ledger export: \(decrypted.stdout.split(separator: "\n").count) events, "
                + "decrypted: this output holds personal data\n")
            let rebuild = try await LedgerProcess.runDetached(["worker", "--rebuild-queue", "--database-url", database.conninfo])
            #expect(rebuild.status == 0, "\(rebuild.stderr)")
            #expect(Self.holdsNoProgress(rebuild.stderr), "\(rebuild.stderr)")
            let redo = try await LedgerProcess.runDetached(["decisions", "redo", "--rule-version", "1", "--database-url", database.conninfo])
            #expect(redo.status == 0, "\(redo.stderr)")
            #expect(Self.holdsNoProgress(redo.stderr), "\(redo.stderr)")

            // More lines than the threshold (each refused before the database: quick), stdin a file.
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-progress-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let lines = folder.appendingPathComponent("lines.jsonl")
            try Data(String(repeating: "[]\n", count: ProgressDisplay.appendThreshold + 100).utf8).write(to: lines)
            let append = try await LedgerProcess.runDetached(["append", "--database-url", database.conninfo], stdin: lines)
            #expect(append.status == 10)
            #expect(append.stdout.hasPrefix("accepted 0 (0 already recorded), refused \(ProgressDisplay.appendThreshold + 100)"))
            #expect(Self.holdsNoProgress(append.stderr), "\(append.stderr.prefix(500))")
        }
    }
}
