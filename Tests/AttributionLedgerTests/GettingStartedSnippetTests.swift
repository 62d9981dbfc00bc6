import AttributionLedger
import Foundation
import LedgerFolds
import LedgerTestKit
import Testing

// snippet: use-it-from-swift
/// Records one install and reads back what the ledger knows about the device.
func recordInstall(databaseURL: String) async throws -> (recorded: Recorded, state: DeviceState) {
    // One ledger per process: it holds a pool of PostgreSQL sessions. Personal fields (the IP,
    // the device identifiers) are sealed with LEDGER_MASTER_KEY or LEDGER_MASTER_KEY_FILE.
    let ledger = AttributionLedger(conninfo: databaseURL)
    defer { ledger.close() }

    let device = try DeviceRef(app: "com.example.game", device: "install-7f3a")
    let launch = FirstOpen(
        appID: try AppID("com.example.game"),
        device: DeviceContext(
            platform: .ios, idfv: "21DB6612-09B3-4ECC-84AC-B353B0AF1334", limitAdTracking: false,
            ip: "203.0.113.7",
            userAgent: UserAgentParts(appName: "Game", appVersion: "3.2.0", osName: "iOS", osVersion: "17.4.1",
                                      locale: "en_US", deviceModel: "iPhone15,2", build: "21E236"),
            osVersion: "17.4.1", appVersion: "3.2.0", bundleID: "com.example.game"))

    // The id is yours: a retry with the same id records nothing twice.
    let recorded = try await ledger.recordFirstOpen(launch, for: device, id: UUID(), occurredAt: Date())
    let state = try await ledger.deviceState(of: device)
    return (recorded, state)
}
// snippet: end

/// The Swift example of docs/getting-started.md ("Use it from Swift") is this file's marked
/// region, compiled with the tests and run against a real database, so the page cannot show code
/// that no longer builds or works.
@Suite struct GettingStartedSnippetTests {
    /// The marked region of this file, between `// snippet: use-it-from-swift` and `// snippet: end`.
    static func snippet() throws -> String {
        let source = try String(contentsOfFile: #filePath, encoding: .utf8)
        let begin = try #require(source.range(of: "// snippet: use-it-from-swift\n"))
        let end = try #require(source.range(of: "// snippet: end\n", range: begin.upperBound..<source.endIndex))
        return String(source[begin.upperBound..<end.lowerBound])
    }

    @Test("getting-started.md shows the snippet this file compiles, byte for byte")
    func theDocumentShowsTheCompiledSnippet() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/getting-started.md")
        let page = try String(contentsOf: docs, encoding: .utf8)
        let block = "```swift\nimport AttributionLedger\nimport Foundation\n\n" + (try Self.snippet()) + "```\n"
        #expect(page.contains(block), "docs/getting-started.md must show this file's snippet in a swift block")
    }

    @Test("the snippet records an install with the sends it causes, and reads the device's state",
          .database)
    func theSnippetRecordsAndReads() async throws {
        try await TestDatabase.with { database throws in
            let (recorded, state) = try await recordInstall(databaseURL: database.conninfo)
            #expect(recorded.position > 0 && !recorded.wasDuplicate)
            // Every provider is on by default: Google's first_open, Branch's open and Singular's
            // session are requested with the install (AdServices needs a token, which it lacks).
            #expect(recorded.sendIDs.count == 3)
            #expect(state.lastPosition != nil && state.eventCount == 1 + recorded.sendIDs.count)
            #expect(state.branch.opensRequested == 1)
        }
    }
}
