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
}
