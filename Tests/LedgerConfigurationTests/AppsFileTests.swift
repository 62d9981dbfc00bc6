import Foundation
import LedgerConfiguration
import LedgerDecisions
import LedgerDispatch
import LedgerDomain
import LedgerHTTPAPI
import LedgerProviders
import Testing

/// The apps file parsed strictly: the contract's shape, and every start-up refusal naming the
/// app, the key path and the rule.
@Suite("Apps file")
struct AppsFileTests {
    static let gameDigest = APIKeys.digest(of: "game-api-key")
    static let otherDigest = APIKeys.digest(of: "other-api-key")

    /// The variables the contract's example names, with made-up values.
    static let environment = [
        "GAME_GOOGLE_DEV_TOKEN": "game-dev-token-SECRET", "GAME_BRANCH_KEY": "key_live_game-SECRET",
        "GAME_SINGULAR_SDK_KEY": "game-sdk-key-SECRET",
    ]

    /// A file holding `text`, removed when the test ends by the system's temporary directory policy.
    static func secretFile(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-secret-\(UUID().uuidString)").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The contract's example, its Branch secret in `secretPath`.
    static func contractExample(secretPath: String) -> String {
        """
        {"defaults": {"providers": {"apple_adservices": {}}, "decision_deadline_seconds": 93600},
         "apps": {
          "com.example.game": {
            "api_key_digests": ["\(gameDigest)"],
            "providers": {
              "google":   {"dev_token": {"env": "GAME_GOOGLE_DEV_TOKEN"}, "link_id": "31FF8D67E5BB5DD5029DCC2734C2F884"},
              "apple_adservices": {},
              "branch":   {"key": {"env": "GAME_BRANCH_KEY"}, "secret": {"file": "\(secretPath)"}},
              "singular": {"sdk_key": {"env": "GAME_SINGULAR_SDK_KEY"}}},
            "windows": {"google_click": 604800},
            "awaits_iad_details": false}}}
        """
    }

    static func parse(_ json: String, environment: [String: String] = environment) throws(AppsFileError) -> AppsFile {
        try AppsFile(json: Data(json.utf8), environment: environment)
    }

    /// The error parsing `json` throws.
    static func refusal(_ json: String, environment: [String: String] = environment) throws -> AppsFileError {
        do {
            _ = try parse(json, environment: environment)
        } catch {
            return error
        }
        Issue.record("the apps file was accepted")
        throw CancellationError()
    }

    @Test func theContractsExampleParsesIntoEachAppsCredentialsAndSettings() throws {
        let secretPath = try Self.secretFile("game-branch-secret-SECRET\n")
        let file = try Self.parse(Self.contractExample(secretPath: secretPath))
        let game = try #require(file.apps["com.example.game"])
        #expect(game.apiKeyDigests == [Self.gameDigest])
        let providers = try #require(game.providers)
        #expect(providers.enabled == [.google, .appleAdServices, .branch, .singular])
        #expect(providers.google?.devToken.revealed() == "game-dev-token-SECRET")
        #expect(providers.google?.linkID == "31FF8D67E5BB5DD5029DCC2734C2F884")
        #expect(providers.branch?.key.revealed() == "key_live_game-SECRET")
        // A secret file's trailing newline is not part of the secret.
        #expect(providers.branch?.secret.revealed() == "game-branch-secret-SECRET")
        #expect(providers.branch?.identityKey == nil)
        #expect(providers.singular?.sdkKey.revealed() == "game-sdk-key-SECRET")
        #expect(game.windows == [.googleClick: 604_800])
        #expect(game.awaitsIAdDetails == false)
        #expect(file.defaults.decisionDeadline == 93_600)
        #expect(file.defaults.providers?.enabled == [.appleAdServices])
        #expect(file.warnings.isEmpty)
    }

    @Test func aSecretNeverShowsItsValue() throws {
        let secretPath = try Self.secretFile("game-branch-secret-SECRET")
        let file = try Self.parse(Self.contractExample(secretPath: secretPath))
        let providers = try #require(file.apps["com.example.game"]?.providers)
        var dumped = ""
        dump(providers, to: &dumped)
        let printed = [String(describing: providers), String(reflecting: providers), dumped,
                       "\(providers.branch!.secret)", String(reflecting: providers.google!.devToken)]
        for text in printed {
            #expect(!text.contains("SECRET"), "\(text)")
        }
        #expect("\(providers.branch!.secret)" == "Secret(file \(secretPath))")
    }

    @Test func aLiteralSecretIsAcceptedWithAWarningNamingTheAppAndKeyPathNotTheValue() throws {
        let file = try Self.parse("""
            {"apps": {"com.example.game": {"providers": {"singular": {"sdk_key": "literal-sdk-key-SECRET"}}}}}
            """)
        #expect(file.apps["com.example.game"]?.providers?.singular?.sdkKey.revealed() == "literal-sdk-key-SECRET")
        let warning = try #require(file.warnings.first)
        #expect(warning.app == "com.example.game")
        #expect(warning.keyPath == #"apps."com.example.game".providers.singular.sdk_key"#)
        #expect(!warning.description.contains("SECRET"))
    }

    // Branch v1/open server-to-server guide: the Live key belongs to production; a test key in an
    // app marked live would send its installs to Branch's test environment.
    @Test func aBranchTestKeyInALiveAppIsRefused() throws {
        let error = try Self.refusal("""
            {"apps": {"com.example.game": {"live": true,
              "providers": {"branch": {"key": "key_test_abc", "secret": {"env": "GAME_BRANCH_KEY"}}}}}}
            """)
        #expect(error.app == "com.example.game")
        #expect(error.keyPath == #"apps."com.example.game".providers.branch.key"#)
        #expect(error.rule == "live_app_live_key")
        // Not live: a test key is what a staging app uses.
        _ = try Self.parse("""
            {"apps": {"com.example.game": {"providers": {"branch": {"key": "key_test_abc", "secret": "s"}}}}}
            """)
        // Live from the defaults counts too.
        let fromDefaults = try Self.refusal("""
            {"defaults": {"live": true},
             "apps": {"com.example.game": {"providers": {"branch": {"key": "key_test_abc", "secret": "s"}}}}}
            """)
        #expect(fromDefaults.rule == "live_app_live_key" && fromDefaults.app == "com.example.game")
    }

    // Google App Conversion Tracking API: a link id binds the developer token to one app; neither
    // may be missing.
    @Test func aGoogleProviderWithoutLinkIDOrDevTokenIsRefused() throws {
        let noLink = try Self.refusal("""
            {"apps": {"com.example.game": {"providers": {"google": {"dev_token": {"env": "GAME_GOOGLE_DEV_TOKEN"}}}}}}
            """)
        #expect(noLink.app == "com.example.game")
        #expect(noLink.keyPath == #"apps."com.example.game".providers.google.link_id"#)
        #expect(noLink.rule == "required")
        let noToken = try Self.refusal("""
            {"apps": {"com.example.game": {"providers": {"google": {"link_id": "31FF8D67E5BB5DD5029DCC2734C2F884"}}}}}
            """)
        #expect(noToken.keyPath == #"apps."com.example.game".providers.google.dev_token"#)
        #expect(noToken.rule == "required")
    }

    @Test func anUnreadableSecretFileOrUnsetVariableIsRefused() throws {
        let missing = "/nonexistent/ledger-secret-\(UUID().uuidString)"
        let file = try Self.refusal("""
            {"apps": {"com.example.game": {"providers": {"singular": {"sdk_key": {"file": "\(missing)"}}}}}}
            """)
        #expect(file.app == "com.example.game")
        #expect(file.keyPath == #"apps."com.example.game".providers.singular.sdk_key"#)
        #expect(file.rule == "file_readable")
        let unset = try Self.refusal("""
            {"apps": {"com.example.game": {"providers": {"singular": {"sdk_key": {"env": "NOT_SET_ANYWHERE"}}}}}}
            """)
        #expect(unset.keyPath == #"apps."com.example.game".providers.singular.sdk_key"#)
        #expect(unset.rule == "env_set")
        #expect(unset.message.contains("NOT_SET_ANYWHERE"))
    }

    @Test func anUnknownProviderOrWindowNameIsRefused() throws {
        let provider = try Self.refusal("""
            {"apps": {"com.example.game": {"providers": {"facebook": {}}}}}
            """)
        #expect(provider.app == "com.example.game")
        #expect(provider.keyPath == #"apps."com.example.game".providers.facebook"#)
        #expect(provider.rule == "known_provider")
        let window = try Self.refusal("""
            {"apps": {"com.example.game": {"windows": {"google_view": 3600}}}}
            """)
        #expect(window.keyPath == #"apps."com.example.game".windows.google_view"#)
        #expect(window.rule == "known_window")
        let key = try Self.refusal("""
            {"apps": {"com.example.game": {"decision_deadline": 3600}}}
            """)
        #expect(key.keyPath == #"apps."com.example.game".decision_deadline"#)
        #expect(key.rule == "known_key")
    }

    @Test func aDigestGivenToTwoAppsIsRefusedInTheFileAndAcrossTheVariables() throws {
        let inFile = try Self.refusal("""
            {"apps": {"com.example.game": {"api_key_digests": ["\(Self.gameDigest)"]},
                      "com.example.other": {"api_key_digests": ["\(Self.otherDigest)", "\(Self.gameDigest)"]}}}
            """)
        #expect(inFile.app == "com.example.other")
        #expect(inFile.keyPath == #"apps."com.example.other".api_key_digests[1]"#)
        #expect(inFile.rule == "one_app_per_key")
        var environment = Self.environment
        environment["LEDGER_API_KEYS"] = #"{"com.example.legacy": "\#(Self.gameDigest)"}"#
        let configuration = ServiceConfiguration(environment: environment, appsFile: try Self.parse("""
            {"apps": {"com.example.game": {"api_key_digests": ["\(Self.gameDigest)"]}}}
            """))
        let error = #expect(throws: ConfigurationError.self) { try configuration.apiKeys() }
        guard case .appsFile(let refusal)? = error else {
            Issue.record("not an apps file error: \(String(describing: error))")
            return
        }
        #expect(refusal.app == "com.example.game" && refusal.rule == "one_app_per_key")
        #expect(refusal.keyPath == #"apps."com.example.game".api_key_digests[0]"#)
        #expect(refusal.message.contains("com.example.legacy"))
    }

    @Test func anInvalidAppIDIsRefused() throws {
        let error = try Self.refusal("""
            {"apps": {"com example game": {}}}
            """)
        #expect(error.app == "com example game")
        #expect(error.keyPath == #"apps."com example game""#)
        #expect(error.rule == "stream_safe_characters")
    }
}
