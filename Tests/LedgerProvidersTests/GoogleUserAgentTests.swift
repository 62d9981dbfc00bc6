import Foundation
import LedgerProviders
import Testing

/// Google App Conversion Tracking API, "App User-Agent":
/// `name version (os_and_version; locale; device; build; Proxy)`.
struct GoogleUserAgentTests {
    let iOS = GoogleAppUserAgent(
        name: "AdMob", version: "7.10.1", osAndVersion: "iOS 10.0.2", locale: "en_US", device: "iPhone9,1", build: "Build/13D15")

    @Test("Google App Conversion Tracking API: the document's iOS and Android examples are reproduced exactly")
    func documentExamples() throws {
        #expect(try iOS.headerValue() == "AdMob/7.10.1 (iOS 10.0.2; en_US; iPhone9,1; Build/13D15; Proxy)")
        let android = GoogleAppUserAgent(
            name: "AdMob", version: "7.10.1", osAndVersion: "Android 6.0", locale: "en_US", device: "SM-G900F", build: "Build/MMB29M")
        #expect(try android.headerValue() == "AdMob/7.10.1 (Android 6.0; en_US; SM-G900F; Build/MMB29M; Proxy)")
    }

    @Test("Google App Conversion Tracking API: \"Only include ; Proxy … when constructing the app User-Agent server side\"")
    func proxyOnlyServerSide() throws {
        var clientSide = iOS
        clientSide.proxy = false
        #expect(try clientSide.headerValue() == "AdMob/7.10.1 (iOS 10.0.2; en_US; iPhone9,1; Build/13D15)")
        // The User-Agent field's own example is client-side (no Proxy); it parses.
        let parsed = try GoogleAppUserAgent.parse("AdMob/7.10.1 (Android 6.0; en_US; SM-G900F; Build/MMB29M)")
        #expect(parsed.proxy == false)
        #expect(parsed.device == "SM-G900F")
        #expect(try GoogleAppUserAgent.parse("AdMob/7.10.1 (iOS 10.0.2; en_US; iPhone9,1; Build/13D15; Proxy)") == iOS)
    }

    @Test("Google App Conversion Tracking API locale: \"two-letter language and country code separated by an underscore\" (en_US)")
    func locale() {
        for bad in ["en-US", "EN_us", "en", "eng_US", "en_USA", "zh-Hans_CN", "en_US@calendar=x", ""] {
            var agent = iOS
            agent.locale = bad
            gaExpectError(field: "locale", rule: bad.isEmpty ? "required" : "locale_ll_CC") {
                try agent.headerValue()
            }
        }
    }

    @Test("Google App Conversion Tracking API build: \"Build/\" followed by the build number (Build/13D15)")
    func build() {
        for bad in ["13D15", "Build/", "build/13D15", "Build 13D15"] {
            var agent = iOS
            agent.build = bad
            gaExpectError(field: "build", rule: "build_prefix") { try agent.headerValue() }
        }
        var nested = iOS
        nested.build = "Build/13/D15"
        gaExpectError(field: "build", rule: "no_separators") { try nested.headerValue() }
    }

    @Test("components are required and cannot break the header's structure (no ( ) ; or line breaks)")
    func separators() {
        var agent = iOS
        agent.name = ""
        gaExpectError(field: "name", rule: "required") { try agent.headerValue() }
        agent = iOS
        agent.device = "iPhone(9,1)"
        gaExpectError(field: "device", rule: "no_separators") { try agent.headerValue() }
        agent = iOS
        agent.osAndVersion = "iOS 10; evil"
        gaExpectError(field: "os_and_version", rule: "no_separators") { try agent.headerValue() }
        agent = iOS
        agent.version = "7.10.1\r\nX-Injected: 1"
        gaExpectError(field: "version", rule: "no_separators") { try agent.headerValue() }
        agent = iOS
        agent.name = "My Product"
        gaExpectError(field: "name", rule: "no_separators") { try agent.headerValue() }
        gaExpectError(field: "User-Agent", rule: "app_user_agent_format") { try GoogleAppUserAgent.parse("Mozilla/5.0") }
        gaExpectError(field: "User-Agent", rule: "app_user_agent_format") { try GoogleAppUserAgent.parse("AdMob/1 (a; en_US; d)") }
    }
}
