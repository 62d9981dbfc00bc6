import AttributionLedger
import Foundation
import LedgerDecisions
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import LedgerHTTPTransport
import LedgerPostgres
import LedgerProviders
import LedgerStore
import Logging

/// A realistic simulated day for `ledger demo`: iOS and Android installs, sessions, purchases in
/// several currencies, AdServices tokens (one ready only on the second try, one phoned home after
/// its 24 h TTL), Branch links, SKAN updates across the three windows — recorded through the
/// Swift API (``AttributionLedger``) as a backend records them, sent by the real worker over HTTP
/// to the loopback fake providers, and decided.
///
/// The simulated clock starts a few minutes from now: the fake Branch stamps link clicks with the
/// real time, and a click must come before the install it caused.
struct DemoDay {
    let store: EventStore
    let fakes: FakeProviders
    let worker: SendWorker
    /// The Swift API the facts are recorded through; its clock is `factClock`.
    let ledger: AttributionLedger
    /// The Swift API's clock, set to each fact's time as it is recorded: the ledger's time of
    /// the sends a fact causes is the fact's, as a backend recording it live would have it.
    let factClock: ManualClock
    let decider: AttributionDecider
    let clock: ManualClock
    let run: String
    let start: Date

    /// One demo device and how its providers will answer.
    struct Device {
        var app: String
        var id: String
        var platform: Platform
        var adID: String
        var googleClicked: Bool
        var appleClickMinutesBefore: Int?
        var tokenReadyOnSecondTry = false
        var tokenPhonedHomeLate = false
        var branchLink: Bool
        var label: String

        var stream: String { "device-\(app)/\(id)" }
        var token: String { Data("demo-token-\(id)".utf8).base64EncodedString() }
    }

    var devices: [Device] {
        [
            Device(app: "demo.ios", id: "ios-search-\(run)", platform: .ios, adID: Self.uuid(1), googleClicked: true,
                   appleClickMinutesBefore: 30, tokenReadyOnSecondTry: true, branchLink: false,
                   label: "Apple Search Ads tap 30 min before install, Google click an hour before"),
            Device(app: "demo.ios", id: "ios-google-\(run)", platform: .ios, adID: Self.uuid(2), googleClicked: true,
                   appleClickMinutesBefore: nil, branchLink: false, label: "Google UAC click; Apple says not attributed"),
            Device(app: "demo.ios", id: "ios-branch-\(run)", platform: .ios, adID: Self.uuid(3), googleClicked: false,
                   appleClickMinutesBefore: nil, branchLink: true, label: "opened from a Branch link"),
            Device(app: "demo.ios", id: "ios-late-token-\(run)", platform: .ios, adID: Self.uuid(4), googleClicked: false,
                   appleClickMinutesBefore: 45, tokenPhonedHomeLate: true, branchLink: false,
                   label: "AdServices token phoned home 25 h after it was made: expired, never sent"),
            Device(app: "demo.ios", id: "ios-organic-\(run)", platform: .ios, adID: Self.uuid(5), googleClicked: false,
                   appleClickMinutesBefore: nil, branchLink: false, label: "no ad at all"),
            Device(app: "demo.android", id: "android-google-\(run)", platform: .android, adID: Self.uuid(6), googleClicked: true,
                   appleClickMinutesBefore: nil, branchLink: false, label: "Google click"),
            Device(app: "demo.android", id: "android-branch-\(run)", platform: .android, adID: Self.uuid(7), googleClicked: false,
                   appleClickMinutesBefore: nil, branchLink: true, label: "opened from a Branch link"),
            Device(app: "demo.android", id: "android-organic-\(run)", platform: .android, adID: Self.uuid(8), googleClicked: false,
                   appleClickMinutesBefore: nil, branchLink: false, label: "no ad at all"),
        ]
    }

    static func uuid(_ n: Int) -> String { String(format: "D3A0%04X-1111-4222-8333-%012X", n, n * 7919) }

