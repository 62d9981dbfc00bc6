import Foundation
import LedgerDomain
import Testing

/// The error `encode` throws for an event that breaks a domain rule (encode validates first).
func ruleError<Event: LedgerEvent>(_ event: Event) -> EventValidationError? {
    do {
        _ = try EventCatalog.standard.encode(event)
        return nil
    } catch {
        return error
    }
}

/// Expects `event` to break `rule` at `field`, as an invalid value unless `kind` says otherwise.
func expectBroken<Event: LedgerEvent>(
    _ event: Event, field: String?, rule: String, kind: EventValidationError.Kind = .invalidValue,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let error = ruleError(event) else {
        Issue.record("\(Event.eventType) was accepted; expected \(rule) at \(field ?? "-")", sourceLocation: sourceLocation)
        return
    }
    #expect(error.kind == kind, sourceLocation: sourceLocation)
    #expect(error.field == field, sourceLocation: sourceLocation)
    #expect(error.rule == rule, sourceLocation: sourceLocation)
    #expect(error.eventType == Event.eventType, sourceLocation: sourceLocation)
}

@Suite("Domain rules after decoding")
struct DomainRuleTests {
    @Test("SKAN fine values lie in 0...63, and an update sets fine or coarse")
    func skanValues() {
        expectBroken(SKANConversionValueUpdated(fineValue: 64), field: "fine_value", rule: "range_0_63")
        expectBroken(SKANConversionValueUpdated(fineValue: -1), field: "fine_value", rule: "range_0_63")
        expectBroken(SKANConversionValueUpdated(lockWindow: true), field: "fine_value", rule: "fine_or_coarse_required")
        #expect(ruleError(SKANConversionValueUpdated(fineValue: 0)) == nil)
        #expect(ruleError(SKANConversionValueUpdated(coarseValue: .low, lockWindow: true)) == nil)
    }

    @Test("the same rule is reported when the bad value arrives as JSON")
    func skanValueFromJSON() throws {
        let error = try #require(validationError("SKANConversionValueUpdated", Data(#"{"fine_value":64,"lock_window":false}"#.utf8)))
        #expect(error.kind == .invalidValue)
        #expect(error.field == "fine_value")
        #expect(error.rule == "range_0_63")
        #expect(error.message.contains("63"))
    }

    @Test("revenue is non-negative and has a transaction id")
    func revenue() throws {
        let refund = RevenueRecorded(device: Samples.iosDevice, revenue: try Samples.money("-1.00"), kind: .iap, transactionID: "t")
        expectBroken(refund, field: "revenue.amount", rule: "non_negative")
        let anonymous = RevenueRecorded(device: Samples.iosDevice, revenue: try Samples.money("1"), kind: .iap, transactionID: nil)
        expectBroken(anonymous, field: "transaction_id", rule: "required", kind: .missingField)
    }

    @Test("identifiers match their platform and format")
    func identifiers() throws {
        var device = Samples.androidDevice
        device.idfa = Samples.idfa
        expectBroken(SessionStarted(device: device), field: "device.idfa", rule: "ios_only")

        device = Samples.iosDevice
        device.gaid = Samples.gaid
        expectBroken(SessionStarted(device: device), field: "device.gaid", rule: "android_only")

        device = Samples.iosDevice
        device.idfa = "not-an-idfa"
        expectBroken(SessionStarted(device: device), field: "device.idfa", rule: "uuid")

        device = Samples.iosDevice
        device.idfa = "00000000-0000-0000-0000-000000000000"  // Google's "no IDFA" value is a UUID too
        #expect(ruleError(SessionStarted(device: device)) == nil)

        device = Samples.androidDevice
        device.attStatus = .denied
        expectBroken(SessionStarted(device: device), field: "device.att_status", rule: "ios_only")
    }

