import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerTestKit
import Testing

@Suite("ledger append", .database)
struct AppendCommandTests {
    static func line(type: String, data: Data, id: UUID = UUID(), device: String = "dev1", extra: [String: Any] = [:]) throws -> String {
        var object: [String: Any] = [
            "app": "app1", "device_id": device, "id": id.uuidString, "type": type, "occurred_at": "2026-11-23T10:00:00Z",
            "data": try JSONSerialization.jsonObject(with: data),
        ]
        for (key, value) in extra { object[key] = value }
        return String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    @Test("append records good lines with their sends, refuses bad ones by line, field and rule, and is idempotent")
    func appendsAndRefuses() async throws {
        let database = try await TestDatabase.create()
        defer { database.drop() }
        let device = DeviceContext(platform: .android, gaid: "38400000-8CF0-11BD-B23E-10B96E40000D", limitAdTracking: false,
                                   ip: "198.51.100.4",
                                   userAgent: UserAgentParts(appName: "App", appVersion: "2.0", osName: "Android", osVersion: "14",
                                                             locale: "en_US", deviceModel: "Pixel 8", build: "UQ1A"),
                                   osVersion: "14", appVersion: "2.0", bundleID: "com.example.app")
        let open = try EventCatalog.standard.encode(FirstOpen(appID: try AppID("app1"), device: device))
        let session = try EventCatalog.standard.encode(SessionStarted(device: device))
        let openID = UUID()
        let lines = [
            try Self.line(type: "FirstOpen", data: open, id: openID),
            try Self.line(type: "SessionStarted", data: session),
            "this is not json",
            try Self.line(type: "NoSuchEvent", data: session),
            try Self.line(type: "SessionStarted", data: Data(#"{"device": {"platform": "windows"}}"#.utf8)),
            try Self.line(type: "FirstOpen", data: open, id: openID),  // the same fact again: a duplicate, nothing new
        ]
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("append-\(UUID()).jsonl")
        try Data(lines.joined(separator: "\n").utf8).write(to: input)
        defer { try? FileManager.default.removeItem(at: input) }

        let result = try await LedgerProcess.runDetached(
            ["append", "--json", "--database-url", database.conninfo], stdin: input)
        #expect(result.status == 10, "\(result.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout)")
        #expect(summary["accepted"] as? Int == 3)
        #expect(summary["duplicates"] as? Int == 1)
        let refused = try #require(summary["refused"] as? [[String: Any]])
        try #require(refused.map { $0["line"] as? Int } == [3, 4, 5])
        #expect(refused[0]["rule"] as? String == "json_object")
        #expect(refused[1]["field"] as? String == "type")
        #expect((refused[2]["field"] as? String)?.hasPrefix("device") == true)

        let pool = PostgresPool(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        defer { pool.close() }
        let facts = try await pool.query("SELECT count(*) FROM events WHERE stream_id = 'device-app1/dev1'").single().decode(Int.self, at: 0)
        #expect(facts == 2)
        let sends = try await pool.query("SELECT count(*) FROM events WHERE event_type = 'SendRequested'").single().decode(Int.self, at: 0)
        #expect(sends == 4)  // Google and Branch for the first open and for the session (Android: no Apple, no Singular)
    }

    /// Issue 10: postbacks also arrive through `ledger append`, kept byte for byte (Apple's v4.0
    /// documentation example, which verifies); a repeat is a duplicate; a malformed one is
    /// refused and still kept as a rejected postback.
    @Test("append ingests SKAN postbacks: kept as received, verified, deduplicated")
    func appendsPostbacks() async throws {
        let database = try await TestDatabase.create()
        defer { database.drop() }
        let raw = #"{"version": "4.0", "ad-network-id": "com.example", "source-identifier": "5239", "app-id": 525463029, "#
            + #""transaction-id": "6aafb7a5-0170-41b5-bbe4-fe71dedf1e30", "redownload": false, "source-domain": "example.com", "#
            + #""fidelity-type": 1, "did-win": true, "conversion-value": 63, "postback-sequence-index": 0, "#
            + #""attribution-signature": "MEUCIGRmSMrqedNu6uaHyhVcifs118R5z/AB6cvRaKrRRHWRAiEAv96ne3dKQ5kJpbsfk4eYiePmrZUU6sQmo+7zfP/1Bxo="}"#
        func line(_ postback: String) throws -> String {
            String(decoding: try JSONSerialization.data(withJSONObject: [
                "app": "525463029", "network": "example-network", "skan_postback": postback,
            ]), as: UTF8.self)
        }
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("postbacks-\(UUID()).jsonl")
        try Data([try line(raw), try line(raw), try line(#"{"version": "4.0""#)].joined(separator: "\n").utf8).write(to: input)
        defer { try? FileManager.default.removeItem(at: input) }
        let result = try await LedgerProcess.runDetached(["append", "--json", "--database-url", database.conninfo], stdin: input)
        #expect(result.status == 10, "\(result.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout)")
        #expect(summary["accepted"] as? Int == 2)
        let refused = try #require(summary["refused"] as? [[String: Any]])
        #expect(refused.map { $0["line"] as? Int } == [3])
        let pool = PostgresPool(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        defer { pool.close() }
        let stored = try await pool.query(
            "SELECT count(*) FROM events WHERE event_type = 'SKANPostbackReceived'").single().decode(Int.self, at: 0)
        #expect(stored == 3)  // the postback, its duplicate record, and the refused input kept as received
        let exact = try await pool.query(
            "SELECT count(*) FROM events WHERE event_type = 'SKANPostbackReceived' AND data->>'raw' = \(raw)").single()
            .decode(Int.self, at: 0)
        #expect(exact == 2)
    }

    /// Apple AdAttributionKit's example stanza ("Identifying the parameters in a postback", signed
    /// with the developer-settings key of "Verifying a postback") through an `aak_postback` line:
    /// refused while the app does not allow development keys, taken once the apps file allows them.
    @Test("append ingests AdAttributionKit postbacks; development keys only where the apps file allows them")
    func appendsAAKPostbacks() async throws {
        let database = try await TestDatabase.create()
        defer { database.drop() }
        let stanza = #"{"jws-string": "eyJraWQiOiJhcHBsZS1kZXZlbG9wbWVudC1pZGVudGlmaWVyXC8xIiwiYWxnIjoiRVMyNTYifQ.eyJwb3N0YmFjay1pZGVudGlmaWVyIjoiODU1NDZFQjctRkQzOS00NEJDLTg5OTAtQzk4QTRBQzM2QTQ5IiwicHVibGlzaGVyLWl0ZW0taWRlbnRpZmllciI6MCwibWFya2V0cGxhY2UtaWRlbnRpZmllciI6ImNvbS5hcHBsZS5BcHBTdG9yZSIsImltcHJlc3Npb24tdHlwZSI6ImFwcC1pbXByZXNzaW9uIiwiYWQtbmV0d29yay1pZGVudGlmaWVyIjoiZGV2ZWxvcG1lbnQuYWRhdHRyaWJ1dGlvbmtpdCIsImRpZC13aW4iOnRydWUsInBvc3RiYWNrLXNlcXVlbmNlLWluZGV4IjowLCJjb252ZXJzaW9uLXR5cGUiOiJyZS1lbmdhZ2VtZW50Iiwic291cmNlLWlkZW50aWZpZXIiOiIxMjM0IiwiYWR2ZXJ0aXNlZC1pdGVtLWlkZW50aWZpZXIiOjEwNzM4MDI3NzU2fQ.bAdNwKd6OfHK9tofvjjua4X_JPcFTxXPQSspD9gZkinw97pY7R1aI-LSjl-oxZZF3_K2H5JK5TSEBee4_1U4oQ", "conversion-value": 24}"#
        let line = String(decoding: try JSONSerialization.data(withJSONObject: [
            "app": "10738027756", "network": "example-network", "aak_postback": stanza,
        ]), as: UTF8.self)
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("aak-\(UUID()).jsonl")
        try Data(line.utf8).write(to: input)
        let apps = FileManager.default.temporaryDirectory.appendingPathComponent("apps-\(UUID()).json")
        try Data(#"{"apps": {"10738027756": {"apple_postbacks": {"development_keys": true}}}}"#.utf8).write(to: apps)
        defer {
            try? FileManager.default.removeItem(at: input)
            try? FileManager.default.removeItem(at: apps)
        }
        let refused = try await LedgerProcess.runDetached(["append", "--json", "--database-url", database.conninfo], stdin: input)
        #expect(refused.status == 10, "\(refused.stderr)")
        #expect(refused.stdout.contains("production_key_only") && refused.stdout.contains("jws-string.header.kid"))
        let taken = try await LedgerProcess.runDetached(
            ["append", "--json", "--database-url", database.conninfo, "--apps-file", apps.path], stdin: input)
        #expect(taken.status == 0, "\(taken.stdout) \(taken.stderr)")
        let pool = PostgresPool(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        defer { pool.close() }
        let stored = try await pool.query(
            "SELECT count(*) FROM events WHERE event_type = 'AAKPostbackReceived' AND data->>'raw' = \(stanza)").single()
            .decode(Int.self, at: 0)
        #expect(stored == 1)
    }
}
