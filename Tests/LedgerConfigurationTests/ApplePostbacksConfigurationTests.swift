import Foundation
import LedgerConfiguration
import LedgerDomain
import LedgerHTTPAPI
import Testing

/// `apple_postbacks` in the apps file: the host names Apple's developer copies reach (each bound to
/// one app, since the host is all that names the app) and development keys per app.
@Suite("Apps file: Apple postbacks")
struct ApplePostbacksConfigurationTests {
    func settings(_ json: String) throws -> ApplePostbackSettings {
        let file = try AppsFile(json: Data(json.utf8), environment: [:])
        return try ServiceConfiguration(environment: [:], appsFile: file).applePostbackSettings()
    }

    @Test("copy hosts bind to their app; development keys only where set, defaults included")
    func parsed() throws {
        let settings = try settings("""
            {"defaults": {"apple_postbacks": {"development_keys": true}},
             "apps": {"525463029": {"apple_postbacks": {"copy_hosts": ["game.example.com"], "development_keys": false}},
                      "10738027756": {"apple_postbacks": {"copy_hosts": ["other.example.com", "www.other.example.com"]}}}}
            """)
        #expect(settings.app(forHost: "Game.Example.com:443") == (try AppID("525463029")))
        #expect(settings.app(forHost: "www.other.example.com") == (try AppID("10738027756")))
        #expect(settings.app(forHost: "example.com") == nil)
        #expect(settings.developmentKeyApps == [try AppID("10738027756")])
    }

    @Test("a host given to two apps, a host in defaults, or a host with a scheme is refused, naming the key path")
    func refused() throws {
        func refusal(_ json: String) throws -> AppsFileError? {
            let error = #expect(throws: (any Error).self) { try settings(json) }
            if let error = error as? AppsFileError { return error }
            if case .appsFile(let inner)? = error as? ConfigurationError { return inner }
            return nil
        }
        let twice = try refusal("""
            {"apps": {"1": {"apple_postbacks": {"copy_hosts": ["a.example.com"]}},
                      "2": {"apple_postbacks": {"copy_hosts": ["a.example.com"]}}}}
            """)
        #expect(twice?.rule == "one_app_per_host" && twice?.keyPath == #"apps."2".apple_postbacks.copy_hosts[0]"#)
        let inDefaults = try refusal(#"{"defaults": {"apple_postbacks": {"copy_hosts": ["a.example.com"]}}}"#)
        #expect(inDefaults?.rule == "not_in_defaults")
        let scheme = try refusal(#"{"apps": {"1": {"apple_postbacks": {"copy_hosts": ["https://a.example.com"]}}}}"#)
        #expect(scheme?.rule == "dns_name")
        let unknown = try refusal(#"{"apps": {"1": {"apple_postbacks": {"copy_host": ["a.example.com"]}}}}"#)
        #expect(unknown?.rule == "known_key")
    }
}
