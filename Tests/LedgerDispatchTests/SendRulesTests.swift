import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFolds
import LedgerProviders
import LedgerStore
import Testing

// ProviderSendRules: each provider's request built from typed, catalog-encoded events, and each
// answer classified, as provider-rules.md (the Google, Apple AdServices, Branch and Singular
// documents) and issue 6 item 3 require.

/// One device's log built in memory, as the store would record it.
private struct RulesLog {
    let device = "device-app1/dev1"
    var events: [RecordedEvent] = []
    private var versions: [String: Int64] = [:]

    @discardableResult
    mutating func add<E: LedgerEvent>(_ event: E, stream: String? = nil, at: Date) throws -> RecordedEvent {
        let stream = stream ?? device
        let data = try EventCatalog.standard.encode(event)
        let version = versions[stream, default: 0] + 1
        versions[stream] = version
        let record = RecordedEvent(
            position: Int64(events.count + 1), transactionID: UInt64(500 + events.count), streamID: stream,
            streamVersion: version, id: UUID(), type: E.eventType, schemaVersion: E.schemaVersion, data: data,
            metadata: Data("{}".utf8), occurredAt: at, recordedAt: at, hash: Data())
        events.append(record)
        return record
    }

    /// Appends a `SendRequested` caused by `cause`; returns it and its stream.
    mutating func request(
        _ provider: SendProvider, _ kind: SendKind, cause: RecordedEvent, at: Date, parameters: [String: String]? = nil
    ) throws -> (send: SendRequested, stream: String) {
        let id = UUID()
        let stream = StreamID.send(id: id).rawValue
        let send = SendRequested(
            sendID: id, provider: provider, kind: kind, causeEventID: cause.id, causeStreamID: try StreamID(cause.streamID),
            deviceStreamID: try StreamID(device), idempotencyKey: "\(provider.rawValue):\(kind.rawValue):\(cause.id)",
            parameters: parameters)
        try add(send, stream: stream, at: at)
        return (send, stream)
    }

    /// One try of a send and the provider's answer.
    mutating func answer(_ stream: String, attempt: Int, status: Int, body: String, at: Date) throws {
        try add(SendAttempted(attempt: attempt, request: RecordedRequest(method: "POST", url: "https://example.test/", headers: [])),
                stream: stream, at: at)
        try add(ResponseReceived(attempt: attempt, status: status, headers: [], body: RecordedBody(bytes: Data(body.utf8)),
                                 latencyMilliseconds: 20), stream: stream, at: at)
    }

    func replay<R: DeviceStateReducer>(_ reducer: R) throws -> R.State {
        try reducer.replay(events.map {
            LoggedEvent(position: $0.position, streamID: $0.streamID, id: $0.id, type: $0.type, data: $0.data,
                        occurredAt: $0.occurredAt, recordedAt: $0.recordedAt)
        }, device: device)
    }
}

private enum RulesFixture {
    static let t0 = Date(timeIntervalSince1970: 1_763_000_000.5)
    static let deviceIP = "81.2.69.160"
    static let idfa = "F10E1DE2-E237-4F50-B6AA-843C45CC63D6"
    static let idfv = "21DB6612-09B3-4ECC-84AC-B353B0AF1334"
    static let gaid = "38400000-8cf0-11bd-b23e-10b96e40000d"
    static let token = "G9i5hC8lQJeG0fmS+MFyc11/025oJEjtpZ+rs4AUkDEJh52fT8RrjwIRh+2J0pXz4MRdmtcemL8WTTHfNNA="
    static let devToken = "DEVTOKEN-SECRET-123"
    static let branchKey = "key_test_fake_branch_key"
    static let branchSecret = "fake_branch_secret_for_tests"
    static let sdkKey = "SINGULAR-SDK-SECRET"
    static let linkID = "31FF8D67E5BB5DD5029DCC2734C2F884"

    static let rules = ProviderSendRules(
        google: GoogleConversionRequestBuilder(link: GoogleAppLink(devToken: devToken, linkID: linkID)),
        adServices: .production,
        branch: BranchConfiguration(branchKey: branchKey, branchSecret: branchSecret, serverPublicIPs: ["198.51.100.9"]),
        singular: SingularConfiguration(sdkKey: sdkKey))

    static let userAgent = UserAgentParts(
        appName: "App", appVersion: "1.2.3", osName: "iOS", osVersion: "17.1", locale: "en_US", deviceModel: "iPhone15,2",
        build: "21B74")

    static func ios(idfa: String? = RulesFixture.idfa, network: Bool = true, lat: Bool = false) -> DeviceContext {
        DeviceContext(platform: .ios, idfa: idfa, idfv: idfv, limitAdTracking: lat, attStatus: idfa == nil ? .denied : .authorized,
                      ip: network ? deviceIP : nil, userAgent: network ? userAgent : nil, osVersion: "17.1",
                      appVersion: "1.2.3", bundleID: "com.example.app")
    }

    static func android() -> DeviceContext {
        DeviceContext(platform: .android, gaid: gaid, androidID: "9774d56d682e549c", limitAdTracking: true, ip: deviceIP,
                      userAgent: UserAgentParts(appName: "App", appVersion: "2.0.0", osName: "Android", osVersion: "14",
                                                locale: "de_DE", deviceModel: "Pixel 8", build: "UQ1A.240105.004"),
                      osVersion: "14", appVersion: "2.0.0", sdkVersion: "5.1", bundleID: "com.example.app")
    }

    static func firstOpen(
        _ device: DeviceContext = ios(), link: DeepLink? = nil, tokenIssuedAt: Date? = nil
    ) throws -> FirstOpen {
        FirstOpen(appID: try AppID("app1"), device: device, deepLink: link,
                  adServicesToken: tokenIssuedAt.map { LedgerDomain.AdServicesToken(token: token, issuedAt: $0) })
    }

    static func context(
        _ send: SendRequested, stream: String = "send-x", cause: RecordedEvent, attempt: Int = 1, now: Date = t0.addingTimeInterval(2),
        branch: BranchIdentityReducer.State = BranchIdentityReducer().initialState(),
        skan: SKANDeviceReducer.State = SKANDeviceReducer().initialState(),
        conversion: (send: SendRequested, cause: RecordedEvent)? = nil, lastSession: DeviceContext? = nil
    ) -> SendContext {
        var context = SendContext(send: send, sendStreamID: stream, attempt: attempt, cause: cause, branchIdentity: branch,
                                  skan: skan, conversion: conversion, now: now, jitter: 0)
        context.lastSessionDevice = lastSession
        return context
    }

