import AsyncHTTPClient
import Foundation
import LedgerDomain
import LedgerFakeProviders
import LedgerProviders
import LedgerTestKit
import NIOCore
import NIOHTTP1
import Testing

/// `LEDGER_LOG_FORMAT=json` on the real `ledger serve` and `ledger worker` processes: every line
/// of their stderr is one JSON object with `time`, `level`, `logger` and `message`, and none holds
/// a configured secret, a personal value of the facts they handled, or SQL — also on the paths
/// that log failures (a refused request, a provider that cannot be reached), at the debug level.
@Suite("JSON logs of ledger serve and ledger worker", .database, .serialized)
struct JSONLogTests {
    static let app = "com.example.jsonlog"
    static let apiKey = "jsonlog-api-key-PLAINTEXT-5f0c2a"
    static let credentials = FakeProviders.Credentials(
        googleDevToken: "jsonlog-dev-token-SECRET-91d3", googleLinkID: "C0FFEE00C0FFEE00C0FFEE00C0FFEE00",
        branchKey: "key_live_jsonlog_7a41", branchSecret: "jsonlog-branch-secret-3e8b")
    /// The personal values of the fact: the Android advertising id (Google App Conversion
    /// Tracking API: rdid), the device's IP and user agent parts, and the app's install id.
    static let gaid = "38400000-8CF0-11BD-B23E-10B96E4EF00D"
    static let ip = "203.0.113.77"
    static let deviceModel = "PixelJsonLogModel"
    static let deviceID = "install-jsonlog-9c2e5b7a41"
    /// The second device's, whose fact `ledger append` records.
    static let appendedGAID = "38400000-8CF0-11BD-B23E-10B96E4EF0AA"
    static let appendedDeviceID = "install-jsonlog-appended-42"

    /// An Android first open of `device` as the HTTP API and `ledger append` take it.
    static func firstOpen(id: UUID, device deviceID: String = deviceID, gaid: String = gaid) throws -> [String: Any] {
        let device = DeviceContext(
            platform: .android, gaid: gaid, limitAdTracking: false, ip: ip,
            userAgent: UserAgentParts(appName: "JsonLogApp", appVersion: "2.0", osName: "Android", osVersion: "14", locale: "en_US",
                                      deviceModel: deviceModel, build: "UQ1A"),
            osVersion: "14", appVersion: "2.0", bundleID: app)
        let data = try EventCatalog.standard.encode(FirstOpen(appID: try AppID(app), device: device))
        return [
            "id": id.uuidString, "type": "FirstOpen", "device_id": deviceID, "occurred_at": "2026-11-23T10:00:00Z",
            "data": try JSONSerialization.jsonObject(with: data),
        ]
    }

