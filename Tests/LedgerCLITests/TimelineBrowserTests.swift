import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import Testing

/// `ledger explain --html`, drawn by a real browser: the demo's devices, each page rendered by
/// headless Chromium to a PNG and to its DOM, the DOM checked against `ledger explain --json`.
@Suite("ledger explain --html in a browser", .database)
struct TimelineBrowserTests {
    @Test("every demo device's timeline renders in Chromium with one marker and one window per candidate, one winner per decision and each loser's reason")
    func demoTimelinesRenderInChromium() async throws {
        let browser = try Chromium.locate()
        guard let browser else { return }  // LEDGER_TEST_NO_BROWSER=1
        let database = try await TestDatabase.create()
        defer { database.drop() }
        let demo = try await LedgerProcess.runDetached(["demo", "--json", "--database-url", database.conninfo])
        try #require(demo.status == 0, "\(demo.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(demo.stdout.utf8)) as? [String: Any])
        let devices = try #require(summary["devices"] as? [String])
        try #require(devices.count >= 8)

        // A redo of one install whose winning campaign's name is markup (a provider's answer is not
        // to be trusted): the page must show it as text, and the browser must run nothing.
        let markup = #"<script>document.title='pwned'</script><img src=x onerror=alert(1)>"#
        let marked = devices.first { $0.contains("ios-search") } ?? devices[0]
        try await Self.recordRedo(of: marked, campaignName: markup, conninfo: database.conninfo)

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-timelines-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var expectations: [(device: String, page: URL, expected: ExpectedDrawing)] = []
        for (index, device) in devices.enumerated() {
            let page = folder.appendingPathComponent("device-\(index).html")
            let written = try await LedgerProcess.runDetached(
                ["explain", device, "--html", "--output", page.path, "--database-url", database.conninfo])
            try #require(written.status == 0, "\(device): \(written.stderr)")
            let explained = try await LedgerProcess.runDetached(["explain", device, "--json", "--database-url", database.conninfo])
            try #require(explained.status == 0, "\(device): \(explained.stderr)")
            expectations.append((device, page, try ExpectedDrawing(explanationJSON: Data(explained.stdout.utf8))))
        }
        #expect(expectations.contains { $0.expected.winners > 0 } && expectations.contains { !$0.expected.losers.isEmpty },
                "the demo has winners and losers to draw")

        // One Chromium launch per page writes both the screenshot and the DOM; two at a time.
        let rendered = try await Chromium.renderAll(expectations.map(\.page), browser: browser)
        for ((device, _, expected), result) in zip(expectations, rendered) {
            let png = try Data(contentsOf: result.screenshot)
            #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 10_000, "\(device): a real picture, \(png.count) bytes")
            let dom = result.dom
            #expect(dom.contains("<svg"), "\(device): \(dom.prefix(300))")
            #expect(Self.count(#"data-kind="candidate""#, in: dom) == expected.candidates, "\(device): one marker per candidate")
            #expect(Self.count(#"data-kind="window""#, in: dom) == expected.candidates, "\(device): one lookback window per candidate")
            #expect(Self.count(#"data-winner="true""#, in: dom) == expected.winners, "\(device): the winner of each decision, once")
            #expect(Self.count(#"data-kind="trigger""#, in: dom) == expected.triggers, "\(device): the install and each session")
            if device == marked {
                #expect(!dom.contains("<script") && !dom.contains("<img") && !dom.contains("pwned</title>"), "the markup ran")
                #expect(dom.contains("&lt;script&gt;document.title='pwned'&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"),
                        "the campaign name is shown as text")
                #expect(Self.count(#"data-superseded="true""#, in: dom) >= 1, "the decision the redo superseded")
            }
            for outcome in expected.losers {
                #expect(dom.contains(#"data-outcome="\#(outcome)""#), "\(device): a loser marked \(outcome)")
                #expect(dom.contains(ExpectedDrawing.reasonText[outcome] ?? outcome), "\(device): why it lost (\(outcome)), in words")
            }
        }
    }

    static func count(_ needle: String, in text: String) -> Int { text.components(separatedBy: needle).count - 1 }

    /// Appends a redo of `device`'s newest decision (as `ledger decisions redo` would: same
    /// trigger, `supersedes` the old one) whose winning touch's campaign is named `campaignName`.
    static func recordRedo(of device: String, campaignName: String, conninfo: String) async throws {
        let pool = PostgresPool(conninfo: conninfo, logger: TestDatabase.quietLogger)
        defer { pool.close() }
        let store = EventStore(pool: pool, catalog: .standard, logger: TestDatabase.quietLogger)
        let stream = "decision-" + device.dropFirst("device-".count)
        let newest = try #require(try await store.readStream(stream, backward: true, limit: 1).first, "\(device) was decided")
        var redo = try LedgerJSON.makeDecoder().decode(AttributionDecided.self, from: newest.data)
        redo.supersedes = redo.decisionID
        redo.decisionID = UUID()
        redo.winner?.campaignName = campaignName
        redo.candidates = redo.candidates.map { candidate in
            var renamed = candidate
            if candidate.outcome == .won { renamed.touch.campaignName = campaignName }
            return renamed
        }
        try await store.append(
            [NewEvent(type: AttributionDecided.eventType, data: try EventCatalog.standard.encode(redo), occurredAt: newest.occurredAt)],
            to: stream)
    }
}

