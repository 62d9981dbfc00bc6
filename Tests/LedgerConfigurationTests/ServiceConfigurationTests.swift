import Foundation
import LedgerConfiguration
import LedgerDecisions
import LedgerDispatch
import LedgerDomain
import LedgerHTTPAPI
import LedgerProviders
import Testing

/// The apps file over the older variables: the documented precedence (app entry, file `defaults`,
/// variables, built-in default), and apps not in the file configured as before.
@Suite("Service configuration precedence")
struct ServiceConfigurationTests {
    static func configuration(_ json: String, environment: [String: String]) throws -> ServiceConfiguration {
        ServiceConfiguration(environment: environment, appsFile: try AppsFile(json: Data(json.utf8), environment: environment))
    }

    static func settingsFile(_ json: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-settings-\(UUID().uuidString).json").path
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func attributionSettingsFollowAppEntryThenDefaultsThenVariablesThenBuiltIn() throws {
        let variables = [
            "LEDGER_ATTRIBUTION_SETTINGS": try Self.settingsFile("""
                {"defaults": {"decision_deadline_seconds": 7200, "awaits_iad_details": true, "windows": {"branch_click": 3600}},
                 "apps": {"com.example.legacy": {"providers": ["branch"], "decision_deadline_seconds": 600}}}
                """)
        ]
        let configuration = try Self.configuration("""
            {"defaults": {"providers": {"apple_adservices": {}}, "decision_deadline_seconds": 93600},
             "apps": {"com.example.game": {"windows": {"google_click": 604800}, "awaits_iad_details": false},
                      "com.example.quiz": {"decision_deadline_seconds": 1800}}}
            """, environment: variables)
        let settings = try configuration.attributionSettings()
        let game = settings.forApp("com.example.game")
        #expect(game.windows.googleClick == 604_800)  // the app's entry
        #expect(game.decisionDeadline == 93_600)  // the file's defaults
        #expect(game.providers == [.appleAdServices])  // the file's defaults
        #expect(game.windows.branchClick == 3600)  // the variables
        #expect(game.windows.appleClick == AttributionWindows().appleClick)  // built in
        #expect(game.awaitsIAdDetails == false)
        #expect(settings.forApp("com.example.quiz").decisionDeadline == 1800)
        #expect(settings.forApp("com.example.quiz").awaitsIAdDetails == true)
        // Apps not in the file: the variables alone, the file's defaults do not reach them.
        #expect(settings.forApp("com.example.legacy").providers == [.branch])
        #expect(settings.forApp("com.example.legacy").decisionDeadline == 600)
        #expect(settings.forApp("com.example.unlisted").decisionDeadline == 7200)
        #expect(settings.forApp("com.example.unlisted").providers == AppAttributionSettings().providers)
    }

    @Test func eachListedAppGetsItsOwnCredentialsAndOthersTheVariables() throws {
        let environment = [
            "LEDGER_GOOGLE_DEV_TOKEN": "variables-token", "LEDGER_GOOGLE_LINK_ID": "VARIABLESLINK",
            "LEDGER_GOOGLE_URL": "http://127.0.0.1:9", "A_TOKEN": "a-token",
        ]
        let configuration = try Self.configuration("""
            {"apps": {"com.example.a": {"providers": {"google": {"dev_token": {"env": "A_TOKEN"}, "link_id": "ALINK"}}},
                      "com.example.b": {"windows": {"google_click": 60}}}}
            """, environment: environment)
        let rules = try configuration.sendRules()
        let a = rules.table.rules(forApp: "com.example.a")
        #expect(a.google?.link.linkID == "ALINK")
        #expect(a.google?.link.devToken == "a-token")
        // Service-wide: the base URL applies to the file's apps too.
        #expect(a.google?.endpoint.port == 9)
        #expect(a.branch == nil && a.singular == nil && a.adServices == nil)
        // Listed without providers anywhere in the file: the variables' providers.
        #expect(rules.table.rules(forApp: "com.example.b").google?.link.linkID == "VARIABLESLINK")
        #expect(rules.table.rules(forApp: "com.example.unlisted").google?.link.linkID == "VARIABLESLINK")
        #expect(rules.table.rules(forApp: nil).google?.link.linkID == "VARIABLESLINK")
    }

    // Branch v1/open server-to-server guide: the Live key belongs to production, also when a live
    // app takes Branch from the variables.
    @Test func aLiveAppWithoutProvidersRefusesABranchTestKeyFromTheVariables() throws {
        let environment = ["LEDGER_BRANCH_KEY": "key_test_abc", "LEDGER_BRANCH_SECRET": "s"]
        let configuration = try Self.configuration("""
            {"apps": {"com.example.live": {"live": true}, "com.example.staging": {}}}
            """, environment: environment)
        let error = #expect(throws: ConfigurationError.self) { try configuration.sendRules() }
        guard case .appsFile(let refusal)? = error else {
            Issue.record("not an apps file error: \(String(describing: error))")
            return
        }
        #expect(refusal.app == "com.example.live" && refusal.rule == "live_app_live_key")
        #expect(refusal.keyPath == #"apps."com.example.live".live"#)
        let staging = try Self.configuration(#"{"apps": {"com.example.staging": {}}}"#, environment: environment)
        #expect(try staging.sendRules().table.rules(forApp: "com.example.staging").branch?.branchKey == "key_test_abc")
    }

    @Test func apiKeysComeFromTheFileAndTheVariablesForOtherApps() throws {
        let gameKey = "game-api-key", legacyKey = "legacy-api-key", replacedKey = "replaced-api-key"
        let environment = [
            "LEDGER_API_KEYS": #"{"com.example.legacy": "\#(APIKeys.digest(of: legacyKey))", "com.example.game": "\#(APIKeys.digest(of: replacedKey))"}"#
        ]
        let keys = try Self.configuration("""
            {"apps": {"com.example.game": {"api_key_digests": ["\(APIKeys.digest(of: gameKey))"]}}}
            """, environment: environment).apiKeys()
        #expect(keys.app(forKey: gameKey)?.rawValue == "com.example.game")
        #expect(keys.app(forKey: legacyKey)?.rawValue == "com.example.legacy")
        // The app's entry replaces what the variables said for it.
        #expect(keys.app(forKey: replacedKey) == nil)
    }

    @Test func withoutAFileTheVariablesAreUsedAsBefore() throws {
        let configuration = try ServiceConfiguration.load(environment: ["LEDGER_BRANCH_KEY": "key_live_x", "LEDGER_BRANCH_SECRET": "s"])
        #expect(configuration.appsFile == nil)
        let rules = try configuration.sendRules()
        #expect(rules.table.apps.isEmpty)
        #expect(rules.table.others.branch?.branchKey == "key_live_x")
        #expect(rules.enabledForOthers == ["apple_adservices", "branch"])
    }
}