    static func response(_ status: Int, _ body: String = "", headers: [LedgerProviders.Header] = []) -> SendAnswer {
        .response(TransportResponse(response: ProviderResponse(status: status, headers: headers, body: Data(body.utf8)),
                                    latency: .milliseconds(30)))
    }

    static func json(_ request: ProviderRequest) throws -> [String: Any] {
        let body = try #require(request.body)
        return try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
    }

    /// Everything a stored or logged form of the request shows.
    static func storedText(_ request: ProviderRequest) -> String {
        let stored = request.redacted()
        return stored.urlString + "\n" + stored.headers.map { "\($0.name): \($0.value)" }.joined(separator: "\n") + "\n"
            + (stored.body.map { String(decoding: $0, as: UTF8.self) } ?? "") + "\n" + request.description
    }

    static func buildError(_ body: () throws(DispatchError) -> ProviderRequest) -> DispatchError? {
        do {
            _ = try body()
            return nil
        } catch {
            return error
        }
    }
}

@Suite("ProviderSendRules")
struct SendRulesTests {
    // MARK: Google (Google App Conversion Tracking API)

    // Google App Conversion Tracking API: "first_open … should always be sent for attributing
    // installs"; UA `name version (os_and_version; locale; device; build; Proxy)`; X-Forwarded-For
    // = device IP; Content-Length: 0 without a body; dev_token is a credential.
    @Test func googleFirstOpenFollowsTheDocument() throws {
        var log = RulesLog()
        let open = try log.add(try RulesFixture.firstOpen(link: DeepLink(url: "https://example.com/x", gclid: "Cj0KCQ-gclid")),
                               at: RulesFixture.t0)
        let (send, _) = try log.request(.google, .conversion, cause: open, at: RulesFixture.t0)
        let request = try RulesFixture.rules.buildRequest(RulesFixture.context(send, cause: open))

        #expect(request.method == .post)
        #expect(request.host == "www.googleadservices.com")
        #expect(request.path == "/pagead/conversion/app/1.0")
        #expect(request.queryValue("dev_token") == RulesFixture.devToken)
        #expect(request.queryValue("link_id") == RulesFixture.linkID)
        #expect(request.queryValue("app_event_type") == "first_open")
        #expect(request.queryValue("app_event_name") == nil)
        #expect(request.queryValue("rdid") == RulesFixture.idfa)
        #expect(request.queryValue("id_type") == "idfa")
        #expect(request.queryValue("lat") == "0")
        #expect(request.queryValue("app_version") == "1.2.3")
        #expect(request.queryValue("os_version") == "17.1")
        #expect(request.queryValue("sdk_version") == "1.2.3")  // "pass the same value as app_version"
        #expect(request.queryValue("timestamp") == "1763000000.500000")  // the cause's occurred_at
        #expect(request.queryValue("gclid") == "Cj0KCQ-gclid")
        // Google App Conversion Tracking API: name and version are "the analytics/ads product" (the
        // ledger), built server side.
        #expect(request.headerValue("User-Agent") == "AttributionLedger/1.0.0 (iOS 17.1; en_US; iPhone15,2; Build/21B74; Proxy)")
        #expect(request.headerValue("X-Forwarded-For") == RulesFixture.deviceIP)
        #expect(request.headerValue("Content-Length") == "0")
        #expect(request.body == nil)

        let stored = RulesFixture.storedText(request)
        #expect(request.redacted().queryValue("dev_token") == ProviderRequest.redactedMarker)
        #expect(!stored.contains(RulesFixture.devToken))
    }

    // provider-rules.md, facts beyond the providers' documents: iOS without IDFA sends the all-zero
    // rdid with gbraid.
    @Test func googleWithoutIDFASendsAllZeroRdidAndGbraid() throws {
        var log = RulesLog()
        let open = try log.add(try RulesFixture.firstOpen(RulesFixture.ios(idfa: nil), link: DeepLink(url: "myapp://open", gbraid: "0AAAAAbCdE_gbraid")),
                               at: RulesFixture.t0)
        let (send, _) = try log.request(.google, .conversion, cause: open, at: RulesFixture.t0)
        let request = try RulesFixture.rules.buildRequest(RulesFixture.context(send, cause: open))
        #expect(request.queryValue("rdid") == "00000000-0000-0000-0000-000000000000")
        #expect(request.queryValue("id_type") == "idfa")
        #expect(request.queryValue("gbraid") == "0AAAAAbCdE_gbraid")
        #expect(request.queryValue("gclid") == nil)
    }

    // Google App Conversion Tracking API: "session_start … for reattributing sessions"; Android:
    // rdid = GAID, id_type advertisingid, lat.
    @Test func googleSessionStartOnAndroid() throws {
        var log = RulesLog()
        let session = try log.add(SessionStarted(device: RulesFixture.android()), at: RulesFixture.t0)
        let (send, _) = try log.request(.google, .conversion, cause: session, at: RulesFixture.t0)
        let request = try RulesFixture.rules.buildRequest(RulesFixture.context(send, cause: session))
        #expect(request.queryValue("app_event_type") == "session_start")
        #expect(request.queryValue("rdid") == RulesFixture.gaid)
        #expect(request.queryValue("id_type") == "advertisingid")
        #expect(request.queryValue("lat") == "1")
        #expect(request.queryValue("sdk_version") == "5.1")
        #expect(request.headerValue("User-Agent") == "AttributionLedger/1.0.0 (Android 14; de_DE; Pixel 8; Build/UQ1A.240105.004; Proxy)")
    }

