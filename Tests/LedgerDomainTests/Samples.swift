import Foundation
import LedgerDomain

/// Fully populated events of every type: every optional field set, so encodings show every key.
enum Samples {
    static let launch = Date(timeIntervalSince1970: 1_714_566_896.123456)  // 2024-05-01T12:34:56.123456Z
    static let later = Date(timeIntervalSince1970: 1_714_566_901.5)
    static let sendID = UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF")!
    static let eventID = UUID(uuidString: "3D2C1B0A-0000-4000-8000-000000000001")!
    static let decisionID = UUID(uuidString: "3D2C1B0A-0000-4000-8000-000000000002")!
    static let idfa = "EA7583CD-A667-48BC-B806-42ECB2B48606"
    static let idfv = "9B1DEB4D-3B7D-4BAD-9BDD-2B0D7B3DCB6D"
    static let gaid = "38400000-8cf0-11bd-b23e-10b96e40000d"

    static func app() throws -> AppID { try AppID("com.example.game") }
    static func deviceStream() throws -> StreamID { try StreamID.device(app: app(), device: DeviceID("install-42")) }

    static let userAgent = UserAgentParts(
        appName: "ExampleGame", appVersion: "3.2.0", osName: "iOS", osVersion: "17.4.1", locale: "en_US",
        deviceModel: "iPhone15,2", build: "21E236")

    static let iosDevice = DeviceContext(
        platform: .ios, idfa: idfa, idfv: idfv, limitAdTracking: false, attStatus: .authorized, ip: "203.0.113.7",
        userAgent: userAgent, osVersion: "17.4.1", appVersion: "3.2.0", sdkVersion: "1.0.0", bundleID: "com.example.game",
        customUserID: "user-1")

    static let androidDevice = DeviceContext(
        platform: .android, gaid: gaid, androidID: "9774d56d682e549c", oaid: "6e2d8f04-3f4d-4a1e-9d3c-0c1b2a3f4e5d",
        limitAdTracking: false, ip: "2001:db8::7",
        userAgent: UserAgentParts(
            appName: "ExampleGame", appVersion: "3.2.0", osName: "Android", osVersion: "14", locale: "de_DE",
            deviceModel: "Pixel 8", build: "UQ1A.240205.004"),
        osVersion: "14", appVersion: "3.2.0", sdkVersion: "1.0.0", bundleID: "com.example.game", customUserID: "user-2")

    static let deepLink = DeepLink(
        url: "https://example.com/open?gclid=abc", gclid: "abc", gbraid: "0AAAAAx", wbraid: "1BBBBy", linkClickID: "1234567")

    static func money(_ amount: String, _ currency: String = "EUR") throws -> Money {
        try Money(amount: amount, currency: CurrencyCode(currency))
    }

    static func firstOpen() throws -> FirstOpen {
        try FirstOpen(
            appID: app(), device: iosDevice, deepLink: deepLink,
            adServicesToken: AdServicesToken(token: "eyJhbGciOiJSUzI1NiJ9+abc/de=", issuedAt: launch))
    }

    static func androidFirstOpen() throws -> FirstOpen {
        try FirstOpen(
            appID: app(), device: androidDevice, deepLink: deepLink,
            installReferrer: InstallReferrer(
                referrerURL: "utm_source=google-play&utm_medium=organic&gclid=xyz", gclid: "xyz", linkClickID: "987",
                googleSearchInstallReferrer: "7AXhuEQs1U", clickedAt: launch, installBeganAt: later))
    }