/// What a device's page must draw, read from `ledger explain --json` (the same explanation).
struct ExpectedDrawing {
    var triggers = 0
    /// Candidates of each trigger's current decision (or the touches offered so far, undecided).
    var candidates = 0
    /// Current decisions with a winner.
    var winners = 0
    /// The outcomes of the losers.
    var losers: Set<String> = []

    /// The words beside each loser (the label a printout shows without colour).
    static let reasonText = [
        "outside_window": "outside its lookback window", "view_beaten_by_click": "a click inside its window beats any view",
        "earlier_click": "a later touch won", "tie_lost": "after it in the tie-break order",
    ]

    init(explanationJSON: Data) throws {
        let explanation = try #require(try JSONSerialization.jsonObject(with: explanationJSON) as? [String: Any])
        let triggers = try #require(explanation["triggers"] as? [[String: Any]])
        self.triggers = triggers.count
        for story in triggers {
            let decisions = story["decisions"] as? [[String: Any]] ?? []
            guard let current = decisions.last?["decision"] as? [String: Any] else {
                candidates += ((story["trigger"] as? [String: Any])?["candidates"] as? [Any])?.count ?? 0
                continue
            }
            let recorded = current["candidates"] as? [[String: Any]] ?? []
            candidates += recorded.count
            if current["winner"] is [String: Any] { winners += 1 }
            for candidate in recorded {
                if let outcome = candidate["outcome"] as? String, outcome != "won" { losers.insert(outcome) }
            }
        }
    }
}

/// Debian's `chromium`, headless, as the timeline test uses it.
enum Chromium {
    /// The browser's path; nil when LEDGER_TEST_NO_BROWSER=1 skips the browser test.
    /// - Throws: a test failure saying to run ops/setup when it is not installed.
    static func locate() throws -> String? {
        if ProcessInfo.processInfo.environment["LEDGER_TEST_NO_BROWSER"] == "1" { return nil }
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
            .map { "\($0)/chromium" }.first { FileManager.default.isExecutableFile(atPath: $0) }
        let found: String = try #require(path, """
            chromium is not installed: run ops/setup (it installs Debian's chromium), \
            or set LEDGER_TEST_NO_BROWSER=1 to skip the browser test (docs/getting-started.md)
            """)
        return found
    }

    struct Rendered {
        var screenshot: URL
        var dom: String
    }

    /// Renders each page once: a 1200×900 PNG beside it and the DOM after layout.
    static func renderAll(_ pages: [URL], browser: String) async throws -> [Rendered] {
        var results = [Rendered?](repeating: nil, count: pages.count)
        try await withThrowingTaskGroup(of: (Int, Rendered).self) { group in
            var next = 0
            func add() {
                let index = next
                next += 1
                group.addTask { (index, try await render(pages[index], browser: browser)) }
            }
            while next < min(2, pages.count) { add() }
            while let (index, rendered) = try await group.next() {
                results[index] = rendered
                if next < pages.count { add() }
            }
        }
        return results.compactMap { $0 }
    }

    static func render(_ page: URL, browser: String) async throws -> Rendered {
        let screenshot = page.deletingPathExtension().appendingPathExtension("png")
        let profile = page.deletingPathExtension().appendingPathExtension("profile")
        return try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result {
                    let process = Process()
                    process.executableURL = URL(fileURLWithPath: browser)
                    process.arguments = [
                        "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=\(profile.path)", "--window-size=1200,900",
                        "--screenshot=\(screenshot.path)", "--dump-dom", page.absoluteString,
                    ]
                    let out = Pipe()
                    process.standardOutput = out
                    process.standardError = FileHandle.nullDevice
                    try process.run()
                    let dom = out.fileHandleForReading.readDataToEndOfFile()
                    process.waitUntilExit()
                    try #require(process.terminationStatus == 0, "chromium exited \(process.terminationStatus) for \(page.path)")
                    return Rendered(screenshot: screenshot, dom: String(decoding: dom, as: UTF8.self))
                })
            }.start()
        }
    }
}