    /// Plays the day; returns the decisions made.
    func play(progress: (String) -> Void) async throws -> [DecisionMade] {
        fakes.branch.setRapidRepeatInterval(.zero)
        fakes.google.setDefaultAnswer(.negative)
        for device in devices {
            if device.googleClicked { fakes.google.setAnswer(.affirmative(), forRDID: device.adID) }
            if device.platform == .ios {
                let outcome: FakeAppleAdServices.Outcome = device.appleClickMinutesBefore.map { appleClick(minutesBefore: $0) }
                    ?? .notAttributed
                fakes.apple.register(token: device.token, readiness: device.tokenReadyOnSecondTry ? .afterLookups(1) : .immediately,
                                     outcome: outcome)
            }
        }
        progress("installs")
        for (index, device) in devices.enumerated() {
            let at = start.addingTimeInterval(Double(index) * 600)
            try await install(device, at: at)
        }
        // The last install is 70 min after the first; an hour after it, every first try and every
        // documented retry (Apple's 404 every 5 s, Google's and Branch's backoffs) is due.
        let lastInstall = start.addingTimeInterval(Double(devices.count - 1) * 600)
        try await drain(until: lastInstall.addingTimeInterval(3600))
        progress("deciding installs")
        var made = try await decideUntil(count: devices.count)
        // Sessions, purchases and in-app events through the day. Google's answers for these are
        // negative here: the demo's cross-network reports are the installs'.
        fakes.google.setDefaultAnswer(.negative)
        for device in devices { fakes.google.setAnswer(.negative, forRDID: device.adID) }
        progress("sessions and purchases")
        let purchases: [(String, String)] = [("USD", "4.99"), ("EUR", "9.99"), ("JPY", "480"), ("BRL", "19.90"), ("USD", "0.99")]
        for (index, device) in devices.enumerated() {
            let morning = start.addingTimeInterval(3 * 3600 + Double(index) * 300)
            try await record(SessionStarted(device: context(device)), device, at: morning)
            try await record(InAppEventRecorded(device: context(device), name: "tutorial_complete"), device,
                             at: morning.addingTimeInterval(120))
            if index % 2 == 0 {
                let (currency, amount) = purchases[index % purchases.count]
                let money = try Money(amount: amount, currency: try CurrencyCode(currency))
                try await record(RevenueRecorded(device: context(device), revenue: money, kind: .iap,
                                                 transactionID: "demo-\(run)-\(index)"), device, at: morning.addingTimeInterval(600))
            }
            if index % 3 == 1 {
                let money = try Money(amount: "0.02", currency: try CurrencyCode("USD"))
                try await record(RevenueRecorded(device: context(device), revenue: money, kind: .adMonetization,
                                                 transactionID: "demo-\(run)-ads-\(index)"),
                                 device, at: morning.addingTimeInterval(900))
            }
            try await record(SessionStarted(device: context(device)), device, at: start.addingTimeInterval(14 * 3600 + Double(index) * 60))
        }
        try await drain(until: start.addingTimeInterval(24 * 3600))
        progress("SKAN updates across windows")
        for device in devices where device.platform == .ios {
            // p0 [0, 48 h): fine and coarse; p1 [48 h, 7 d): coarse; p2 [7 d, 35 d): coarse, then lock.
            try await record(SKANConversionValueUpdated(fineValue: 12, coarseValue: .low), device, at: start.addingTimeInterval(5 * 3600))
            try await record(SKANConversionValueUpdated(coarseValue: .medium), device, at: start.addingTimeInterval(3 * 86_400))
            try await record(SKANConversionValueUpdated(coarseValue: .high, lockWindow: true), device,
                             at: start.addingTimeInterval(10 * 86_400))
        }
        try await drain(until: start.addingTimeInterval(10 * 86_400 + 3600))
        progress("deciding and reporting to Google")
        made += try await decider.decidePending(now: Date())
        try await drain(until: clock.now().addingTimeInterval(60))
        return made
    }