    @Test("opens need the device's IP and user agent; IPs are checked")
    func network() throws {
        var device = Samples.iosDevice
        device.ip = "203.0.113.300"
        expectBroken(SessionStarted(device: device), field: "device.ip", rule: "ip_address")
        device.ip = nil
        expectBroken(SessionStarted(device: device), field: "device.ip", rule: "required", kind: .missingField)
        // A purchase reported by a backend may lack them.
        #expect(ruleError(RevenueRecorded(device: device, revenue: try Samples.money("1"), kind: .iap, transactionID: "t")) == nil)
        device = Samples.iosDevice
        device.userAgent?.locale = ""
        expectBroken(SessionStarted(device: device), field: "device.user_agent.locale", rule: "non_empty")
        device = Samples.iosDevice
        device.userAgent?.deviceModel = "iPhone\r\nX-Evil: 1"
        expectBroken(SessionStarted(device: device), field: "device.user_agent.device_model", rule: "no_control_characters")
    }

    // Google App Conversion Tracking API, "User-Agent components": the parts are written into
    // `name/version (os version; locale; model; Build/build)`, so what the request builder would
    // refuse at send time is refused when the event is appended.
    @Test("user agent parts: no structuring characters, build without its Build/ prefix (Google App Conversion Tracking API)")
    func userAgentParts() throws {
        let broken: [(WritableKeyPath<UserAgentParts, String>, String, String)] = [
            (\.appName, "My App", "app_name"), (\.appName, "App/2", "app_name"), (\.appVersion, "1.0 (beta)", "app_version"),
            (\.osName, "iOS;", "os_name"), (\.osVersion, "17)", "os_version"), (\.locale, "en US", "locale"),
            (\.deviceModel, "iPhone (15)", "device_model"), (\.deviceModel, "Téléphone", "device_model"),
        ]
        for (path, value, field) in broken {
            var device = Samples.iosDevice
            device.userAgent?[keyPath: path] = value
            expectBroken(SessionStarted(device: device), field: "device.user_agent.\(field)", rule: "user_agent_token")
        }
        var device = Samples.iosDevice
        device.userAgent?.build = "Build/21E236"
        expectBroken(SessionStarted(device: device), field: "device.user_agent.build", rule: "build_without_prefix")
        device.userAgent?.build = "21E 236"
        expectBroken(SessionStarted(device: device), field: "device.user_agent.build", rule: "user_agent_token")
        // Google App Conversion Tracking API: the app User-Agent ends with "Build/" and the OS build.
        device.userAgent?.build = nil
        expectBroken(SessionStarted(device: device), field: "device.user_agent.build", rule: "required", kind: .missingField)
        // Spaces are part of a model or an OS name.
        device.userAgent?.build = "21E236"
        device.userAgent?.deviceModel = "Pixel 8"
        device.userAgent?.osName = "Android TV"
        #expect(ruleError(SessionStarted(device: device)) == nil)
    }

    @Test("tokens are non-empty and iOS-only; referrers Android-only")
    func firstOpenParts() throws {
        var event = try Samples.firstOpen()
        event.adServicesToken?.token = ""
        expectBroken(event, field: "adservices_token.token", rule: "non_empty")
        expectBroken(AdServicesTokenReceived(token: AdServicesToken(token: "", issuedAt: Samples.launch)), field: "token", rule: "non_empty")
        // Apple AdServices attribution API: "a Base64 encoded string" (the provider's builder would
        // refuse anything else).
        for bad in ["adservices-token", "QUJD RA==", "QUJDR", "QU=JDRA=", "QUJDRA=", "===="] {
            expectBroken(AdServicesTokenReceived(token: AdServicesToken(token: bad, issuedAt: Samples.launch)), field: "token", rule: "base64")
        }
        for good in ["QUJDRA==", "QUJDRA", "QUJDRE8=", "a+b/"] {
            #expect(ruleError(AdServicesTokenReceived(token: AdServicesToken(token: good, issuedAt: Samples.launch))) == nil, "\(good)")
        }

        event = try Samples.androidFirstOpen()
        event.adServicesToken = AdServicesToken(token: "dG9rZW4=", issuedAt: Samples.launch)
        expectBroken(event, field: "adservices_token", rule: "ios_only")

        event = try Samples.firstOpen()
        event.installReferrer = InstallReferrer(referrerURL: "utm_source=x")
        expectBroken(event, field: "install_referrer", rule: "android_only")

        event = try Samples.firstOpen()
        event.deepLink = DeepLink(url: "no scheme here")
        expectBroken(event, field: "deep_link.url", rule: "url")
        expectBroken(DeepLinkOpened(link: DeepLink(url: nil, gclid: "abc")), field: "url", rule: "required", kind: .missingField)
    }

