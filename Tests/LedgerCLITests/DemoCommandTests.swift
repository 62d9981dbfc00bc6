import Foundation
import LedgerPostgres
import LedgerTestKit
import Testing

@Suite("ledger demo", .database)
struct DemoCommandTests {
    /// The demo's summary is a report on the log: every figure is checked here against the
    /// database, and the day's outcome against the script (who should win each install).
    @Test("demo plays a day end to end and its summary matches the ledger")
    func demoMatchesTheLedger() async throws {
        let database = try await TestDatabase.create()
        defer { database.drop() }
        let result = try await LedgerProcess.runDetached(["demo", "--json", "--database-url", database.conninfo])
        #expect(result.status == 0, "\(result.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
                                   "\(result.stdout)")
        let pool = PostgresPool(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        defer { pool.close() }
        func count(_ sql: String) async throws -> Int {
            try await pool.query(PostgresQuery(sql: sql)).single().decode(Int.self, at: 0)
        }
        #expect(summary["events"] as? Int == (try await count("SELECT count(*) FROM events")))
        let byType = try #require(summary["events_by_type"] as? [String: Int])
        #expect(byType["AttributionDecided", default: 0] == (try await count("SELECT count(*) FROM events WHERE event_type = 'AttributionDecided'")))
        let sends = try #require(summary["sends_by_provider"] as? [String: Int])
        #expect(sends.values.reduce(0, +) == (try await count("SELECT count(*) FROM events WHERE event_type = 'SendRequested'")))
        // Nothing is lost: every send finished with exactly one terminal event, and the queue is empty.
        #expect(try await count("SELECT count(*) FROM send_queue") == 0)
        #expect(try await count("""
            SELECT count(*) FROM events r WHERE r.event_type = 'SendRequested' AND (SELECT count(*) FROM events t
              WHERE t.stream_id = r.stream_id AND t.event_type IN ('SendSucceeded', 'SendFailed', 'SendCancelled')) <> 1
            """) == 0)
        #expect(summary["fake_provider_anomalies"] as? [String] == [], "every request followed its provider's document")
        #expect(summary["install_decisions"] as? Int == 8)
        #expect(summary["decisions_by_winner"] as? [String: Int] == ["apple_adservices": 1, "branch": 2, "google": 2, "organic": 3])
        #expect(summary["expired_tokens"] as? Int == 1)
        #expect(summary["cross_network_reports"] as? [String: Int] == ["attributed=0": 1, "attributed=1": 2])
        let revenue = try #require(summary["revenue_by_currency"] as? [String: String])
        #expect(Set(revenue.keys).isSuperset(of: ["USD", "EUR", "JPY"]))
        let skan = try #require(summary["skan_windows_updated"] as? [String: String])
        #expect(skan.count == 5)
        #expect(skan.values.allSatisfy { $0.contains("p2=high") }, "\(skan)")  // the last update, in p2 [7 d, 35 d)

        let text = try await LedgerProcess.runDetached(["demo", "--database-url", database.conninfo])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("Where to look next"))
        #expect(text.stdout.contains("ledger explain device-demo.ios/"))
        // The timeline line is a command that works as printed (its page written elsewhere here).
        let timelineLine = try #require(text.stdout.split(separator: "\n").first { $0.contains("explain --html") },
                                        "a 'where to look next' line writes a timeline page")
        var arguments = timelineLine.split(separator: "#")[0].split(separator: " ").map(String.init).drop { $0 != "ledger" }.dropFirst()
            .map { $0 }
        let output = try #require(arguments.firstIndex(of: "--output"), "\(timelineLine)") + 1
        #expect(arguments[output].hasSuffix(".html"))
        let page = FileManager.default.temporaryDirectory.appendingPathComponent("demo-timeline-\(UUID().uuidString).html")
        defer { try? FileManager.default.removeItem(at: page) }
        arguments[output] = page.path
        let written = try await LedgerProcess.runDetached(arguments + ["--database-url", database.conninfo])
        #expect(written.status == 0, "\(arguments): \(written.stderr)")
        let html = try String(contentsOf: page, encoding: .utf8)
        #expect(html.hasPrefix("<!DOCTYPE html>") && html.contains("<svg") && html.contains(#"data-kind="trigger""#))
    }
}