    /// Decides until `count` decisions were made, for at most 2 minutes: the decider reads the log
    /// gap-safely, so a transaction still open elsewhere on the server delays what it can see
    /// (the worker's decider simply looks again 5 s later).
    func decideUntil(count: Int) async throws -> [DecisionMade] {
        var made: [DecisionMade] = []
        let deadline = ContinuousClock.now + .seconds(120)
        repeat {
            made += try await decider.decidePending(now: Date())
            if made.count >= count { break }
            try await Task.sleep(for: .milliseconds(50))
        } while ContinuousClock.now < deadline
        return made
    }

    func appleClick(minutesBefore minutes: Int) -> FakeAppleAdServices.Outcome {
        // The click is dated relative to the device's install, which the script places by index;
        // the first install is at `start`.
        let date = ISO8601DateFormatter().string(from: start.addingTimeInterval(-Double(minutes) * 60))
        return .custom(#"{"attribution":true,"orgId":40669820,"campaignId":542370539,"conversionType":"Download","#
            + #""clickDate":"\#(date)","claimType":"Click","adGroupId":542317095,"countryOrRegion":"US","keywordId":87675432,"#
            + #""adId":542317136}"#)
    }

    func context(_ device: Device) -> DeviceContext {
        let agent = device.platform == .ios
            ? UserAgentParts(appName: "DemoGame", appVersion: "3.2.0", osName: "iOS", osVersion: "18.1", locale: "en_US",
                             deviceModel: "iPhone16,2", build: "22B83")
            : UserAgentParts(appName: "DemoGame", appVersion: "3.2.0", osName: "Android", osVersion: "15", locale: "pt_BR",
                             deviceModel: "Pixel 9", build: "AP3A")
        return DeviceContext(
            platform: device.platform, idfa: device.platform == .ios ? device.adID : nil,
            idfv: device.platform == .ios ? "D3A1" + device.adID.dropFirst(4) : nil,  // one of its own, like its IDFA
            gaid: device.platform == .android ? device.adID : nil, limitAdTracking: false,
            attStatus: device.platform == .ios ? .authorized : nil, ip: "203.0.113.\(10 + device.id.count)", userAgent: agent,
            osVersion: device.platform == .ios ? "18.1" : "15", appVersion: "3.2.0", bundleID: "com.example.demogame")
    }

    func install(_ device: Device, at: Date) async throws {
        var link: DeepLink?
        if device.branchLink {
            link = DeepLink(url: "https://demogame.app.link/summer?link_click_id=\(100_000 + device.id.count)",
                            linkClickID: "\(100_000 + device.id.count)")
        }
        let token = device.platform == .ios && !device.tokenPhonedHomeLate
            ? LedgerDomain.AdServicesToken(token: device.token, issuedAt: at) : nil
        try await record(FirstOpen(appID: try AppID(device.app), device: context(device), deepLink: link, adServicesToken: token),
                         device, at: at)
        if device.platform == .ios { try await record(SKANRegistered(skanVersion: "4.0"), device, at: at) }
        if device.tokenPhonedHomeLate {
            // Made yesterday, uploaded now: past Apple's 24 h TTL, so the worker expires it without a call.
            try await record(AdServicesTokenReceived(token: LedgerDomain.AdServicesToken(
                token: device.token, issuedAt: at.addingTimeInterval(-25 * 3600))), device, at: at.addingTimeInterval(1))
        }
    }

    func record<Fact: LedgerEvent>(_ fact: Fact, _ device: Device, at: Date) async throws {
        if clock.now() < at { clock.set(at) }
        factClock.set(at)
        try await ledger.record(fact, for: try DeviceRef(app: device.app, device: device.id), id: UUID(), occurredAt: at)
    }

    /// Drains every send due by `limit` on the simulated clock, jumping the clock to each next due
    /// retry (Apple's 5 s, back-offs).
    func drain(until limit: Date) async throws {
        while true {
            while try await worker.drain() > 0 {}
            let next = try await store.pool.withConnection { try SendQueue.nextDue(on: $0) }
            guard let next, next <= limit else { break }
            if next > clock.now() { clock.set(next) }
        }
        if clock.now() < limit { clock.set(limit) }
    }
}