    @Test("custom event data holds primitives or arrays of primitives")
    func customData() {
        let nested = InAppEventRecorded(device: Samples.iosDevice, name: "x", customData: ["k": .array([.array([])])])
        expectBroken(nested, field: "custom_data.k", rule: "primitive_or_array_of_primitives")
        let null = InAppEventRecorded(device: Samples.iosDevice, name: "x", customData: ["k": .null])
        expectBroken(null, field: "custom_data.k", rule: "primitive_or_array_of_primitives")
        expectBroken(InAppEventRecorded(device: Samples.iosDevice, name: ""), field: "name", rule: "non_empty")
    }

    @Test("iAd details are an object, or an error code, never both")
    func iAd() {
        expectBroken(IAdAttributionDetailsReceived(details: .object([:]), errorCode: 1), field: "details", rule: "details_xor_error_code")
        expectBroken(IAdAttributionDetailsReceived(), field: "details", rule: "details_xor_error_code")
        expectBroken(IAdAttributionDetailsReceived(details: .string("x")), field: "details", rule: "json_object")
        #expect(ruleError(IAdAttributionDetailsReceived(errorCode: IAdAttributionDetailsReceived.errorLimitAdTracking)) == nil)
    }

    @Test("a consent change names a status")
    func consent() {
        expectBroken(TrackingConsentChanged(idfa: Samples.idfa), field: "att_status", rule: "status_required")
    }

    // Branch v1/open server-to-server guide: `user_agent` is REQUIRED, "the user agent of the
    // device": a recorded one must be text an open can carry.
    @Test("the device's own user agent is printable ASCII, not blank, at most 1024 characters")
    func deviceUserAgent() {
        expectBroken(DeviceUserAgentRecorded(userAgent: ""), field: "user_agent", rule: "non_empty")
        expectBroken(DeviceUserAgentRecorded(userAgent: "  "), field: "user_agent", rule: "non_blank")
        expectBroken(DeviceUserAgentRecorded(userAgent: "Mozilla/5.0\r\nX: 1"), field: "user_agent", rule: "printable_ascii")
        expectBroken(DeviceUserAgentRecorded(userAgent: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 – 1)"), field: "user_agent",
                     rule: "printable_ascii")
        expectBroken(DeviceUserAgentRecorded(userAgent: String(repeating: "a", count: 1025)), field: "user_agent",
                     rule: "max_1024_characters")
        #expect(ruleError(DeviceUserAgentRecorded(userAgent: String(repeating: "a", count: 1024))) == nil)
        var erased = Samples.deviceUserAgentRecorded
        erased.userAgent = nil
        expectBroken(erased, field: "user_agent", rule: "required", kind: .missingField)
    }