    static func firstOpenBody(id: UUID) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: ["events": [try firstOpen(id: id)]], options: [.sortedKeys]),
               as: UTF8.self)
    }

    static func request(_ method: HTTPMethod, _ url: String, key: String, body: String? = nil) async throws -> (Int, String) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(key)")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        let answer = try await response.body.collect(upTo: 1_048_576)
        return (Int(response.status.code), String(buffer: answer))
    }

    /// Every value that must never reach a log line: the secrets the processes were configured
    /// with, the fact's personal values (in either case), and SQL.
    static var forbidden: [String] {
        [apiKey, credentials.googleDevToken, credentials.googleLinkID, credentials.branchKey, credentials.branchSecret,
         gaid, appendedGAID, ip, deviceModel, deviceID, appendedDeviceID, "JsonLogApp",
         "INSERT INTO", "SELECT ", "UPDATE ", "DELETE FROM"]
    }

    /// The records of `stderr`, each checked: one JSON object per line with the four members as
    /// strings, no forbidden value anywhere in the line.
    static func records(_ stderr: String, of process: String) throws -> [[String: Any]] {
        let lines = stderr.split(separator: "\n", omittingEmptySubsequences: false).dropLast(stderr.hasSuffix("\n") ? 1 : 0)
        return try lines.map { line in
            let parsed = try? JSONSerialization.jsonObject(with: Data(line.utf8))
            let object = try #require(parsed as? [String: Any], "\(process): not a JSON object: \(line)")
            for key in ["time", "level", "logger", "message"] {
                #expect(object[key] is String, "\(process): no string '\(key)': \(line)")
            }
            let time = try #require(object["time"] as? String)
            #expect(time.hasSuffix("Z") && time.contains("."), "\(process): time not RFC 3339 UTC with fractions: \(line)")
            for value in forbidden {
                #expect(!line.localizedCaseInsensitiveContains(value), "\(process) logged '\(value)': \(line)")
            }
            return object
        }
    }

    @Test func anUnknownLogFormatIsRefusedBeforeAnyCommandRuns() async throws {
        let result = try await LedgerProcess.runDetached(["cluster", "status"], environment: ["LEDGER_LOG_FORMAT": "logfmt"])
        #expect(result.status == 64)
        #expect(result.stderr == "ledger: error: LEDGER_LOG_FORMAT: json_or_text: 'logfmt' is not a log format; use json or text\n")
        #expect(result.stdout.isEmpty)
    }

    @Test(.timeLimit(.minutes(3)))
    func everyLineIsAJSONObjectWithoutSecretsPersonalValuesOrSQL() async throws {
        try await TestDatabase.with { database in
            try await withCheckedFakeProviders(configuration: .init(credentials: Self.credentials)) { fakes in
                let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-json-logs-\(UUID().uuidString.prefix(8))")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: folder) }
                let keyFile = folder.appendingPathComponent("key")
                try Data(Self.apiKey.utf8).write(to: keyFile)
                let hashed = try LedgerProcess.run(["serve", "--hash-key"], stdin: keyFile)
                let digest = hashed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                #expect(hashed.status == 0 && digest.count == 64, "\(hashed.stderr)")
                let appsFile = folder.appendingPathComponent("apps.json")
                try Data(#"""
                    {"apps": {"\#(Self.app)": {"api_key_digests": ["\#(digest)"], "providers": {
                        "google": {"dev_token": {"env": "JSONLOG_GOOGLE_DEV_TOKEN"}, "link_id": "\#(Self.credentials.googleLinkID)"},
                        "branch": {"key": {"env": "JSONLOG_BRANCH_KEY"}, "secret": {"env": "JSONLOG_BRANCH_SECRET"}}}}}}
                    """#.utf8).write(to: appsFile)
                // Branch at a port nothing listens on: its sends fail, and their failure is logged.
                let environment = [
                    "JSONLOG_GOOGLE_DEV_TOKEN": Self.credentials.googleDevToken, "JSONLOG_BRANCH_KEY": Self.credentials.branchKey,
                    "JSONLOG_BRANCH_SECRET": Self.credentials.branchSecret,
                    "LEDGER_GOOGLE_URL": "http://127.0.0.1:\(fakes.port)", "LEDGER_BRANCH_URL": "http://127.0.0.1:1",
                    "LEDGER_APPS_FILE": appsFile.path, "LEDGER_LOG_FORMAT": "json", "LEDGER_LOG_LEVEL": "debug",
                ]

                // ledger serve: a fact appended, the device's state read, a refused batch.
                let serveLog = folder.appendingPathComponent("serve.log")
                _ = FileManager.default.createFile(atPath: serveLog.path, contents: nil)
                let serve = Process()
                serve.executableURL = URL(fileURLWithPath: LedgerProcess.binary)
                serve.arguments = ["serve", "--port", "0", "--seal-every", "0", "--database-url", database.conninfo]
                var serveEnvironment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
                serveEnvironment.removeValue(forKey: "LEDGER_DATABASE_URL")
                serve.environment = serveEnvironment
                serve.standardOutput = FileHandle.nullDevice
                serve.standardError = try FileHandle(forWritingTo: serveLog)
                try serve.run()
                defer { if serve.isRunning { serve.terminate() } }
                func serveText() -> String { (try? String(contentsOf: serveLog, encoding: .utf8)) ?? "" }
                var port: String?
                _ = try await waitUntil(timeout: .seconds(60)) {
                    let text = serveText()
                    guard let range = text.range(of: "listening on http://127.0.0.1:") else { return !serve.isRunning }
                    port = String(text[range.upperBound...].prefix { $0.isNumber })
                    return true
                }
                let base = "http://127.0.0.1:\(try #require(port, "ledger serve did not start: \(serveText())"))"
                let (appended, answer) = try await Self.request(.POST, base + "/v1/apps/\(Self.app)/events", key: Self.apiKey,
                                                                body: try Self.firstOpenBody(id: UUID()))
                #expect(appended == 200, "\(answer)")
                let (read, state) = try await Self.request(.GET, base + "/v1/apps/\(Self.app)/devices/\(Self.deviceID)/state", key: Self.apiKey)
                #expect(read == 200, "\(state)")
                let refusedBody = try Self.firstOpenBody(id: UUID()).replacingOccurrences(of: "\"FirstOpen\"", with: "\"NoSuchFact\"")
                let (refused, _) = try await Self.request(.POST, base + "/v1/apps/\(Self.app)/events", key: Self.apiKey, body: refusedBody)
                #expect(refused == 400)
                let (unauthorized, _) = try await Self.request(.GET, base + "/v1/apps/\(Self.app)/devices/\(Self.deviceID)/state",
                                                               key: "not-" + Self.apiKey)
                #expect(unauthorized == 401)
                serve.terminate()
                serve.waitUntilExit()

                // ledger append: a second device's first open, one line.
                var line = try Self.firstOpen(id: UUID(), device: Self.appendedDeviceID, gaid: Self.appendedGAID)
                line["app"] = Self.app
                let facts = folder.appendingPathComponent("facts.jsonl")
                try JSONSerialization.data(withJSONObject: line, options: [.sortedKeys]).write(to: facts)
                let append = try await LedgerProcess.runDetached(["append", "--database-url", database.conninfo],
                                                                 environment: environment, stdin: facts)
                #expect(append.status == 0, "\(append.stdout) \(append.stderr)")

                // ledger worker: Google answers (the fake checks the credentials), Branch cannot be reached.
                let worker = try await LedgerProcess.runDetached(
                    ["worker", "--drain", "--seal-every", "0", "--database-url", database.conninfo], environment: environment)
                #expect(worker.status == 0, "\(worker.stderr)")
                #expect(fakes.google.requests.count == 2)

                let serveRecords = try Self.records(serveText(), of: "ledger serve")
                let appendRecords = try Self.records(append.stderr, of: "ledger append")
                let workerRecords = try Self.records(worker.stderr, of: "ledger worker")
                #expect(serveRecords.contains { ($0["message"] as? String)?.hasPrefix("listening on") == true }, "\(serveText())")
                #expect(serveRecords.contains { $0["message"] as? String == "appended a batch" }, "\(serveText())")
                #expect(appendRecords.contains { $0["message"] as? String == "recorded a device fact" }, "\(append.stderr)")
                #expect(workerRecords.contains { ($0["message"] as? String)?.hasPrefix("providers configured") == true }, "\(worker.stderr)")
                #expect(workerRecords.contains { $0["message"] as? String == "provider request failed" }, "\(worker.stderr)")
            }
        }
    }
}
