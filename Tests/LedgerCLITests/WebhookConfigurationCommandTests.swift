import Foundation
import Testing

/// `ledger worker` and `ledger serve` refuse an apps file whose webhook endpoint breaks a rule
/// (docs/webhooks.md, "Configuration"): exit 64, the key path and the rule, never the secret.
@Suite struct WebhookConfigurationCommandTests {
    @Test func serveAndWorkerRefuseAPlainHTTPEndpointNamingItsKeyPathAndRule() async throws {
        let folder = try AppsFileReloadTests.directory()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("apps.json")
        try Data(#"""
            {"apps": {"com.example.game": {"webhooks": [
              {"name": "backend", "url": "http://hooks.example.com/ledger", "secret": {"env": "GAME_WEBHOOK_SECRET"}}]}}}
            """#.utf8).write(to: file)
        let environment = ["LEDGER_DATABASE_URL": "host=/nonexistent", "GAME_WEBHOOK_SECRET": "whsec-SECRETVALUE"]
        for arguments in [["serve", "--port", "0", "--no-projections"], ["worker"]] {
            let result = try await LedgerProcess.runDetached(arguments + ["--apps-file", file.path], environment: environment)
            #expect(result.status == 64, "\(arguments[0]): \(result.stderr)")
            #expect(result.stderr.contains(#"apps."com.example.game".webhooks[0].url"#), "\(result.stderr)")
            #expect(result.stderr.contains("https_only"), "\(result.stderr)")
            #expect(!result.stderr.contains("SECRETVALUE"), "\(result.stderr)")
        }
    }
}
