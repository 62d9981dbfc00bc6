import Foundation
import LedgerConfiguration
import LedgerDecisions
import LedgerDispatch
import LedgerDomain
import LedgerProviders
import Testing

/// An app's webhook endpoints in the apps file (docs/webhooks.md, "Configuration"): what the
/// decider and the worker each get from them, and every refusal at load or reload naming the key
/// path and the rule — never a secret's value.
@Suite("Webhook endpoints in the apps file")
struct WebhookConfigurationTests {
    static let environment = ["GAME_HOOK_SECRET": "whsec-game-SECRET-1", "GAME_HOOK_OLD_SECRET": "whsec-game-SECRET-0"]

    static func configuration(_ json: String) throws -> ServiceConfiguration {
        ServiceConfiguration(environment: environment, appsFile: try AppsFile(json: Data(json.utf8), environment: environment))
    }

    /// The error loading `json` throws.
    static func refusal(_ json: String) throws -> AppsFileError {
        do {
            _ = try AppsFile(json: Data(json.utf8), environment: environment)
        } catch {
            return error
        }
        Issue.record("the apps file was accepted")
        throw CancellationError()
    }

    /// An apps file whose one app has one endpoint with `fields` (JSON members after `"name"`).
    static func file(endpoint fields: String) -> String {
        """
        {"apps": {"com.example.game": {"webhooks": [{"name": "backend", \(fields)}]}}}
        """
    }

    @Test func anEndpointResolvesIntoTheDecidersSubscriptionAndTheWorkersSignedEndpoint() throws {
        let configuration = try Self.configuration("""
            {"apps": {"com.example.game": {
              "providers": {"apple_adservices": {}},
              "webhooks": [{"name": "backend", "url": "https://hooks.example.com/ledger?tenant=game",
                            "secret": {"env": "GAME_HOOK_SECRET"}, "previous_secret": {"env": "GAME_HOOK_OLD_SECRET"},
                            "events": ["decision"], "max_attempts": 5, "max_age_seconds": 3600}]},
              "com.example.quiet": {"webhooks": [{"name": "local", "url": "http://127.0.0.1:8080/hooks",
                                                  "secret": {"env": "GAME_HOOK_SECRET"}}]}}}
            """)
        let settings = try configuration.attributionSettings()
        #expect(settings.forApp("com.example.game").webhooks == [WebhookSubscription(endpoint: "backend", events: [.decision])])
        #expect(settings.forApp("com.example.other").webhooks.isEmpty)
        let rules = try configuration.sendRules()
        let endpoint = try #require(rules.table.rules(forApp: "com.example.game").webhooks["backend"])
        #expect(endpoint.scheme == "https" && endpoint.host == "hooks.example.com" && endpoint.path == "/ledger?tenant=game")
        // Signed with the new secret and, while rotating, the old one.
        #expect(endpoint.secrets == ["whsec-game-SECRET-1", "whsec-game-SECRET-0"])
        #expect(endpoint.policy.maxAttempts == 5 && endpoint.policy.maxAge == 3600)
        // The providers of the app's entry are kept beside its endpoints.
        #expect(rules.table.rules(forApp: "com.example.game").adServices != nil)
        // An app with endpoints but no providers of its own: the variables' providers, and its endpoints.
        #expect(rules.table.rules(forApp: "com.example.quiet").webhooks["local"]?.port == 8080)
        #expect(rules.table.rules(forApp: "com.example.other").webhooks.isEmpty)
        #expect(rules.summary.contains("com.example.game: apple_adservices, webhook"))
        // The worker redacts the secrets from whatever it stores; printing an endpoint shows none.
        let table = PerAppSendRules(rules.table)
        #expect(table.configuredSecrets.contains("whsec-game-SECRET-1") && table.configuredSecrets.contains("whsec-game-SECRET-0"))
        #expect(!"\(endpoint)".contains("SECRET") && !String(reflecting: endpoint).contains("SECRET"))
        var dumped = ""
        dump(endpoint, to: &dumped)
        #expect(!dumped.contains("SECRET"))
    }

