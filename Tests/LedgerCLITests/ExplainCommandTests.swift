import Foundation
@testable import AttributionLedger
import LedgerDecisions
import LedgerDispatch
import LedgerDomain
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import Testing

@Suite("ledger explain and ledger decisions", .database)
struct ExplainCommandTests {
    static let epoch = Date(timeIntervalSince1970: 1_763_000_000)

    /// An install whose Google conversion was answered affirmatively (Google App Conversion
    /// Tracking API's UAC example, stamped an hour before the install), decided by the decider.
    static func decidedInstall(_ store: EventStore) async throws {
        var settings = AttributionSettings()
        settings.defaults.providers = [.google]
        let device = DeviceContext(
            platform: .android, gaid: "38400000-8CF0-11BD-B23E-10B96E40000D", limitAdTracking: false, ip: "198.51.100.4",
            userAgent: UserAgentParts(appName: "App", appVersion: "2.0", osName: "Android", osVersion: "14", locale: "en_US",
                                      deviceModel: "Pixel 8", build: "UQ1A"),
            osVersion: "14", appVersion: "2.0", bundleID: "com.example.app")
        let recorder = DeviceFactRecorder(store: store, settings: settings, logger: TestDatabase.quietLogger)
        let fact = try await recorder.record(
            FirstOpen(appID: try AppID("app1"), device: device), app: try AppID("app1"), device: try DeviceID("dev1"), id: UUID(),
            occurredAt: epoch, metadata: EventMetadata(actor: "test"), now: epoch)
        let send = try #require(fact.sends.first)
        let body = """
            {"ad_events":[{"ad_event_id":"Q2owS0VRancwZHk0QlJDdXVMX2U1TQ","conversion_metric":"conversion","interaction_type":null,
            "campaign_type":"UAC","campaign_id":123456789,"campaign_name":"My App Campaign","ad_type":"ClickToDownload",
            "external_customer_id":123456789,"location":21144,"network_type":"Search","network_subtype":"GoogleSearch",
            "video_id":null,"keyword":null,"match_type":null,"placement":null,"ad_group_id":null,"creative_id":null,
            "timestamp":\(Int(epoch.timeIntervalSince1970) - 3600).5}],"errors":[],"attributed":true}
            """
        let response = ResponseReceived(attempt: 1, status: 200, headers: [], body: RecordedBody(bytes: Data(body.utf8)),
                                        latencyMilliseconds: 12)
        try await store.append([
            NewEvent(type: ResponseReceived.eventType, data: try EventCatalog.standard.encode(response), occurredAt: epoch),
            NewEvent(type: SendSucceeded.eventType, data: try EventCatalog.standard.encode(SendSucceeded(attempt: 1)), occurredAt: epoch),
        ], to: StreamID.send(id: send).rawValue)
        let decider = AttributionDecider(store: store, settings: settings, logger: TestDatabase.quietLogger)
        var made: [DecisionMade] = []
        let deadline = ContinuousClock.now + .seconds(120)  // other tests' transactions may hold the read horizon back
        repeat {
            made += try await decider.decidePending(now: Date())
        } while made.isEmpty && ContinuousClock.now < deadline
        #expect(made.count == 1)
        // Wait until the decision itself is readable, so the commands see the projection decided.
        while try await store.readAll(filter: EventFilter(types: [AttributionDecided.eventType])).events.isEmpty,
            ContinuousClock.now < deadline + .seconds(30) {
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    @Test("explain prints the decision with its candidates and reasons")
    func explainsADecision() async throws {
        let database = try await TestDatabase.create()
        defer { database.drop() }
        let pool = PostgresPool(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        defer { pool.close() }
        try await Self.decidedInstall(EventStore(pool: pool, catalog: .standard, logger: TestDatabase.quietLogger))

        let text = try await LedgerProcess.runDetached(["explain", "device-app1/dev1", "--database-url", database.conninfo])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("Install at 2025-11-13T02:13:20Z"), "\(text.stdout)")
        #expect(text.stdout.contains("Sends awaited: 1 of 1 finished: google answered"), "\(text.stdout)")
        #expect(text.stdout.contains("Winner: google click at 2025-11-13T01:13:20Z, campaign 123456789"), "\(text.stdout)")
        #expect(text.stdout.contains("✓ google click"), "\(text.stdout)")
        #expect(text.stdout.contains("(last-click-v1)"), "\(text.stdout)")
        #expect(text.stdout.contains("ad event Q2owS0VRancwZHk0QlJDdXVMX2U1TQ: attributed=1, request pending"), "\(text.stdout)")

        let byApp = try await LedgerProcess.runDetached(["explain", "--app", "app1", "dev1", "--json", "--database-url", database.conninfo])
        #expect(byApp.status == 0, "\(byApp.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(byApp.stdout.utf8)) as? [String: Any])
        #expect(json["deviceStreamID"] as? String == "device-app1/dev1")

        let unknown = try await LedgerProcess.runDetached(["explain", "device-app1/nobody", "--database-url", database.conninfo])
        #expect(unknown.status == 8)
        #expect(unknown.stderr.contains("no events for device-app1/nobody"))
        let bad = try await LedgerProcess.runDetached(["explain", "dev1", "--database-url", database.conninfo])
        #expect(bad.status == 64)
    }

    @Test("explain --html draws the decision with the app's own windows, to stdout or --output; refuses --json with it")
    func explainsAsAPage() async throws {
        let database = try await TestDatabase.create()
        defer { database.drop() }
        let pool = PostgresPool(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        defer { pool.close() }
        try await Self.decidedInstall(EventStore(pool: pool, catalog: .standard, logger: TestDatabase.quietLogger))

        let page = try await LedgerProcess.runDetached(["explain", "device-app1/dev1", "--html", "--database-url", database.conninfo])
        #expect(page.status == 0, "\(page.stderr)")
        #expect(page.stdout.hasPrefix("<!DOCTYPE html>") && page.stdout.hasSuffix("</html>\n"))
        #expect(page.stdout.contains(#"data-kind="candidate" data-winner="true" data-outcome="won" data-source="google""#))
        #expect(page.stdout.contains("★ WINNER — google click at 2025-11-13T01:13:20Z, campaign 123456789"))
        #expect(page.stdout.contains("30 d click window"), "Google's default install lookback")

        // The app's windows draw the bands: the apps file gives app1 a 7-day Google window.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("explain-html-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let appsFile = folder.appendingPathComponent("apps.json")
        try Data(#"{"apps": {"app1": {"windows": {"google_click": 604800}}}}"#.utf8).write(to: appsFile)
        let output = folder.appendingPathComponent("timeline.html")
        let written = try await LedgerProcess.runDetached(["explain", "device-app1/dev1", "--html", "--output", output.path,
                                                           "--apps-file", appsFile.path, "--database-url", database.conninfo])
        #expect(written.status == 0 && written.stdout.isEmpty, "\(written.stderr)")
        let html = try String(contentsOf: output, encoding: .utf8)
        #expect(html.contains("7 d click window") && !html.contains("30 d click window"))

        let both = try await LedgerProcess.runDetached(["explain", "device-app1/dev1", "--html", "--json", "--database-url", database.conninfo])
        #expect(both.status == 64 && both.stderr.contains("--json and --html"), "\(both.stderr)")
        let stray = try await LedgerProcess.runDetached(["explain", "device-app1/dev1", "--output", output.path,
                                                         "--database-url", database.conninfo])
        #expect(stray.status == 64 && stray.stderr.contains("--output"), "\(stray.stderr)")
        let unknown = try await LedgerProcess.runDetached(["explain", "device-app1/nobody", "--html", "--database-url", database.conninfo])
        #expect(unknown.status == 8)
    }

    @Test("replay tells the device's story in log order; export writes every event as a JSON line")
    func replayAndExport() async throws {
        let database = try await TestDatabase.create()
        defer { database.drop() }
        let pool = PostgresPool(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        defer { pool.close() }
        try await Self.decidedInstall(EventStore(pool: pool, catalog: .standard, logger: TestDatabase.quietLogger))
        let total = try await pool.query("SELECT count(*) FROM events").single().decode(Int.self, at: 0)

        let text = try await LedgerProcess.runDetached(["replay", "--device", "device-app1/dev1", "--database-url", database.conninfo])
        #expect(text.status == 0, "\(text.stderr)")
        let lines = text.stdout.split(separator: "\n")
        #expect(lines.first?.contains("FirstOpen") == true, "\(text.stdout)")
        #expect(lines.contains { $0.contains("google conversion requested") })
        #expect(lines.contains { $0.contains("answer 200") })
        #expect(lines.contains { $0.contains("decided (last-click-v1): google click wins") })
        #expect(lines.contains { $0.contains("google cross_network requested") && $0.contains("attributed=1") })

        let json = try await LedgerProcess.runDetached(["replay", "--device", "device-app1/dev1", "--json", "--as-of", "3",
                                                        "--database-url", database.conninfo])
        #expect(json.status == 0, "\(json.stderr)")
        let asOf = try json.stdout.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(asOf.count == 3)
        #expect(asOf.allSatisfy { ($0["position"] as? Int ?? 99) <= 3 && ($0["hash"] as? String)?.count == 64 })

        let export = try await LedgerProcess.runDetached(["export", "--database-url", database.conninfo])
        #expect(export.status == 0, "\(export.stderr)")
        #expect(export.stdout.split(separator: "\n").count == total)
        let decisions = try await LedgerProcess.runDetached(["export", "--decrypted", "--type", "AttributionDecided", "--database-url", database.conninfo])
        let only = try #require(decisions.stdout.split(separator: "\n").first)
        let decision = try #require(try JSONSerialization.jsonObject(with: Data(only.utf8)) as? [String: Any])
        #expect(decision["event_type"] as? String == "AttributionDecided")
        #expect(decisions.stdout.split(separator: "\n").count == 1)
    }

    @Test("decisions redo appends nothing when nothing changed, and refuses an unknown rule version")
    func redo() async throws {
        let database = try await TestDatabase.create()
        defer { database.drop() }
        let pool = PostgresPool(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        defer { pool.close() }
        let store = EventStore(pool: pool, catalog: .standard, logger: TestDatabase.quietLogger)
        try await Self.decidedInstall(store)
        let before = try await store.streamVersion("decision-app1/dev1")

        let same = try await LedgerProcess.runDetached(["decisions", "redo", "--rule-version", "1", "--json",
                                                        "--database-url", database.conninfo])
        #expect(same.status == 0, "\(same.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(same.stdout.utf8)) as? [String: Any])
        #expect(report["examined"] as? Int == 1 && report["unchanged"] as? Int == 1)
        #expect(try await store.streamVersion("decision-app1/dev1") == before)

        let unknown = try await LedgerProcess.runDetached(["decisions", "redo", "--rule-version", "7", "--database-url", database.conninfo])
        #expect(unknown.status == 9)
        #expect(unknown.stderr.contains("unknown rule version '7'"))
    }
}