    static func sendAttempted() -> SendAttempted {
        SendAttempted(
            attempt: 1,
            request: RecordedRequest(
                method: "POST",
                url: "https://www.googleadservices.com/pagead/conversion/app/1.0?dev_token=REDACTED&rdid=\(idfa)",
                headers: [HTTPHeader("User-Agent", "ExampleGame/3.2.0 (iOS 17.4.1; en_US; iPhone15,2; Build/21E236; Proxy)"),
                          HTTPHeader("X-Forwarded-For", "203.0.113.7")],
                body: RecordedBody(bytes: Data(#"{"app_event_data":{"level":3}}"#.utf8))))
    }

    /// A web view's user agent, the form of the Branch v1/open server-to-server guide's example.
    static let deviceUserAgentRecorded = DeviceUserAgentRecorded(
        userAgent: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148")

    static func attributionDecided() throws -> AttributionDecided {
        let winner = AttributionTouch(
            source: .google, interaction: .click, time: launch, campaignID: "123", campaignName: "Spring", adGroupID: "456",
            keywordID: "789", creativeID: "1011", adEventID: "ae-1")
        let view = AttributionTouch(source: .appleAdServices, interaction: .view, time: later, campaignID: "42")
        return try AttributionDecided(
            decisionID: decisionID, deviceStreamID: deviceStream(), triggerEventID: eventID, triggerKind: .install,
            ruleVersion: "last-click-v1", winner: winner,
            candidates: [AttributionCandidate(touch: winner, outcome: .won), AttributionCandidate(touch: view, outcome: .viewBeatenByClick)],
            organic: false, inputPositions: [10, 12, 15], supersedes: UUID(uuidString: "3D2C1B0A-0000-4000-8000-000000000003")!)
    }

    /// Fully populated values of every type in the standard catalog. A type whose fields depend on
    /// the platform has an iOS and an Android sample, so that together they set every field.
    static func all() throws -> [any LedgerEvent] {
        [
            try firstOpen(),
            try androidFirstOpen(),
            SessionStarted(device: iosDevice, deepLink: deepLink),
            SessionStarted(device: androidDevice, deepLink: deepLink),
            InAppEventRecorded(
                device: androidDevice, name: "level_up", googleEventType: .custom, value: try money("0.99"),
                customData: ["level": .number(3), "tags": .array([.string("a"), .bool(true)]), "score": .number(Decimal(string: "12.5")!)]),
            InAppEventRecorded(device: iosDevice, name: "tutorial_done", customData: ["step": .number(5)]),
            RevenueRecorded(device: androidDevice, revenue: try money("4.5"), kind: .adMonetization, transactionID: "imp-77"),
            RevenueRecorded(device: iosDevice, revenue: try money("19.99", "USD"), kind: .iap, transactionID: "2000000123", productID: "gems_100"),
            AdServicesTokenReceived(token: AdServicesToken(token: "dG9rZW4=", issuedAt: launch)),
            DeepLinkOpened(link: deepLink),
            IAdAttributionDetailsReceived(details: .object(["Version3.1": .object(["iad-attribution": .string("false")])])),
            SKANRegistered(skanVersion: "4.0"),
            SKANConversionValueUpdated(fineValue: 63, coarseValue: .high, lockWindow: true),
            TrackingConsentChanged(attStatus: .authorized, limitAdTracking: false, idfa: idfa, gaid: gaid),
            deviceUserAgentRecorded,
            SendRequested(
                sendID: sendID, provider: .google, kind: .conversion, causeEventID: eventID, causeStreamID: try deviceStream(),
                deviceStreamID: try deviceStream(), idempotencyKey: "google:first_open:\(eventID)", notBefore: later,
                parameters: ["app_event_type": "first_open"]),
            sendAttempted(),
            ResponseReceived(
                attempt: 1, status: 200, headers: [HTTPHeader("Content-Type", "application/json")],
                body: RecordedBody(bytes: Data(#"{"ad_events":[],"errors":[],"attributed":false}"#.utf8)), latencyMilliseconds: 182),
            RetryScheduled(attempt: 1, rule: "apple_404_too_soon", detail: "404 within the token's first minutes", notBefore: later),
            SendSucceeded(attempt: 2),
            SendFailed(attempt: 3, rule: "retries_exhausted", detail: "3 tries answered 404"),
            SendOutcomeUnknown(attempt: 1, leaseExpiredAt: later, detail: "worker-7 vanished"),
            SendParked(attempt: 1, rule: "singular_outcome_unknown", detail: "worker-7 vanished during the call"),
            SendUnparked(by: "ops-alice", reason: "Singular's dashboard has no such event"),
            SendCancelled(reason: "erasure", detail: "device erased"),
            try attributionDecided(),
            ErasureCompleted(deviceStreamID: try deviceStream(), requestedBy: "dsar-portal", requestedAt: launch),
            SKANPostbackReceived(
                raw: #"{"version": "4.0", "ad-network-id": "com.example", "transaction-id": "6aafb7a5-0170-41b5-bbe4-fe71dedf1e30"}"#,
                forwardingNetwork: "example-network", receivedAt: later),
            SKANConversionModelConfigured(
                appID: "525463029", modelVersion: 1,
                fine: [.init(from: 0, to: 9, meaning: .init(events: ["tutorial_complete"]))],
                coarse: ["high": .init(events: ["purchase"])], configuredBy: "growth-team"),
            AAKPostbackReceived(
                raw: #"{"jws-string": "e30.e30.AA", "conversion-value": 24}"#, forwardingNetwork: "example-network",
                receivedAt: later, verification: .invalid, keyID: "apple-cas-identifier/0", development: false),
        ]
    }
}