    // Google App Conversion Tracking API, "User-Agent components": name and version are those of
    // "the analytics/ads product", "Specified by API consumer"; the app's bundle ID is the name
    // only for a client-side User-Agent.
    @Test func googleUserAgentNamesTheConfiguredProductNotTheApp() throws {
        var log = RulesLog()
        let open = try log.add(try RulesFixture.firstOpen(), at: RulesFixture.t0)
        let (send, _) = try log.request(.google, .conversion, cause: open, at: RulesFixture.t0)
        let configured = try ProviderConfiguration.fromEnvironment([
            "LEDGER_GOOGLE_DEV_TOKEN": RulesFixture.devToken, "LEDGER_GOOGLE_LINK_ID": RulesFixture.linkID,
            "LEDGER_GOOGLE_USER_AGENT_PRODUCT": "MyAnalyticsCompany/2.4.1"])
        let request = try configured.rules.buildRequest(RulesFixture.context(send, cause: open))
        #expect(request.headerValue("User-Agent") == "MyAnalyticsCompany/2.4.1 (iOS 17.1; en_US; iPhone15,2; Build/21B74; Proxy)")

        for (text, rule) in [("MyAnalyticsCompany", "product_format"), ("My Company/1.0", "no_separators"),
                             ("Company/1.0 (x)", "no_separators"), ("/1.0", "required")] {
            let refused = #expect(throws: DispatchError.self) {
                try ProviderConfiguration.fromEnvironment([
                    "LEDGER_GOOGLE_DEV_TOKEN": "t", "LEDGER_GOOGLE_LINK_ID": "l", "LEDGER_GOOGLE_USER_AGENT_PRODUCT": text])
            }
            #expect(refused?.variable == "LEDGER_GOOGLE_USER_AGENT_PRODUCT" && refused?.rule == rule, "\(text)")
        }
    }

    // Google App Conversion Tracking API: app_event_name "required if app_event_type is custom";
    // value with currency_code; app_event_data as the body (no Content-Length: 0 then).
    @Test func googleInAppEventWithoutTypeIsCustomWithDataAndValue() throws {
        var log = RulesLog()
        let event = try log.add(
            InAppEventRecorded(device: RulesFixture.ios(network: false), name: "level_up",
                               value: try Money(amount: "9.99", currency: CurrencyCode("EUR")),
                               customData: ["level": .number(5), "items": .array([.string("a"), .string("b")])]),
            at: RulesFixture.t0)
        let (send, _) = try log.request(.google, .conversion, cause: event, at: RulesFixture.t0)
        let request = try RulesFixture.rules.buildRequest(RulesFixture.context(send, cause: event, lastSession: RulesFixture.ios()))
        #expect(request.queryValue("app_event_type") == "custom")
        #expect(request.queryValue("app_event_name") == "level_up")
        #expect(request.queryValue("value") == "9.99")
        #expect(request.queryValue("currency_code") == "EUR")
        // ip and user agent from the last session (docs/events.md: "the builders then use the last session's").
        #expect(request.headerValue("X-Forwarded-For") == RulesFixture.deviceIP)
        #expect(request.headerValue("Content-Length") == nil)
        let body = try #require(request.body.map { String(decoding: $0, as: UTF8.self) })
        #expect(body == #"{"app_event_data":{"items":["a","b"],"level":5}}"#)
    }

    // docs/events.md: InAppEventRecorded may lack ip/user_agent; without a last session the send cannot be built.
    @Test func googleInAppEventWithoutAnyNetworkFactsFailsToBuild() throws {
        var log = RulesLog()
        let event = try log.add(InAppEventRecorded(device: RulesFixture.ios(network: false), name: "x", googleEventType: .viewItem),
                                at: RulesFixture.t0)
        let (send, _) = try log.request(.google, .conversion, cause: event, at: RulesFixture.t0)
        let error = RulesFixture.buildError { () throws(DispatchError) in try RulesFixture.rules.buildRequest(RulesFixture.context(send, cause: event)) }
        #expect(error?.rule == "device_user_agent_missing")
    }

    // Google App Conversion Tracking API: google_event_type is sent as app_event_type; no
    // app_event_name unless custom.
    @Test func googleInAppEventWithTypeAndParameterOverride() throws {
        var log = RulesLog()
        let event = try log.add(InAppEventRecorded(device: RulesFixture.ios(), name: "cart", googleEventType: .addToCart), at: RulesFixture.t0)
        let (send, _) = try log.request(.google, .conversion, cause: event, at: RulesFixture.t0)
        let typed = try RulesFixture.rules.buildRequest(RulesFixture.context(send, cause: event))
        #expect(typed.queryValue("app_event_type") == "add_to_cart")
        #expect(typed.queryValue("app_event_name") == nil)

        let (overridden, _) = try log.request(.google, .conversion, cause: event, at: RulesFixture.t0,
                                              parameters: ["app_event_type": "view_item"])
        let request = try RulesFixture.rules.buildRequest(RulesFixture.context(overridden, cause: event))
        #expect(request.queryValue("app_event_type") == "view_item")
    }

    // Google App Conversion Tracking API: in_app_purchase for native store purchases; money with
    // two decimals.
    @Test func googleRevenueIsInAppPurchase() throws {
        var log = RulesLog()
        let revenue = try log.add(
            RevenueRecorded(device: RulesFixture.ios(), revenue: try Money(amount: "4.5", currency: CurrencyCode("USD")), kind: .iap,
                            transactionID: "tx-1"),
            at: RulesFixture.t0)
        let (send, _) = try log.request(.google, .conversion, cause: revenue, at: RulesFixture.t0)
        let request = try RulesFixture.rules.buildRequest(RulesFixture.context(send, cause: revenue))
        #expect(request.queryValue("app_event_type") == "in_app_purchase")
        #expect(request.queryValue("value") == "4.50")
        #expect(request.queryValue("currency_code") == "USD")
    }

    // Google App Conversion Tracking API, cross-network: "identical to the original conversion
    // tracking request" on /cross_network, plus ad_event_id and attributed (1 if Google got the
    // credit, else 0).
    @Test(arguments: [("1", true), ("0", false)])
    func googleCrossNetworkDerivedFromConversion(attributed: String, expected: Bool) throws {
        var log = RulesLog()
        let open = try log.add(try RulesFixture.firstOpen(link: DeepLink(url: "https://example.com", gclid: "gclid-1")), at: RulesFixture.t0)
        let (conversion, _) = try log.request(.google, .conversion, cause: open, at: RulesFixture.t0)
        let touch = AttributionTouch(source: .google, interaction: .click, time: RulesFixture.t0.addingTimeInterval(-60), adEventID: "AE-1")
        let decision = try log.add(
            AttributionDecided(decisionID: UUID(), deviceStreamID: try StreamID(log.device), triggerEventID: open.id,
                               triggerKind: .install, ruleVersion: "last-click-v1", winner: touch,
                               candidates: [AttributionCandidate(touch: touch, outcome: .won)], organic: false,
                               inputPositions: [1]),
            stream: "decision-app1/dev1", at: RulesFixture.t0.addingTimeInterval(10))
        let (cross, _) = try log.request(.google, .crossNetwork, cause: decision, at: RulesFixture.t0.addingTimeInterval(10),
                                         parameters: ["ad_event_id": "AE-1", "attributed": attributed])
        let original = try RulesFixture.rules.buildRequest(RulesFixture.context(conversion, cause: open))
        let request = try RulesFixture.rules.buildRequest(
            RulesFixture.context(cross, cause: decision, now: RulesFixture.t0.addingTimeInterval(20), conversion: (conversion, open)))
        #expect(request.path == "/pagead/conversion/app/1.0/cross_network")
        #expect(Array(request.query.prefix(original.query.count)) == original.query)
        #expect(request.queryValue("ad_event_id") == "AE-1")
        #expect(request.queryValue("attributed") == (expected ? "1" : "0"))
        #expect(request.headers == original.headers)
        #expect(!RulesFixture.storedText(request).contains(RulesFixture.devToken))
    }

    // ARCHITECTURE.md, event flow step 5: attributed=1 for the winner, else 0 — derived from the
    // decision when the send does not say.
    @Test func googleCrossNetworkAttributedFromDecision() throws {
        var log = RulesLog()
        let open = try log.add(try RulesFixture.firstOpen(), at: RulesFixture.t0)
        let (conversion, _) = try log.request(.google, .conversion, cause: open, at: RulesFixture.t0)
        let touch = AttributionTouch(source: .google, interaction: .click, time: RulesFixture.t0, adEventID: "AE-WIN")
        let decision = try log.add(
            AttributionDecided(decisionID: UUID(), deviceStreamID: try StreamID(log.device), triggerEventID: open.id,
                               triggerKind: .install, ruleVersion: "last-click-v1", winner: touch,
                               candidates: [AttributionCandidate(touch: touch, outcome: .won)], organic: false, inputPositions: [1]),
            stream: "decision-app1/dev1", at: RulesFixture.t0)
        for (adEvent, expected) in [("AE-WIN", "1"), ("AE-OTHER", "0")] {
            let (cross, _) = try log.request(.google, .crossNetwork, cause: decision, at: RulesFixture.t0, parameters: ["ad_event_id": adEvent])
            let request = try RulesFixture.rules.buildRequest(RulesFixture.context(cross, cause: decision, conversion: (conversion, open)))
            #expect(request.queryValue("attributed") == expected)
        }
        let (missing, _) = try log.request(.google, .crossNetwork, cause: decision, at: RulesFixture.t0, parameters: ["ad_event_id": "AE-WIN"])
        let error = RulesFixture.buildError { () throws(DispatchError) in try RulesFixture.rules.buildRequest(RulesFixture.context(missing, cause: decision)) }
        #expect(error?.rule == "conversion_missing")
    }

    // issue 6 item 3: Google network errors and 5xx back off; errors[] codes are terminal; affirmative answers succeed.
    @Test func googleClassification() throws {
        var log = RulesLog()
        let open = try log.add(try RulesFixture.firstOpen(), at: RulesFixture.t0)
        let (send, _) = try log.request(.google, .conversion, cause: open, at: RulesFixture.t0)
        let now = RulesFixture.t0.addingTimeInterval(5)
        let context = RulesFixture.context(send, cause: open, now: now)
        let rules = RulesFixture.rules
        #expect(rules.classify(.failure(DispatchError(.connectionFailed, "refused")), context: context)
            == .retry(notBefore: now.addingTimeInterval(1), rule: "network_error_backoff"))
        #expect(rules.classify(RulesFixture.response(503), context: context) == .retry(notBefore: now.addingTimeInterval(1), rule: "http_5xx_backoff"))
        #expect(rules.classify(RulesFixture.response(200, #"{"ad_events":[],"errors":["timestamp_invalid"],"attributed":false}"#), context: context)
            == .failed(rule: "google_error_code", detail: "timestamp_invalid"))
        #expect(rules.classify(RulesFixture.response(200, #"{"ad_events":[],"errors":[],"attributed":false}"#), context: context) == .succeeded)
        #expect(rules.classify(.failure(DispatchError(.invalidRequest, "bad url")), context: context)
            == .failed(rule: "transport_invalid_request", detail: "bad url"))

        let (cross, _) = try log.request(.google, .crossNetwork, cause: open, at: RulesFixture.t0, parameters: ["ad_event_id": "A", "attributed": "0"])
        // Google App Conversion Tracking API: "a generic 200 response with no response body".
        #expect(rules.classify(RulesFixture.response(200), context: RulesFixture.context(cross, cause: open)) == .succeeded)
    }

    // MARK: Apple AdServices (Apple AdServices attribution API)

    // Apple AdServices attribution API: POST the token alone, Content-Type text/plain, to
    // https://api-adservices.apple.com/api/v1/.
    @Test func adServicesLookupFromFirstOpenAndTokenReceived() throws {
        var log = RulesLog()
        let open = try log.add(try RulesFixture.firstOpen(tokenIssuedAt: RulesFixture.t0), at: RulesFixture.t0)
        let (send, _) = try log.request(.appleAdServices, .tokenLookup, cause: open, at: RulesFixture.t0)
        let request = try RulesFixture.rules.buildRequest(RulesFixture.context(send, cause: open))
        #expect(request.method == .post)
        #expect(request.urlString == "https://api-adservices.apple.com/api/v1/")
        #expect(request.headerValue("Content-Type") == "text/plain")
        #expect(request.body == Data(RulesFixture.token.utf8))

        let received = try log.add(AdServicesTokenReceived(token: LedgerDomain.AdServicesToken(token: "QUJDRA==", issuedAt: RulesFixture.t0)),
                                   at: RulesFixture.t0)
        let (second, _) = try log.request(.appleAdServices, .tokenLookup, cause: received, at: RulesFixture.t0)
        #expect(try RulesFixture.rules.buildRequest(RulesFixture.context(second, cause: received)).body == Data("QUJDRA==".utf8))

        let session = try log.add(SessionStarted(device: RulesFixture.ios()), at: RulesFixture.t0)
        let (wrong, _) = try log.request(.appleAdServices, .tokenLookup, cause: session, at: RulesFixture.t0)
        let error = RulesFixture.buildError { () throws(DispatchError) in try RulesFixture.rules.buildRequest(RulesFixture.context(wrong, cause: session)) }
        #expect(error?.rule == "cause_not_supported")
    }

    // Apple AdServices attribution API: 404 too soon → "retry every 5 s, at most 3 attempts"; the
    // third try's 200 succeeds.
    @Test func adServices404404200() throws {
        var log = RulesLog()
        let open = try log.add(try RulesFixture.firstOpen(tokenIssuedAt: RulesFixture.t0), at: RulesFixture.t0)
        let (send, _) = try log.request(.appleAdServices, .tokenLookup, cause: open, at: RulesFixture.t0)
        let rules = RulesFixture.rules
        var now = RulesFixture.t0.addingTimeInterval(1)
        #expect(rules.preflight(RulesFixture.context(send, cause: open, attempt: 1, now: now)) == nil)
        let first = rules.classify(RulesFixture.response(404), context: RulesFixture.context(send, cause: open, attempt: 1, now: now))
        #expect(first == .retry(notBefore: now.addingTimeInterval(5), rule: "adservices_404_retry_5s"))
        now = now.addingTimeInterval(5)
        let second = rules.classify(RulesFixture.response(404), context: RulesFixture.context(send, cause: open, attempt: 2, now: now))
        #expect(second == .retry(notBefore: now.addingTimeInterval(5), rule: "adservices_404_retry_5s"))
        now = now.addingTimeInterval(5)
        let third = rules.classify(RulesFixture.response(200, #"{"attribution":false}"#),
                                   context: RulesFixture.context(send, cause: open, attempt: 3, now: now))
        #expect(third == .succeeded)
        // A third 404 is the last: "a maximum of three attempts".
        if case .failed(let rule, _) = rules.classify(RulesFixture.response(404), context: RulesFixture.context(send, cause: open, attempt: 3, now: now)) {
            #expect(rule == "adservices_404_gave_up")
        } else {
            Issue.record("a third 404 must be terminal")
        }
    }

    // Apple AdServices attribution API: 400 "The token is invalid" is terminal; 500 "retry later"
    // backs off while the token lives, and never schedules a try past the 24 h TTL.
    @Test func adServices400And500() throws {
        var log = RulesLog()
        let open = try log.add(try RulesFixture.firstOpen(tokenIssuedAt: RulesFixture.t0), at: RulesFixture.t0)
        let (send, _) = try log.request(.appleAdServices, .tokenLookup, cause: open, at: RulesFixture.t0)
        let now = RulesFixture.t0.addingTimeInterval(10)
        let context = RulesFixture.context(send, cause: open, now: now)
        if case .failed(let rule, _) = RulesFixture.rules.classify(RulesFixture.response(400), context: context) {
            #expect(rule == "adservices_400_invalid_token")
        } else {
            Issue.record("400 must be terminal")
        }
        #expect(RulesFixture.rules.classify(RulesFixture.response(500), context: context)
            == .retry(notBefore: now.addingTimeInterval(30), rule: "adservices_5xx_retry"))
        #expect(RulesFixture.rules.classify(.failure(DispatchError(.timeout, "t")), context: context)
            == .retry(notBefore: now.addingTimeInterval(30), rule: "adservices_network_error_retry"))
        let late = RulesFixture.context(send, cause: open, now: RulesFixture.t0.addingTimeInterval(86_400 - 3))
        for answer in [RulesFixture.response(500), RulesFixture.response(404)] {
            if case .failed(let rule, _) = RulesFixture.rules.classify(answer, context: late) {
                #expect(rule == "adservices_token_expired")
            } else {
                Issue.record("no retry may be scheduled past the TTL")
            }
        }
    }

    // Apple AdServices attribution API: "24-hour TTL" — 23:59:59 is live (call), 24:00:00 is
    // expired (no call).
    @Test func adServicesPreflightAtTheTTLEdge() throws {
        var log = RulesLog()
        let received = try log.add(AdServicesTokenReceived(token: LedgerDomain.AdServicesToken(token: RulesFixture.token, issuedAt: RulesFixture.t0)),
                                   at: RulesFixture.t0)
        let (send, _) = try log.request(.appleAdServices, .tokenLookup, cause: received, at: RulesFixture.t0)
        #expect(RulesFixture.rules.preflight(RulesFixture.context(send, cause: received, now: RulesFixture.t0.addingTimeInterval(86_399))) == nil)
        let expired = RulesFixture.rules.preflight(RulesFixture.context(send, cause: received, now: RulesFixture.t0.addingTimeInterval(86_400)))
        if case .failed(let rule, _) = expired {
            #expect(rule == "adservices_token_expired")
        } else {
            Issue.record("a token 24 h old must be expired without a call")
        }
        // Other providers never preflight.
        let (google, _) = try log.request(.google, .conversion, cause: received, at: RulesFixture.t0)
        #expect(RulesFixture.rules.preflight(RulesFixture.context(google, cause: received, now: RulesFixture.t0.addingTimeInterval(90_000))) == nil)
    }

    // MARK: Branch (Branch v1/open server-to-server guide)

    // Branch v1/open server-to-server guide: POST /v1/open, JSON, X-IP-Override = the device's IP;
    // first_session true; hardware_id IDFA; apple_attribution_token within 24 h; branch_key /
    // branch_secret are credentials.
    @Test func branchFirstOpen() throws {
        var log = RulesLog()
        let open = try log.add(
            try RulesFixture.firstOpen(link: DeepLink(url: "https://example.app.link/abc", linkClickID: "123456789"), tokenIssuedAt: RulesFixture.t0),
            at: RulesFixture.t0)
        let (send, _) = try log.request(.branch, .open, cause: open, at: RulesFixture.t0)
        let request = try RulesFixture.rules.buildRequest(RulesFixture.context(send, cause: open))
        #expect(request.method == .post)
        #expect(request.urlString == "https://api2.branch.io/v1/open")
        #expect(request.headerValue("X-IP-Override") == RulesFixture.deviceIP)
        #expect(request.headerValue("Content-Type") == "application/json")
        let body = try RulesFixture.json(request)
        #expect(body["first_session"] as? Bool == true)
        #expect(body["server_to_server"] as? Bool == true)
        #expect(body["server_to_server_identity"] as? Bool == true)
        #expect(body["randomized_bundle_token"] == nil)
        #expect(body["os"] as? String == "iOS")
        #expect(body["os_version"] as? String == "17.1")
        #expect(body["app_version"] as? String == "1.2.3")
        #expect(body["hardware_id"] as? String == RulesFixture.idfa)
        #expect(body["hardware_id_type"] as? String == "idfa")
        #expect(body["ios_vendor_id"] as? String == RulesFixture.idfv)
        #expect(body["is_hardware_id_real"] as? Bool == true)
        #expect(body["ad_tracking_enabled"] as? Bool == true)
        #expect(body["link_identifier"] as? String == "123456789")
        #expect(body["universal_link_url"] as? String == "https://example.app.link/abc")
        #expect(body["apple_attribution_token"] as? String == RulesFixture.token)
        #expect(body["user_agent"] as? String == "App/1.2.3 (iOS 17.1; en_US; iPhone15,2; Build/21B74)")
        #expect(body["branch_key"] as? String == RulesFixture.branchKey)
        #expect(body["branch_secret"] as? String == RulesFixture.branchSecret)
        let stored = RulesFixture.storedText(request)
        #expect(!stored.contains(RulesFixture.branchKey))
        #expect(!stored.contains(RulesFixture.branchSecret))
        #expect(try RulesFixture.json(request.redacted())["branch_secret"] as? String == ProviderRequest.redactedMarker)
    }

    // Branch v1/open server-to-server guide: apple_attribution_token "within its 24 h TTL"; limit
    // ad tracking omits ad_tracking_enabled.
    @Test func branchFirstOpenOmitsExpiredAttributionToken() throws {
        var log = RulesLog()
        let open = try log.add(try RulesFixture.firstOpen(RulesFixture.ios(lat: true), tokenIssuedAt: RulesFixture.t0), at: RulesFixture.t0)
        let (send, _) = try log.request(.branch, .open, cause: open, at: RulesFixture.t0)
        let request = try RulesFixture.rules.buildRequest(RulesFixture.context(send, cause: open, now: RulesFixture.t0.addingTimeInterval(86_400)))
        let body = try RulesFixture.json(request)
        #expect(body["apple_attribution_token"] == nil)
        #expect(body["ad_tracking_enabled"] == nil)
    }

    // Branch v1/open server-to-server guide: "After the first request, this property must be
    // hardcoded with the randomized_bundle_token received in the first network response" — taken
    // from the identity state the first answer produced.
    @Test func branchSecondOpenCarriesTokenFromFirstAnswer() throws {
        var log = RulesLog()
        let open = try log.add(try RulesFixture.firstOpen(), at: RulesFixture.t0)
        let (first, firstStream) = try log.request(.branch, .open, cause: open, at: RulesFixture.t0)
        let session = try log.add(SessionStarted(device: RulesFixture.ios(), deepLink: DeepLink(url: "myapp://x", linkClickID: "987")),
                                  at: RulesFixture.t0.addingTimeInterval(60))
        let (second, secondStream) = try log.request(.branch, .open, cause: session, at: RulesFixture.t0.addingTimeInterval(60))

        // Before the first answer the second open cannot be built.
        let before = try log.replay(BranchIdentityReducer())
        let error = RulesFixture.buildError { () throws(DispatchError) in
            try RulesFixture.rules.buildRequest(RulesFixture.context(second, stream: secondStream, cause: session, branch: before))
        }
        #expect(error?.rule == "required_after_first_open")
        #expect(try RulesFixture.json(try RulesFixture.rules.buildRequest(RulesFixture.context(first, stream: firstStream, cause: open, branch: before)))["first_session"] as? Bool == true)

        try log.answer(firstStream, attempt: 1, status: 200,
                       body: #"{"session_id":"1","randomized_bundle_token":"RBT-1","randomized_device_token":"RDT-1","data":"{}"}"#,
                       at: RulesFixture.t0.addingTimeInterval(1))
        try log.add(SendSucceeded(attempt: 1), stream: firstStream, at: RulesFixture.t0.addingTimeInterval(1))
        let after = try log.replay(BranchIdentityReducer())
        #expect(after.randomizedBundleToken == "RBT-1")
        let request = try RulesFixture.rules.buildRequest(
            RulesFixture.context(second, stream: secondStream, cause: session, now: RulesFixture.t0.addingTimeInterval(61), branch: after))
        let body = try RulesFixture.json(request)
        #expect(body["randomized_bundle_token"] as? String == "RBT-1")
        #expect(body["first_session"] as? Bool == false)
        #expect(body["link_identifier"] as? String == "987")
        #expect(body["universal_link_url"] == nil)  // a custom-scheme link is not a universal link
    }

    // Branch v1/open server-to-server guide: the token goes in "all v1/open requests moving forward
    // for that device" — a reinstall's first open (a second FirstOpen of the device) too, still
    // `first_session` true ("Branch will check if we saw the user download the app before, and mark
    // the session as a reinstall").
    @Test func branchReinstallKeepsTheDevicesToken() throws {
        var log = RulesLog()
        let open = try log.add(try RulesFixture.firstOpen(), at: RulesFixture.t0)
        let (_, firstStream) = try log.request(.branch, .open, cause: open, at: RulesFixture.t0)
        try log.answer(firstStream, attempt: 1, status: 200,
                       body: #"{"session_id":"1","randomized_bundle_token":"RBT-1","randomized_device_token":"RDT-1","data":"{}"}"#,
                       at: RulesFixture.t0.addingTimeInterval(1))
        try log.add(SendSucceeded(attempt: 1), stream: firstStream, at: RulesFixture.t0.addingTimeInterval(1))
        let later = RulesFixture.t0.addingTimeInterval(86_400 * 3)
        let reinstall = try log.add(try RulesFixture.firstOpen(), at: later)
        let (send, stream) = try log.request(.branch, .open, cause: reinstall, at: later)
        let request = try RulesFixture.rules.buildRequest(
            RulesFixture.context(send, stream: stream, cause: reinstall, now: later, branch: try log.replay(BranchIdentityReducer())))
        let body = try RulesFixture.json(request)
        #expect(body["first_session"] as? Bool == true)
        #expect(body["randomized_bundle_token"] as? String == "RBT-1")
    }

    // Branch v1/open server-to-server guide on Android: hardware_id = ANDROID_ID,
    // google_advertising_id, no hardware_id_type.
    @Test func branchAndroidOpen() throws {
        var log = RulesLog()
        let open = try log.add(FirstOpen(appID: try AppID("app1"), device: RulesFixture.android(),
                                         installReferrer: InstallReferrer(referrerURL: "utm_source=google&gclid=abc", gclid: "abc")),
                               at: RulesFixture.t0)
        let (send, _) = try log.request(.branch, .open, cause: open, at: RulesFixture.t0)
        let body = try RulesFixture.json(try RulesFixture.rules.buildRequest(RulesFixture.context(send, cause: open)))
        #expect(body["os"] as? String == "Android")
        #expect(body["hardware_id"] as? String == "9774d56d682e549c")
        #expect(body["hardware_id_type"] == nil)
        #expect(body["google_advertising_id"] as? String == RulesFixture.gaid)
        #expect(body["install_referrer_extras"] as? String == "utm_source=google&gclid=abc")
        #expect(body["referrer_gclid"] as? String == "abc")
        #expect(body["ad_tracking_enabled"] == nil)
    }

    // A DeepLinkOpened carries no device: the open is built from the last session's device.
    @Test func branchDeepLinkOpenedUsesLastSession() throws {
        var log = RulesLog()
        let link = try log.add(DeepLinkOpened(link: DeepLink(url: "https://example.app.link/z", linkClickID: "555")), at: RulesFixture.t0)
        let (send, _) = try log.request(.branch, .open, cause: link, at: RulesFixture.t0)
        var identity = BranchIdentityReducer().initialState()
        identity.randomizedBundleToken = "RBT-9"
        let error = RulesFixture.buildError { () throws(DispatchError) in
            try RulesFixture.rules.buildRequest(RulesFixture.context(send, cause: link, branch: identity))
        }
        #expect(error?.rule == "device_context_missing")
        let body = try RulesFixture.json(try RulesFixture.rules.buildRequest(
            RulesFixture.context(send, cause: link, branch: identity, lastSession: RulesFixture.ios())))
        #expect(body["first_session"] as? Bool == false)
        #expect(body["link_identifier"] as? String == "555")
        #expect(body["randomized_bundle_token"] as? String == "RBT-9")
    }

    // Branch v1/open server-to-server guide: 429 → back off minutes, Retry-After honoured;
    // provider-rules.md: 5xx and timeouts retried 3 times, 4xx never.
    @Test func branchClassification() throws {
        var log = RulesLog()
        let open = try log.add(try RulesFixture.firstOpen(), at: RulesFixture.t0)
        let (send, _) = try log.request(.branch, .open, cause: open, at: RulesFixture.t0)
        let now = RulesFixture.t0.addingTimeInterval(3)
        let rules = RulesFixture.rules
        func context(_ attempt: Int) -> SendContext { RulesFixture.context(send, cause: open, attempt: attempt, now: now) }
        #expect(rules.classify(RulesFixture.response(429, headers: [LedgerProviders.Header("Retry-After", "120")]), context: context(1))
            == .retry(notBefore: now.addingTimeInterval(120), rule: "branch_429_backoff"))
        #expect(rules.classify(RulesFixture.response(429), context: context(1))
            == .retry(notBefore: now.addingTimeInterval(300), rule: "branch_429_backoff"))
        #expect(rules.classify(RulesFixture.response(200, #"{"randomized_bundle_token":"R"}"#), context: context(1)) == .succeeded)
        if case .retry(_, let rule) = rules.classify(.failure(DispatchError(.timeout, "t")), context: context(1)) {
            #expect(rule == "branch_timeout_retry")
        } else {
            Issue.record("a timeout is retried")
        }
        if case .retry(_, let rule) = rules.classify(RulesFixture.response(502), context: context(3)) {
            #expect(rule == "branch_5xx_retry")
        } else {
            Issue.record("the third 5xx is still retried")
        }
        if case .failed(let rule, _) = rules.classify(RulesFixture.response(502), context: context(4)) {
            #expect(rule == "branch_retries_exhausted")
        } else {
            Issue.record("after three retries a 5xx is terminal")
        }
        if case .failed(let rule, _) = rules.classify(RulesFixture.response(400), context: context(1)) {
            #expect(rule == "branch_http_4xx")
        } else {
            Issue.record("4xx is terminal")
        }
    }

    // MARK: Singular (Singular SKAdNetwork 4 implementation guide)

    // Singular SKAdNetwork 4 implementation guide: GET /api/v2/conversion_value with a (SDK key, a
    // credential), p=iOS, v, i, app_v, n = __SESSION__ for sessions, idfa, idfv and the device's
    // SKAN state.
    @Test func singularSessionCarriesSKANState() throws {
        var log = RulesLog()
        let open = try log.add(try RulesFixture.firstOpen(), at: RulesFixture.t0)
        try log.add(SKANRegistered(skanVersion: "4.0"), at: RulesFixture.t0)
        try log.add(RevenueRecorded(device: RulesFixture.ios(), revenue: try Money(amount: "9.99", currency: CurrencyCode("USD")),
                                    kind: .iap, transactionID: "t-1"), at: RulesFixture.t0.addingTimeInterval(30))
        let skan = try log.replay(SKANDeviceReducer())
        let (send, _) = try log.request(.singular, .conversionValue, cause: open, at: RulesFixture.t0)
        let request = try RulesFixture.rules.buildRequest(RulesFixture.context(send, cause: open, now: RulesFixture.t0.addingTimeInterval(60), skan: skan))
        #expect(request.method == .get)
        #expect(request.host == "sdk-api-v1.singular.net")
        #expect(request.path == "/api/v2/conversion_value")
        #expect(request.queryValue("a") == RulesFixture.sdkKey)
        #expect(request.queryValue("p") == "iOS")
        #expect(request.queryValue("i") == "com.example.app")
        #expect(request.queryValue("v") == "17.1")
        #expect(request.queryValue("app_v") == "1.2.3")
        #expect(request.queryValue("n") == "__SESSION__")
        #expect(request.queryValue("idfa") == RulesFixture.idfa)
        #expect(request.queryValue("idfv") == RulesFixture.idfv)
        #expect(request.queryValue("skan_current_conversion_value") == "0")
        #expect(request.queryValue("skan_total_revenue_by_currency") == #"{"USD":9.99}"#)
        #expect(request.queryValue("skan_first_call_to_skadnetwork_timestamp") == String(Int64(RulesFixture.t0.timeIntervalSince1970)))
        #expect(request.redacted().queryValue("a") == ProviderRequest.redactedMarker)
        #expect(!RulesFixture.storedText(request).contains(RulesFixture.sdkKey))
    }

    // Singular SKAdNetwork 4 implementation guide: n is the event's name; revenue events use
    // Singular's __iap__; parameters.n overrides.
    @Test func singularEventNames() throws {
        var log = RulesLog()
        try log.add(SKANRegistered(), at: RulesFixture.t0)
        let skan = try log.replay(SKANDeviceReducer())
        let event = try log.add(InAppEventRecorded(device: RulesFixture.ios(network: false), name: "tutorial_done"), at: RulesFixture.t0)
        let revenue = try log.add(RevenueRecorded(device: RulesFixture.ios(network: false), revenue: try Money(amount: "1", currency: CurrencyCode("USD")),
                                                  kind: .iap, transactionID: "t-2"), at: RulesFixture.t0)
        let session = try log.add(SessionStarted(device: RulesFixture.ios()), at: RulesFixture.t0)
        let cases: [(RecordedEvent, [String: String]?, String)] = [
            (event, nil, "tutorial_done"), (revenue, nil, "__iap__"), (session, ["n": "custom_name"], "custom_name"),
            (event, ["n": "__SESSION__"], "__SESSION__"),
        ]
        for (cause, parameters, expected) in cases {
            let (send, _) = try log.request(.singular, .conversionValue, cause: cause, at: RulesFixture.t0, parameters: parameters)
            let request = try RulesFixture.rules.buildRequest(RulesFixture.context(send, cause: cause, skan: skan))
            #expect(request.queryValue("n") == expected)
        }
        // Singular SKAdNetwork 4 implementation guide: a device that never registered for SKAN has
        // nothing to ask.
        let (unregistered, _) = try log.request(.singular, .conversionValue, cause: session, at: RulesFixture.t0)
        let error = RulesFixture.buildError { () throws(DispatchError) in try RulesFixture.rules.buildRequest(RulesFixture.context(unregistered, cause: session)) }
        #expect(error?.rule == "not_registered")
    }

    // Singular SKAdNetwork 4 implementation guide: status "ok" succeeds; status errors are recorded
    // (terminal); 5xx back off.
    @Test func singularClassification() throws {
        var log = RulesLog()
        let session = try log.add(SessionStarted(device: RulesFixture.ios()), at: RulesFixture.t0)
        let (send, _) = try log.request(.singular, .conversionValue, cause: session, at: RulesFixture.t0)
        let context = RulesFixture.context(send, cause: session)
        #expect(RulesFixture.rules.classify(RulesFixture.response(200, #"{"conversion_value":5,"status":"ok"}"#), context: context) == .succeeded)
        let reason = "Conversion Management: Conversion model not found for app: com.example.app"
        #expect(RulesFixture.rules.classify(RulesFixture.response(200, #"{"status":"error","reason":"\#(reason)"}"#), context: context)
            == .failed(rule: "singular_conversion_model_not_found", detail: reason))
        if case .retry(_, let rule) = RulesFixture.rules.classify(RulesFixture.response(500), context: context) {
            #expect(rule == "singular_5xx_retry")
        } else {
            Issue.record("5xx is retried")
        }
    }

    // MARK: Configuration

    // provider-rules.md, "Everywhere": a provider without configuration is never called.
    @Test func unconfiguredProvidersFailToBuild() throws {
        var log = RulesLog()
        let open = try log.add(try RulesFixture.firstOpen(tokenIssuedAt: RulesFixture.t0), at: RulesFixture.t0)
        let rules = ProviderSendRules()
        for (provider, kind) in [(SendProvider.google, SendKind.conversion), (.appleAdServices, .tokenLookup), (.branch, .open),
                                 (.singular, .conversionValue)] {
            let (send, _) = try log.request(provider, kind, cause: open, at: RulesFixture.t0)
            let error = RulesFixture.buildError { () throws(DispatchError) in try rules.buildRequest(RulesFixture.context(send, cause: open)) }
            #expect(error?.rule == "provider_not_configured", "\(provider.rawValue)")
        }
    }

    // Branch v1/open server-to-server guide: X-IP-Override must be "the device's IP, and not your
    // server's IP". The service's own addresses come from LEDGER_SERVER_PUBLIC_IPS; a malformed one
    // stops the start-up.
    @Test func serverPublicIPsComeFromTheEnvironment() throws {
        let base = ["LEDGER_BRANCH_KEY": "key_live_x", "LEDGER_BRANCH_SECRET": "secret_live_x"]
        let configured = try ProviderConfiguration.fromEnvironment(
            base.merging(["LEDGER_SERVER_PUBLIC_IPS": " 203.0.113.9, 2001:db8::9 "]) { $1 })
        #expect(configured.rules.branch?.serverPublicIPs == ["203.0.113.9", "2001:db8::9"])
        #expect(try ProviderConfiguration.fromEnvironment(base).rules.branch?.serverPublicIPs == [])
        let refused = #expect(throws: DispatchError.self) {
            try ProviderConfiguration.fromEnvironment(base.merging(["LEDGER_SERVER_PUBLIC_IPS": "203.0.113.9, ours.example"]) { $1 })
        }
        #expect(refused?.variable == "LEDGER_SERVER_PUBLIC_IPS" && refused?.rule == "ip_address")
    }

    // Branch v1/open server-to-server guide, `identity`: "all values should be encrypted before
    // being passed to Branch". The key of the hash comes from LEDGER_BRANCH_IDENTITY_KEY; without
    // it no identity is sent.
    @Test func branchIdentityKeyComesFromTheEnvironment() throws {
        let base = ["LEDGER_BRANCH_KEY": "key_live_x", "LEDGER_BRANCH_SECRET": "secret_live_x"]
        let configured = try ProviderConfiguration.fromEnvironment(base.merging(["LEDGER_BRANCH_IDENTITY_KEY": "k-1"]) { $1 })
        #expect(configured.rules.branch?.identityKey == "k-1")
        #expect(try ProviderConfiguration.fromEnvironment(base).rules.branch?.identityKey == nil)
    }
}
