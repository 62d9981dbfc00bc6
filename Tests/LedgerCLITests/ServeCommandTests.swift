import Foundation
import Testing

/// `ledger serve` refuses at start-up what would be unsafe to serve, with exit code 64.
@Suite struct ServeCommandTests {
    @Test func aNonLoopbackHostNeedsInsecureListen() async throws {
        // An address this machine does not have, and no database: were the host accepted, the
        // server would fail to bind rather than serve.
        let result = try await LedgerProcess.runDetached(["serve", "--host", "192.0.2.1", "--port", "0", "--no-projections"],
                                                         environment: ["LEDGER_API_KEYS": "{}", "LEDGER_DATABASE_URL": "host=/nonexistent"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--insecure-listen"), "\(result.stderr)")
        #expect(result.stderr.contains("not a loopback address"))
        #expect(result.stderr.contains("no TLS"))
    }

    @Test func anEventStreamHeartbeatMustBePositive() async throws {
        let result = try await LedgerProcess.runDetached(["serve", "--port", "0", "--no-projections", "--event-stream-heartbeat", "0"],
                                                         environment: ["LEDGER_API_KEYS": "{}", "LEDGER_DATABASE_URL": "host=/nonexistent"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--event-stream-heartbeat must be more than 0"), "\(result.stderr)")
    }

    @Test func oneKeyDigestForTwoAppsIsRefused() async throws {
        let digest = String(repeating: "ab", count: 32)
        // An address this machine does not have: were the keys accepted, binding would fail
        // rather than serve.
        let result = try await LedgerProcess.runDetached(
            ["serve", "--host", "192.0.2.1", "--insecure-listen", "--port", "0", "--no-projections"],
            environment: [
                "LEDGER_API_KEYS": #"{"com.example.a": "\#(digest)", "com.example.b": ["\#(digest)"]}"#,
                "LEDGER_DATABASE_URL": "host=/nonexistent",
            ])
        #expect(result.status == 64)
        #expect(result.stderr.contains("'com.example.a' and 'com.example.b' have the same API key digest"), "\(result.stderr)")
        #expect(!result.stderr.contains(digest))
    }
}
