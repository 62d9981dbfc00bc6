import AsyncHTTPClient
import Foundation
import LedgerTestKit
import NIOCore
import NIOHTTP1
import Testing

/// The apps file through the real processes: start-up refusals exit 64 naming the app, the key
/// path and the rule; `SIGHUP` swaps a good file in without a restart and refuses a bad one,
/// keeping the running configuration.
@Suite("Apps file in ledger serve and ledger worker", .serialized)
struct AppsFileReloadTests {
    static let keyA = "alpha-api-key-not-a-real-credential"
    static let keyB = "beta-api-key-not-a-real-credential"

    /// A scratch directory for one test's files.
    static func directory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-apps-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// `ledger serve --hash-key`'s digest of `key`: what the apps file holds.
    static func digest(_ key: String) async throws -> String {
        let input = try directory().appendingPathComponent("key")
        try Data(key.utf8).write(to: input)
        return try await LedgerProcess.runDetached(["serve", "--hash-key"], stdin: input).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The status of reading a device of `app` with `key`.
    static func readStatus(_ baseURL: String, app: String, key: String) async throws -> Int {
        var request = HTTPClientRequest(url: "\(baseURL)/v1/apps/\(app)/devices/dev1/state")
        request.headers.add(name: "Authorization", value: "Bearer \(key)")
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        _ = try await response.body.collect(upTo: 1_048_576)
        return Int(response.status.code)
    }

    /// How often `line` appears in `log`.
    static func count(_ line: String, in log: String) -> Int {
        log.components(separatedBy: line).count - 1
    }

    @Test func serveAndWorkerRefuseABadAppsFileAtStartWithAppKeyPathAndRule() async throws {
        let folder = try Self.directory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("apps.json")
        try Data(#"""
            {"apps": {"com.example.game": {"live": true,
              "providers": {"branch": {"key": {"env": "GAME_BRANCH_KEY"}, "secret": {"env": "GAME_BRANCH_SECRET"}}}}}}
            """#.utf8).write(to: file)
        let environment = [
            "LEDGER_DATABASE_URL": "host=/nonexistent", "GAME_BRANCH_KEY": "key_test_SECRETVALUE", "GAME_BRANCH_SECRET": "SECRETVALUE2",
        ]
        for arguments in [["serve", "--port", "0", "--no-projections"], ["worker"]] {
            let result = try await LedgerProcess.runDetached(arguments + ["--apps-file", file.path], environment: environment)
            #expect(result.status == 64, "\(arguments[0]): \(result.stderr)")
            #expect(result.stderr.contains(#"apps."com.example.game".providers.branch.key"#), "\(result.stderr)")
            #expect(result.stderr.contains("live_app_live_key"), "\(result.stderr)")
            #expect(!result.stderr.contains("SECRETVALUE"), "\(result.stderr)")
        }
        // LEDGER_APPS_FILE names the file just as well.
        let named = try await LedgerProcess.runDetached(["worker"], environment: environment.merging(["LEDGER_APPS_FILE": file.path]) { $1 })
        #expect(named.status == 64 && named.stderr.contains("live_app_live_key"), "\(named.stderr)")
    }

    @Test(.database, .timeLimit(.minutes(3)))
    func serveReloadsAGoodFileOnSIGHUPAndKeepsTheRunningOneForABadFile() async throws {
        try await TestDatabase.with { database in
            let folder = try Self.directory()
            defer { try? FileManager.default.removeItem(at: folder) }
            let file = folder.appendingPathComponent("apps.json")
            let (digestA, digestB) = (try await Self.digest(Self.keyA), try await Self.digest(Self.keyB))
            try Data(#"{"apps": {"com.example.alpha": {"api_key_digests": ["\#(digestA)"]}}}"#.utf8).write(to: file)
            let logPath = folder.appendingPathComponent("serve.log").path
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: LedgerProcess.binary)
            process.arguments = ["serve", "--port", "0", "--no-projections", "--seal-every", "0", "--database-url", database.conninfo,
                                 "--apps-file", file.path]
            var environment = ProcessInfo.processInfo.environment
            for name in ["LEDGER_DATABASE_URL", "LEDGER_API_KEYS", "LEDGER_API_KEYS_FILE", "LEDGER_APPS_FILE"] {
                environment.removeValue(forKey: name)
            }
            environment["LEDGER_LOG_FORMAT"] = "text"
            process.environment = environment
            process.standardOutput = FileHandle.nullDevice
            process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
            try process.run()
            defer { if process.isRunning { process.terminate() } }
            func log() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
            var port: String?
            _ = try await waitUntil(timeout: .seconds(60)) {
                guard let range = log().range(of: "listening on http://127.0.0.1:") else { return !process.isRunning }
                port = String(log()[range.upperBound...].prefix { $0.isNumber })
                return true
            }
            let baseURL = "http://127.0.0.1:\(try #require(port, "ledger serve did not start: \(log())"))"
            #expect(try await Self.readStatus(baseURL, app: "com.example.alpha", key: Self.keyA) != 401)
            #expect(try await Self.readStatus(baseURL, app: "com.example.beta", key: Self.keyB) == 401)

            // A good file adds an app: its key works without a restart.
            try Data(#"""
                {"apps": {"com.example.alpha": {"api_key_digests": ["\#(digestA)"]},
                          "com.example.beta": {"api_key_digests": ["\#(digestB)"]}}}
                """#.utf8).write(to: file)
            kill(process.processIdentifier, SIGHUP)
            #expect(try await waitUntil(timeout: .seconds(30)) { Self.count("configuration reloaded", in: log()) == 1 }, "\(log())")
            #expect(try await Self.readStatus(baseURL, app: "com.example.beta", key: Self.keyB) != 401)

            // A bad file is refused and logged; the running configuration stays.
            try Data(#"""
                {"apps": {"com.example.alpha": {"api_key_digests": ["\#(digestA)"], "providers": {"facebook": {}}}}}
                """#.utf8).write(to: file)
            kill(process.processIdentifier, SIGHUP)
            #expect(try await waitUntil(timeout: .seconds(30)) { Self.count("configuration refused", in: log()) == 1 }, "\(log())")
            #expect(log().contains(#"apps."com.example.alpha".providers.facebook"#) && log().contains("known_provider"), "\(log())")
            #expect(process.isRunning)
            #expect(try await Self.readStatus(baseURL, app: "com.example.beta", key: Self.keyB) != 401)
            #expect(try await Self.readStatus(baseURL, app: "com.example.alpha", key: Self.keyA) != 401)
            process.terminate()
            _ = try await waitUntil(timeout: .seconds(30)) { !process.isRunning }
        }
    }

    @Test(.database, .timeLimit(.minutes(3)))
    func workerReloadsOnSIGHUPAndKeepsTheRunningConfigurationForABadFile() async throws {
        try await TestDatabase.with { database in
            let folder = try Self.directory()
            defer { try? FileManager.default.removeItem(at: folder) }
            let file = folder.appendingPathComponent("apps.json")
            try Data(#"{"apps": {"com.example.alpha": {"providers": {"apple_adservices": {}}}}}"#.utf8).write(to: file)
            let logPath = folder.appendingPathComponent("worker.log").path
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: LedgerProcess.binary)
            process.arguments = ["worker", "--seal-every", "0", "--database-url", database.conninfo, "--apps-file", file.path]
            var environment = ProcessInfo.processInfo.environment
            environment.removeValue(forKey: "LEDGER_DATABASE_URL")
            environment["ALPHA_SDK_KEY"] = "alpha-sdk-SECRETVALUE"
            environment["LEDGER_LOG_FORMAT"] = "text"
            process.environment = environment
            process.standardOutput = FileHandle.nullDevice
            process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
            try process.run()
            defer { if process.isRunning { process.terminate() } }
            func log() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
            #expect(try await waitUntil(timeout: .seconds(60)) { log().contains("providers configured: com.example.alpha: apple_adservices") },
                    "\(log())")

            try Data(#"{"apps": {"com.example.alpha": {"providers": {"singular": {"sdk_key": {"env": "ALPHA_SDK_KEY"}}}}}}"#.utf8)
                .write(to: file)
            kill(process.processIdentifier, SIGHUP)
            #expect(try await waitUntil(timeout: .seconds(30)) { Self.count("configuration reloaded", in: log()) == 1 }, "\(log())")

            try Data(#"{"apps": {"com.example.alpha": {"providers": {"singular": {"sdk_key": {"env": "UNSET_VARIABLE"}}}}}}"#.utf8)
                .write(to: file)
            kill(process.processIdentifier, SIGHUP)
            #expect(try await waitUntil(timeout: .seconds(30)) { Self.count("configuration refused", in: log()) == 1 }, "\(log())")
            #expect(log().contains(#"apps."com.example.alpha".providers.singular.sdk_key"#) && log().contains("env_set"), "\(log())")
            #expect(!log().contains("SECRETVALUE"))
            #expect(process.isRunning)
            process.terminate()
            #expect(try await waitUntil(timeout: .seconds(30)) { !process.isRunning })
            #expect(process.terminationStatus == 0, "\(log())")
        }
    }
}