    /// Each refusal: the endpoint's fields, the key path, the rule.
    static let refusals: [(fields: String, keyPath: String, rule: String)] = [
        (#""url": "http://hooks.example.com/x", "secret": {"env": "GAME_HOOK_SECRET"}"#, "webhooks[0].url", "https_only"),
        (#""url": "hooks.example.com/x", "secret": {"env": "GAME_HOOK_SECRET"}"#, "webhooks[0].url", "absolute_url"),
        (#""url": "https://user:pw@hooks.example.com/x", "secret": {"env": "GAME_HOOK_SECRET"}"#, "webhooks[0].url", "no_credentials_in_url"),
        (#""secret": {"env": "GAME_HOOK_SECRET"}"#, "webhooks[0].url", "required"),
        (#""url": "https://hooks.example.com/x""#, "webhooks[0].secret", "required"),
        (#""url": "https://hooks.example.com/x", "secret": {"env": "UNSET_HOOK_SECRET"}"#, "webhooks[0].secret", "env_set"),
        (#""url": "https://hooks.example.com/x", "secret": {"env": "GAME_HOOK_SECRET"}, "events": ["install"]"#,
         "webhooks[0].events[0]", "known_event_kind"),
        (#""url": "https://hooks.example.com/x", "secret": {"env": "GAME_HOOK_SECRET"}, "events": []"#, "webhooks[0].events", "non_empty_list"),
        (#""url": "https://hooks.example.com/x", "secret": {"env": "GAME_HOOK_SECRET"}, "max_attempts": 0"#,
         "webhooks[0].max_attempts", "range_1_100"),
        (#""url": "https://hooks.example.com/x", "secret": {"env": "GAME_HOOK_SECRET"}, "max_age_seconds": 700000"#,
         "webhooks[0].max_age_seconds", "at_most_7_days"),
        (#""url": "https://hooks.example.com/x", "secret": {"env": "GAME_HOOK_SECRET"}, "headers": {}"#, "webhooks[0].headers", "known_key"),
    ]

    @Test(arguments: refusals.indices)
    func badEndpointsAreRefusedNamingTheFieldAndTheRule(index: Int) throws {
        let (fields, keyPath, rule) = Self.refusals[index]
        let error = try Self.refusal(Self.file(endpoint: fields))
        #expect(error.app == "com.example.game")
        #expect(error.keyPath == "apps.\"com.example.game\".\(keyPath)", "\(error)")
        #expect(error.rule == rule, "\(error)")
        #expect(!error.description.contains("whsec-"))
    }

    @Test func endpointNamesAreCheckedAndUniqueWithinTheApp() throws {
        let badName = try Self.refusal("""
            {"apps": {"com.example.game": {"webhooks": [{"name": "Back End", "url": "https://h.example.com/",
              "secret": {"env": "GAME_HOOK_SECRET"}}]}}}
            """)
        #expect(badName.keyPath == "apps.\"com.example.game\".webhooks[0].name" && badName.rule == "endpoint_name")
        let twice = try Self.refusal("""
            {"apps": {"com.example.game": {"webhooks": [
              {"name": "backend", "url": "https://h.example.com/a", "secret": {"env": "GAME_HOOK_SECRET"}},
              {"name": "backend", "url": "https://h.example.com/b", "secret": {"env": "GAME_HOOK_SECRET"}}]}}}
            """)
        #expect(twice.keyPath == "apps.\"com.example.game\".webhooks[1].name" && twice.rule == "unique_name")
    }

    @Test func endpointsBelongToOneAppNotToTheDefaults() throws {
        let error = try Self.refusal("""
            {"defaults": {"webhooks": [{"name": "backend", "url": "https://h.example.com/", "secret": {"env": "GAME_HOOK_SECRET"}}]}}
            """)
        #expect(error.keyPath == "defaults.webhooks" && error.rule == "per_app_only")
    }
}
