import Foundation
import LedgerDomain
import Testing

@Suite("docs/events.md follows the catalog")
struct DocsTests {
    static func page() throws -> String {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/events.md")
        return try String(contentsOf: url, encoding: .utf8)
    }

    @Test("every type has a section and an overview row with its version, category and stream")
    func everyType() throws {
        let page = try Self.page()
        for entry in EventCatalog.standard.entries {
            #expect(page.contains("\n### \(entry.eventType)\n"), "no section for \(entry.eventType)")
            let row = "| `\(entry.eventType)` | \(entry.schemaVersion) | \(entry.category.rawValue) | `\(entry.streamCategory.rawValue)-"
            #expect(page.contains(row), "overview row of \(entry.eventType) missing or wrong")
        }
    }

    @Test("every personal field is marked (P) on the page")
    func personalFieldsMarked() throws {
        let page = try Self.page()
        for entry in EventCatalog.standard.entries {
            for path in entry.personalFields {
                let key = path.split(separator: ".").last.map(String.init) ?? path
                #expect(page.contains("`\(key)` (P)"), "\(entry.eventType).\(path) is not marked (P)")
            }
        }
    }
}