    @Test("a send's kind is one its provider offers, about a device stream")
    func sendRequested() throws {
        let good = try #require(try Samples.all().compactMap { $0 as? SendRequested }.first)
        var event = good
        event.provider = .branch
        expectBroken(event, field: "kind", rule: "kind_offered_by_provider")
        event = good
        event.deviceStreamID = StreamID.send(id: Samples.sendID)
        expectBroken(event, field: "device_stream_id", rule: "device_stream")
        event = good
        event.parameters = ["Ad Event": "1"]
        expectBroken(event, field: #"parameters["Ad Event"]"#, rule: "parameter_name")
        event = good
        event.idempotencyKey = ""
        expectBroken(event, field: "idempotency_key", rule: "non_empty")
    }

    @Test("recorded requests never hold a credential in clear")
    func credentials() {
        var event = Samples.sendAttempted()
        event.request.url = "https://www.googleadservices.com/pagead/conversion/app/1.0?dev_token=live-token&rdid=x"
        expectBroken(event, field: "request.url", rule: "credential_not_redacted")

        event = Samples.sendAttempted()
        event.request.url = "https://api2.branch.io/v1/open"
        event.request.body = RecordedBody(bytes: Data(#"{"branch_key":"REDACTED","branch_secret":"secret_live_x"}"#.utf8))
        expectBroken(event, field: "request.body", rule: "credential_not_redacted")
        event.request.body = RecordedBody(bytes: Data(#"{"branch_key":"REDACTED","branch_secret":"REDACTED"}"#.utf8))
        #expect(ruleError(event) == nil)

        event = Samples.sendAttempted()
        event.request.headers?.append(HTTPHeader("Authorization", "Bearer abc"))
        expectBroken(event, field: "request.headers[2].value", rule: "credential_not_redacted")
    }

    @Test("attempts, statuses, URLs, headers and rule ids are checked")
    func sendShapes() {
        var attempt = Samples.sendAttempted()
        attempt.attempt = 0
        expectBroken(attempt, field: "attempt", rule: "min_1")
        attempt = Samples.sendAttempted()
        attempt.request.url = "ftp://example.com/x"
        expectBroken(attempt, field: "request.url", rule: "http_url")
        attempt = Samples.sendAttempted()
        attempt.request.headers = [HTTPHeader("X-Test", "a\r\nInjected: yes")]
        expectBroken(attempt, field: "request.headers[0].value", rule: "header_value")
        attempt = Samples.sendAttempted()
        attempt.request.headers = nil
        expectBroken(attempt, field: "request.headers", rule: "required", kind: .missingField)

        let response = ResponseReceived(attempt: 1, status: 99, headers: [], body: nil, latencyMilliseconds: 3)
        expectBroken(response, field: "status", rule: "range_100_599")
        let badBody = ResponseReceived(
            attempt: 1, status: 200, headers: [], body: RecordedBody(encoding: .base64, content: "***"), latencyMilliseconds: 3)
        expectBroken(badBody, field: "body.content", rule: "base64")
        expectBroken(
            ResponseReceived(attempt: 1, status: 200, headers: [], body: nil, latencyMilliseconds: -1), field: "latency_ms", rule: "min_0")

        expectBroken(RetryScheduled(attempt: 1, rule: "Apple 404", notBefore: Samples.later), field: "rule", rule: "rule_id")
        expectBroken(SendFailed(attempt: 0, rule: "x"), field: "attempt", rule: "min_1")
        expectBroken(SendCancelled(reason: ""), field: "reason", rule: "rule_id")
    }

    @Test("a decision is consistent: winner, won candidate, organic flag, positions")
    func decisions() throws {
        let good = try Samples.attributionDecided()
        var event = good
        event.organic = true
        expectBroken(event, field: "organic", rule: "organic_iff_no_winner")

        event = good
        event.candidates[0].outcome = .tieLost
        expectBroken(event, field: "candidates", rule: "winner_is_won_candidate")

        event = good
        event.candidates[1].outcome = .won
        expectBroken(event, field: "candidates", rule: "winner_is_won_candidate")

        event = good
        event.winner = nil
        event.organic = true
        expectBroken(event, field: "candidates[0].outcome", rule: "no_won_candidate_when_organic")

        event = good
        event.inputPositions = [10, 10]
        expectBroken(event, field: "input_positions[1]", rule: "ascending")
        event.inputPositions = [0]
        expectBroken(event, field: "input_positions[0]", rule: "min_1")
        event.inputPositions = []
        expectBroken(event, field: "input_positions", rule: "non_empty")

        event = good
        event.supersedes = event.decisionID
        expectBroken(event, field: "supersedes", rule: "not_self")

        event = good
        event.candidates[1].touch.adEventID = "ae-2"
        expectBroken(event, field: "candidates[1].ad_event_id", rule: "google_only")
    }

    @Test("erasures name a device stream; postbacks are JSON objects")
    func erasureAndPostbacks() throws {
        expectBroken(
            ErasureCompleted(deviceStreamID: StreamID.send(id: Samples.sendID), requestedBy: "support", requestedAt: Samples.launch),
            field: "device_stream_id", rule: "device_stream")
        expectBroken(
            SKANPostbackReceived(raw: "[1]", forwardingNetwork: "n", receivedAt: Samples.launch), field: "raw", rule: "json_object")
        expectBroken(
            SKANPostbackReceived(raw: "{}", forwardingNetwork: "", receivedAt: Samples.launch), field: "forwarding_network",
            rule: "non_empty")
    }
}
