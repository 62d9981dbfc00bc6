import ArgumentParser
import Foundation
@testable import LedgerCLI
import Testing

/// `--help` text: paragraphs reach ArgumentParser as one line each, so it wraps them once.
@Suite("help text")
struct HelpTextTests {
    @Test func paragraphsAreJoinedExamplesAndItemsKept() {
        let source = """
            Recomputes every decision recorded since --since from the
            inputs it read: an unchanged outcome appends nothing.

            - a list item
            - another
            1. numbered

            Examples:
              ledger decisions redo --rule-version 1
              ledger decisions decide
            """
        #expect(helpText(source) == """
            Recomputes every decision recorded since --since from the inputs it read: an unchanged outcome appends nothing.

            - a list item
            - another
            1. numbered

            Examples:
              ledger decisions redo --rule-version 1
              ledger decisions decide
            """)
    }

    // What a person reads: no sentence of `ledger decisions redo --help` is cut into a full line
    // and an orphan word.
    @Test func helpOutputWrapsEachParagraphOnce() async throws {
        let result = try await LedgerProcess.runDetached(["decisions", "redo", "--help"])
        #expect(result.status == 0)
        let flattened = result.stdout.replacingOccurrences(of: "\n", with: " ")
        #expect(flattened.contains("from the inputs it read. An unchanged outcome appends nothing"))
        #expect(!result.stdout.split(separator: "\n").contains { $0 == "inputs" || $0 == "told" || $0 == "changed." })
    }

    /// The exit codes as docs/getting-started.md's table gives them (its first column).
    static func documentedExitCodes() throws -> Set<Int> {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let page = try String(contentsOf: root.appendingPathComponent("docs/getting-started.md"), encoding: .utf8)
        let section = try #require(page.components(separatedBy: "## Exit codes of `ledger`").last)
        return Set(section.split(separator: "\n").compactMap { line -> Int? in
            guard line.hasPrefix("| ") else { return nil }
            return Int(line.dropFirst(2).prefix { $0 != " " })
        })
    }

    // One list of exit codes: every code the commands throw (`ExitCode(N)` in Sources/LedgerCLI,
    // with ArgumentParser's 0, 1 and 64) is in the getting-started table and in `ledger --help`,
    // and neither lists a code no command throws.
    @Test func exitCodesAreTheSameInTheCodeTheHelpAndTheDocs() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        var thrown: Set<Int> = [0, 1, 64]
        let sources = root.appendingPathComponent("Sources/LedgerCLI")
        let files = try #require(FileManager.default.enumerator(atPath: sources.path)).compactMap { $0 as? String }
        for file in files where file.hasSuffix(".swift") {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for match in text.matches(of: /ExitCode\((\d+)\)/) { thrown.insert(Int(match.1)!) }
        }
        #expect(thrown.count > 10)
        #expect(try Self.documentedExitCodes() == thrown)
        let help = Ledger.configuration.discussion
        let helped = Set(help.matches(of: /(\d+) [a-z`]/).compactMap { Int($0.1) })
        #expect(helped == thrown, "ledger --help lists \(helped.sorted()), the commands throw \(thrown.sorted())")
    }
}
