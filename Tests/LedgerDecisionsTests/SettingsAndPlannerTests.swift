import Foundation
import LedgerDomain
import Testing

@testable import LedgerDecisions

@Suite struct SettingsAndPlannerTests {
    @Test func settingsFileKeysAreOptionalAndPerApp() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-settings-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("attribution.json")
        try Data("""
            {"defaults": {"decision_deadline_seconds": 7200},
             "apps": {"com.example.game": {"providers": ["google"], "windows": {"google_click": 604800}}}}
            """.utf8).write(to: file)
        let settings = try AttributionSettings.fromEnvironment([AttributionSettings.environmentVariable: file.path])
        #expect(settings.defaults.decisionDeadline == 7200)
        #expect(settings.defaults.providers == [.google, .appleAdServices, .branch, .singular])
        let game = settings.forApp("com.example.game")
        #expect(game.providers == [.google])
        #expect(game.windows.googleClick == 604_800)
        #expect(game.windows.appleView == 86_400)  // untouched keys keep Apple's documented 24 h
        #expect(settings.forApp("other").decisionDeadline == 7200)
        #expect(settings.shortestDeadline == 7200)
        #expect(try AttributionSettings.fromEnvironment([:]) == AttributionSettings())
    }

    @Test func aBrokenSettingsFileIsNamedInTheError() throws {
        let error = #expect(throws: AttributionSettingsError.self) {
            try AttributionSettings.fromEnvironment([AttributionSettings.environmentVariable: "/nonexistent/attribution.json"])
        }
        #expect(error?.description.contains("/nonexistent/attribution.json") == true)
    }

    static func device(_ platform: Platform) -> DeviceContext {
        DeviceContext(platform: platform, limitAdTracking: false, ip: "203.0.113.9", userAgent: nil, osVersion: "17.1",
                      appVersion: "1.0", bundleID: "com.example.app")
    }

    /// The architecture's install flow: Google first_open, Apple lookup of the token, Branch open,
    /// Singular `__SESSION__` — only to enabled providers, Apple and Singular on iOS only.
    @Test func aFirstOpenRequestsEachEnabledProviderOnce() throws {
        let token = LedgerDomain.AdServicesToken(token: "dG9rZW4=", issuedAt: Date())
        let ios = FirstOpen(appID: try AppID("app"), device: Self.device(.ios), adServicesToken: token)
        let id = UUID()
        let all = SendPlanner(settings: AppAttributionSettings()).plan(ios, eventID: id)
        #expect(all.map(\.provider) == [.google, .appleAdServices, .branch, .singular])
        #expect(all.map(\.kind) == [.conversion, .tokenLookup, .open, .conversionValue])
        #expect(Set(all.map(\.key)).count == 4)
        let android = FirstOpen(appID: try AppID("app"), device: Self.device(.android), adServicesToken: token)
        #expect(SendPlanner(settings: AppAttributionSettings()).plan(android, eventID: id).map(\.provider) == [.google, .branch])
        let googleOnly = SendPlanner(settings: AppAttributionSettings(providers: [.google])).plan(ios, eventID: id)
        #expect(googleOnly.map(\.provider) == [.google])
    }

    /// "The same token twice is one lookup": the key is the token's digest, not the event's id.
    @Test func theSameAdServicesTokenIsOneLookup() throws {
        let token = LedgerDomain.AdServicesToken(token: "dG9rZW4=", issuedAt: Date())
        let planner = SendPlanner(settings: AppAttributionSettings())
        let first = planner.plan(AdServicesTokenReceived(token: token), eventID: UUID())
        let second = planner.plan(AdServicesTokenReceived(token: token), eventID: UUID())
        #expect(first.count == 1 && first.map(\.key) == second.map(\.key))
        #expect(first.first?.key.contains("dG9rZW4") == false)
    }

    /// Google's `in_app_purchase` is "a purchase made through the native app store": ad
    /// monetization revenue is not sent to Google.
    @Test func adMonetizationRevenueIsNotAGooglePurchase() throws {
        let planner = SendPlanner(settings: AppAttributionSettings())
        let money = try Money(amount: Decimal(string: "1.99")!, currency: try CurrencyCode("USD"))
        let iap = RevenueRecorded(device: Self.device(.ios), revenue: money, kind: .iap, transactionID: "t1")
        let ads = RevenueRecorded(device: Self.device(.ios), revenue: money, kind: .adMonetization, transactionID: nil)
        #expect(planner.plan(iap, eventID: UUID()).map(\.provider) == [.google, .singular])
        #expect(planner.plan(ads, eventID: UUID()).map(\.provider) == [.singular])
    }
}
