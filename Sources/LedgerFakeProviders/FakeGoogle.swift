import Foundation
import LedgerProviders
import Synchronization

/// Google app conversion tracking (Google App Conversion Tracking API), faked.
///
/// Every request is checked against the document first; a bad one is refused and noted (rule in
/// parentheses), answered as the document answers "a conversion tracking request [that] contained
/// errors" — `{"ad_events": [], "errors": ["CODE"], "attributed": false}` — with status `400` (the
/// document gives no status):
/// - method `POST` (`wrong_method`, `405`); a `POST` without a body and without `Content-Length`
///   is `411` ("our server requires that you explicitly set the Content-Length: 0 header",
///   `content_length_required`); a body is JSON (`Content-Type: application/json`,
///   `content_type_json`) holding only `app_event_data`, an object of strings, numbers without
///   exponent, booleans and arrays of those (`invalid_app_event_data`);
/// - headers `User-Agent` in the app User-Agent form `name/version (os version; ll_CC; device;
///   Build/id; Proxy)` (`missing_header`, `user_agent_format`) and `X-Forwarded-For`, the device's
///   public IP (`missing_header`, `x_forwarded_for_public_ip`);
/// - the required query parameters present and not blank (`missing_parameter`), no parameter
///   the document does not name (`unknown_parameter`), `dev_token` and `link_id` equal to the
///   configured ones (`wrong_credential`), `app_event_type` from the enumeration, `app_event_name`
///   exactly for `custom` (1–64 characters, not a reserved type: `APP_EVENT_NAME_RESERVED_VALUE`),
///   `rdid` a UUID, `id_type` `idfa` on iOS and `advertisingid` on Android (by the User-Agent),
///   `lat` `0`/`1`, `timestamp` Unix seconds with up to six decimals, `value` a plain decimal with
///   `currency_code` (ISO 4217) when not blank (`invalid_parameter` and the parameter's code);
/// - on `cross_network`: `ad_event_id` one this fake issued (`unknown_ad_event_id`), `attributed`
///   `0`/`1`, and otherwise the very request that got the ad event (`not_identical_to_conversion`).
///
/// A valid conversion request is answered by the configured ``Answer`` (default:
/// `.affirmative()`, one UAC ad event in the document's sample shape with a fresh `ad_event_id`);
/// a valid cross-network request with a bare `200`. A second report of the same ad event with the
/// same `attributed` value is answered too, and noted (`repeated_cross_network`).
public final class FakeGoogle: FakeProvider {
    /// How the model answers a conversion request.
    public enum Answer: Sendable, Hashable {
        /// `attributed: true`, one ad event of this `campaign_type` (`UAC`, `Search`, `Display`,
        /// `Video`), fields as in the document's sample for that type.
        case affirmative(campaignType: String = "UAC")
        /// `{"ad_events": [], "errors": [], "attributed": false}`.
        case negative
        /// `attributed: false` with one ad event of this `campaign_type` (shaped as in
        /// ``affirmative(campaignType:)``): Google saw an ad before the conversion but does not
        /// claim it. The ad event is not one Google obliges a report for: a cross-network request
        /// naming it is refused (`ad_event_not_attributed`).
        case unattributed(campaignType: String = "UAC")
        /// `{"ad_events": [], "errors": codes, "attributed": false}`, e.g. `INVALID_CURRENCY_CODE`.
        case errors([String])
        /// A bare status (e.g. `500`, `503`) with a short text body.
        case status(Int)
    }

    /// Which provider this fakes.
    public let provider = Provider.google
    /// Requests, script, anomalies, delay.
    public let recorder = FakeRecorder()

    /// What a conversion request that got an ad event carried: its cross-network report must be
    /// the same request ("identical to the original conversion tracking request").
    private struct Conversion {
        var query: [QueryItem]
        var userAgent: String?
        var forwardedFor: String?
        var body: Data
    }

    private struct Model {
        var defaultAnswer = Answer.affirmative()
        var byRDID: [String: Answer] = [:]
        var issued: [String] = []
        var unclaimed: Set<String> = []
        var conversions: [String: Conversion] = [:]
        var crossNetworkReported: [String: String] = [:]
        var counter = 0
    }

    private let model = Mutex(Model())
    private let devToken: String
    private let linkID: String

    init(devToken: String, linkID: String) {
        self.devToken = devToken
        self.linkID = linkID
    }

    /// The answer for every conversion request without a per-device answer.
    public func setDefaultAnswer(_ answer: Answer) { model.withLock { $0.defaultAnswer = answer } }

    /// The answer for conversion requests with this `rdid`.
    public func setAnswer(_ answer: Answer, forRDID rdid: String) {
        model.withLock { $0.byRDID[rdid.uppercased()] = answer }
    }

    /// Every `ad_event_id` issued in an affirmative answer, in order.
    public var issuedAdEventIDs: [String] { model.withLock { $0.issued } }

    /// The conversion requests received (not cross-network).
    public var conversionRequests: [RecordedRequest] {
        requests.filter { $0.path == GoogleConversionRequestBuilder.conversionPath }
    }

    /// The cross-network attribution requests received.
    public var crossNetworkRequests: [RecordedRequest] {
        requests.filter { $0.path == GoogleConversionRequestBuilder.crossNetworkPath }
    }

    /// Forgets answers, issued ids and reported cross-network decisions.
    public func resetModel() { model.withLock { $0 = Model() } }

    /// The Google App Conversion Tracking API's required query parameters ("Required").
    static let requiredQuery = [
        "dev_token", "link_id", "app_event_type", "rdid", "id_type", "lat", "app_version", "os_version", "sdk_version",
        "timestamp",
    ]
    /// Every query parameter the Google App Conversion Tracking API names for a conversion request (`gbraid` from the
    /// provider-rules digest's facts beyond the providers' documents).
    static let conversionQuery = Set(requiredQuery + ["app_event_name", "value", "currency_code", "gclid", "gbraid"])
    /// Google App Conversion Tracking API's `app_event_type` enumeration.
    static let eventTypes: Set<String> = [
        "first_open", "session_start", "in_app_purchase", "view_item_list", "view_item", "view_search_results", "add_to_cart",
        "ecommerce_purchase", "custom",
    ]

    func handle(_ request: RecordedRequest) -> FakeReply {
        answer(request, check: check) { request in
            request.path == GoogleConversionRequestBuilder.crossNetworkPath ? crossNetwork(request) : conversion(request)
        }
    }

    // MARK: - The document's checks

    private static func refuse(_ rule: String, _ code: String, _ detail: String) -> FakeRefusal {
        FakeRefusal(
            rule: rule, detail: detail + " (Google App Conversion Tracking API)",
            reply: .respond(400, json: #"{"ad_events":[],"errors":[\#(jsonString(code))],"attributed":false}"#))
    }

    func check(_ request: RecordedRequest) -> FakeRefusal? {
        guard request.method == "POST" else {
            return .wrongMethod(request, expected: "POST", document: "Google App Conversion Tracking API")
        }
        if request.body.isEmpty, request.headerValue("Content-Length") == nil, request.headerValue("Transfer-Encoding") == nil {
            return FakeRefusal(
                rule: "content_length_required", detail: "a POST without a body must carry Content-Length: 0 (Google App Conversion Tracking API)",
                reply: .text(411, "Length Required"))
        }
        if let refusal = checkHeaders(request) ?? checkBody(request) ?? checkQuery(request) { return refusal }
        if request.path == GoogleConversionRequestBuilder.crossNetworkPath { return checkCrossNetwork(request) }
        for name in ["ad_event_id", "attributed"] where request.queryValue(name) != nil {
            return Self.refuse("unknown_parameter", "INVALID_PARAMETER", "\(name) belongs to the cross_network request only")
        }
        return nil
    }

    private func checkHeaders(_ request: RecordedRequest) -> FakeRefusal? {
        guard let userAgent = request.headerValue("User-Agent"), !FakeChecks.isBlank(userAgent) else {
            return Self.refuse("missing_header", "MISSING_USER_AGENT", "the User-Agent header is required")
        }
        guard Self.appUserAgentOS(userAgent) != nil else {
            return Self.refuse(
                "user_agent_format", "INVALID_USER_AGENT",
                "User-Agent must be `name/version (os version; ll_CC; device; Build/id; Proxy)`, got '\(userAgent)'")
        }
        guard let forwarded = request.headerValue("X-Forwarded-For"), !FakeChecks.isBlank(forwarded) else {
            return Self.refuse("missing_header", "MISSING_X_FORWARDED_FOR", "the X-Forwarded-For header is required")
        }
        guard FakeChecks.isPublicIP(forwarded) else {
            return Self.refuse(
                "x_forwarded_for_public_ip", "INVALID_X_FORWARDED_FOR",
                "X-Forwarded-For must be the device's public IPv4 or IPv6 address, got '\(forwarded)'")
        }
        return nil
    }

    /// The operating system an app User-Agent names (`iOS`, `Android`, …), or `nil` when it is not
    /// in Google App Conversion Tracking API's form with `; Proxy` (the ledger builds it server side).
    static func appUserAgentOS(_ text: String) -> String? {
        guard let open = text.firstIndex(of: "("), text.hasSuffix("; Proxy)") else { return nil }
        let product = text[..<open]
        guard product.hasSuffix(" ") else { return nil }
        let nameVersion = product.dropLast().split(separator: "/", omittingEmptySubsequences: false)
        guard nameVersion.count == 2, nameVersion.allSatisfy({ !$0.isEmpty && !$0.contains(" ") }) else { return nil }
        let fields = text[text.index(after: open)..<text.index(before: text.endIndex)]
            .split(separator: ";", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard fields.count == 5, fields[4] == "Proxy" else { return nil }
        let osAndVersion = fields[0].split(separator: " ")
        let locale = Array(fields[1])
        guard osAndVersion.count >= 2, !fields[2].isEmpty, fields[3].hasPrefix("Build/"), fields[3].count > 6,
            locale.count == 5, locale[2] == "_", locale[0...1].allSatisfy(\.isLowercase), locale[3...4].allSatisfy(\.isUppercase)
        else { return nil }
        return String(osAndVersion[0])
    }

    private func checkBody(_ request: RecordedRequest) -> FakeRefusal? {
        let contentType = request.headerValue("Content-Type")?.lowercased() ?? ""
        guard contentType.hasPrefix("application/json") else {
            return Self.refuse("content_type_json", "INVALID_CONTENT_TYPE", "Content-Type must be application/json, got '\(contentType)'")
        }
        guard !request.body.isEmpty else { return nil }
        let invalid = Self.refuse(
            "invalid_app_event_data", "INVALID_APP_EVENT_DATA",
            "the body must be {\"app_event_data\": {…}} of strings, numbers (no exponent), booleans and arrays of those, got "
                + request.bodyText.prefix(200))
        guard let members = FakeJSON.parse(request.body)?.object, members.count == 1, let data = members["app_event_data"]?.object
        else { return invalid }
        for value in data.values {
            switch value {
            case .bool, .number, .string: continue
            case .array(let items) where items.allSatisfy(\.isPrimitive): continue
            default: return invalid
            }
        }
        guard FakeChecks.jsonNumberTokens(request.bodyText).allSatisfy(FakeChecks.isPlainDecimal) else { return invalid }
        return nil
    }

    private func checkQuery(_ request: RecordedRequest) -> FakeRefusal? {
        let names = request.query.map(\.name)
        if let repeated = names.first(where: { name in names.filter { $0 == name }.count > 1 }) {
            return Self.refuse("repeated_parameter", "INVALID_PARAMETER", "\(repeated) is given more than once")
        }
        let allowed = request.path == GoogleConversionRequestBuilder.crossNetworkPath
            ? Self.conversionQuery.union(["ad_event_id", "attributed"]) : Self.conversionQuery
        if let unknown = names.first(where: { !allowed.contains($0) }) {
            return Self.refuse("unknown_parameter", "INVALID_PARAMETER", "\(unknown) is not a parameter of the Google App Conversion Tracking API")
        }
        for name in Self.requiredQuery where FakeChecks.isBlank(request.queryValue(name)) {
            return Self.refuse("missing_parameter", "MISSING_\(name.uppercased())", "\(name) is required")
        }
        let value = { (name: String) in request.queryValue(name) ?? "" }
        if value("dev_token") != devToken {
            return Self.refuse("wrong_credential", "INVALID_DEV_TOKEN", "dev_token is not the configured developer token")
        }
        if value("link_id") != linkID {
            return Self.refuse("wrong_credential", "INVALID_LINK_ID", "link_id is not the configured link")
        }
        let type = value("app_event_type")
        guard Self.eventTypes.contains(type) else {
            return Self.refuse("invalid_parameter", "INVALID_APP_EVENT_TYPE", "app_event_type \(type) is not in the enumeration")
        }
        if let refusal = checkEventName(type: type, name: request.queryValue("app_event_name")) { return refusal }
        guard FakeChecks.isUUID(value("rdid")) else {
            return Self.refuse("invalid_parameter", "INVALID_RDID", "rdid must be a UUID, got '\(value("rdid"))'")
        }
        let expectedIDType = Self.appUserAgentOS(request.headerValue("User-Agent") ?? "") == "Android" ? "advertisingid" : "idfa"
        guard value("id_type") == expectedIDType else {
            return Self.refuse(
                "invalid_parameter", "INVALID_ID_TYPE",
                "id_type must be \(expectedIDType) for this device's platform, got '\(value("id_type"))'")
        }
        guard ["0", "1"].contains(value("lat")) else {
            return Self.refuse("invalid_parameter", "INVALID_LAT", "lat must be 0 or 1, got '\(value("lat"))'")
        }
        let timestamp = value("timestamp").split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard FakeChecks.isInteger(String(timestamp[0])), !timestamp[0].hasPrefix("-"),
            timestamp.count == 1 || (1...6).contains(timestamp[1].count) && FakeChecks.isInteger(String(timestamp[1]))
        else {
            return Self.refuse(
                "invalid_parameter", "INVALID_TIMESTAMP",
                "timestamp must be Unix seconds with up to microseconds, got '\(value("timestamp"))'")
        }
        if let amount = request.queryValue("value"), !FakeChecks.isBlank(amount) {
            guard FakeChecks.isPlainDecimal(amount) else {
                return Self.refuse("invalid_parameter", "INVALID_VALUE", "value must be a plain decimal, got '\(amount)'")
            }
            guard let currency = request.queryValue("currency_code"), !FakeChecks.isBlank(currency) else {
                return Self.refuse("missing_parameter", "MISSING_CURRENCY_CODE", "currency_code is required with a value")
            }
        }
        if let currency = request.queryValue("currency_code"),
            currency.count != 3 || !currency.allSatisfy({ $0.isASCII && $0.isUppercase })
        {
            return Self.refuse("invalid_parameter", "INVALID_CURRENCY_CODE", "currency_code must be ISO 4217, got '\(currency)'")
        }
        for name in ["gclid", "gbraid"] where request.queryValue(name).map(FakeChecks.isBlank) == true {
            return Self.refuse("invalid_parameter", "INVALID_\(name.uppercased())", "\(name) must not be blank when given")
        }
        return nil
    }

    private func checkEventName(type: String, name: String?) -> FakeRefusal? {
        guard type == "custom" else {
            guard name == nil else {
                return Self.refuse(
                    "invalid_parameter", "INVALID_APP_EVENT_NAME", "app_event_name names a custom event; app_event_type is \(type)")
            }
            return nil
        }
        guard let name, !FakeChecks.isBlank(name) else {
            return Self.refuse("missing_parameter", "MISSING_APP_EVENT_NAME", "app_event_name is required when app_event_type is custom")
        }
        guard (1...64).contains(name.unicodeScalars.count) else {
            return Self.refuse("invalid_parameter", "INVALID_APP_EVENT_NAME", "app_event_name must be 1 to 64 characters")
        }
        guard !Self.eventTypes.contains(name.lowercased()) else {
            return Self.refuse(
                "invalid_parameter", "APP_EVENT_NAME_RESERVED_VALUE", "app_event_name must not be a value reserved for app_event_type")
        }
        return nil
    }

    private func checkCrossNetwork(_ request: RecordedRequest) -> FakeRefusal? {
        guard let adEventID = request.queryValue("ad_event_id"), !FakeChecks.isBlank(adEventID) else {
            return Self.refuse("missing_parameter", "MISSING_AD_EVENT_ID", "ad_event_id is required on cross_network")
        }
        guard let attributed = request.queryValue("attributed") else {
            return Self.refuse("missing_parameter", "MISSING_ATTRIBUTED", "attributed is required on cross_network")
        }
        guard attributed == "0" || attributed == "1" else {
            return Self.refuse("invalid_parameter", "INVALID_ATTRIBUTED", "attributed must be 0 or 1, got '\(attributed)'")
        }
        if model.withLock({ $0.unclaimed.contains(adEventID) }) {
            return Self.refuse(
                "ad_event_not_attributed", "INVALID_AD_EVENT_ID",
                "ad_event_id \(adEventID) came in an answer with attributed: false; only an affirmative answer obliges a report")
        }
        guard let original = model.withLock({ $0.conversions[adEventID] }) else {
            return Self.refuse("unknown_ad_event_id", "INVALID_AD_EVENT_ID", "ad_event_id \(adEventID) was never issued")
        }
        let query = request.query.filter { $0.name != "ad_event_id" && $0.name != "attributed" }
        let sameQuery = query.sorted { ($0.name, $0.value) < ($1.name, $1.value) }
            == original.query.sorted { ($0.name, $0.value) < ($1.name, $1.value) }
        guard sameQuery, request.headerValue("User-Agent") == original.userAgent,
            request.headerValue("X-Forwarded-For") == original.forwardedFor, request.body == original.body
        else {
            return Self.refuse(
                "not_identical_to_conversion", "INVALID_CROSS_NETWORK_REQUEST",
                "the cross-network request must be identical to the conversion request that got ad_event_id \(adEventID)")
        }
        return nil
    }

    // MARK: - The model

    private func crossNetwork(_ request: RecordedRequest) -> FakeReply {
        let adEventID = request.queryValue("ad_event_id") ?? ""
        let attributed = request.queryValue("attributed") ?? ""
        let earlier = model.withLock { model in
            defer { model.crossNetworkReported[adEventID] = attributed }
            return model.crossNetworkReported[adEventID]
        }
        if earlier == attributed {
            note(request, "repeated_cross_network", "ad_event_id \(adEventID) was already reported attributed=\(attributed)")
        }
        // "A valid cross-network attribution request will always receive a generic 200 response
        // with no response body."
        return .empty(200)
    }

    private func conversion(_ request: RecordedRequest) -> FakeReply {
        let rdid = request.queryValue("rdid")?.uppercased() ?? ""
        let (answer, adEventID) = model.withLock { model -> (Answer, String?) in
            let answer = model.byRDID[rdid] ?? model.defaultAnswer
            if case .unattributed = answer {
                model.counter += 1
                let id = Self.adEventID(model.counter)
                model.unclaimed.insert(id)
                return (answer, id)
            }
            guard case .affirmative = answer else { return (answer, nil) }
            model.counter += 1
            let id = Self.adEventID(model.counter)
            model.issued.append(id)
            model.conversions[id] = Conversion(
                query: request.query, userAgent: request.headerValue("User-Agent"),
                forwardedFor: request.headerValue("X-Forwarded-For"), body: request.body)
            return (answer, id)
        }
        switch answer {
        case .negative:
            return .respond(200, json: #"{"ad_events":[],"errors":[],"attributed":false}"#)
        case .errors(let codes):
            return .respond(
                200, json: #"{"ad_events":[],"errors":[\#(codes.map(jsonString).joined(separator: ","))],"attributed":false}"#)
        case .status(let status):
            return .text(status, "fake google: status \(status)")
        case .affirmative(let campaignType):
            let stamp = Self.adEventTimestamp(before: request.queryValue("timestamp"))
            return .respond(
                200,
                json: #"{"ad_events":[\#(Self.adEvent(id: adEventID ?? "", campaignType: campaignType, timestamp: stamp))],"#
                    + #""errors":[],"attributed":true}"#)
        case .unattributed(let campaignType):
            let stamp = Self.adEventTimestamp(before: request.queryValue("timestamp"))
            return .respond(
                200,
                json: #"{"ad_events":[\#(Self.adEvent(id: adEventID ?? "", campaignType: campaignType, timestamp: stamp))],"#
                    + #""errors":[],"attributed":false}"#)
        }
    }

    /// A 30-character URL-safe id like the document's `Q2owS0VRancwZHk0QlJDdXVMX2U1TQ`, unique per
    /// fake instance and reproducible run to run.
    static func adEventID(_ n: Int) -> String {
        let text = "fake-ad-event-\(n)"
        var id = Data(text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        while id.count < 30 { id += "A" }
        return id
    }

    /// One hour before the conversion's own timestamp (the click precedes the event), keeping its
    /// microseconds; the document's sample value when the request has none.
    static func adEventTimestamp(before timestamp: String?) -> String {
        guard let timestamp else { return "1432681913.123456" }
        let parts = timestamp.split(separator: ".", maxSplits: 1)
        guard let first = parts.first, let seconds = Int64(first), seconds > 3_600 else { return "1432681913.123456" }
        return parts.count > 1 ? "\(seconds - 3_600).\(parts[1])" : "\(seconds - 3_600)"
    }

    /// The document's sample ad event for a campaign type (UAC, Search, Display, Video).
    static func adEvent(id: String, campaignType: String, timestamp: String) -> String {
        var networkType = "Search"
        var networkSubtype = #""GoogleSearch""#
        var videoID = "null"
        var keyword = "null"
        var matchType = "null"
        var placement = "null"
        var adGroupID = "123456789"
        var creativeID = "123456789"
        switch campaignType {
        case "UAC":
            adGroupID = "null"
            creativeID = "null"
        case "Search":
            keyword = #""+space +birds""#
            matchType = #""b""#
        case "Display":
            networkType = "Display"
            networkSubtype = #""mGDN""#
            placement = #""mobile-app::2-343200656""#
        case "Video":
            networkType = "YouTube"
            networkSubtype = #""YouTubeVideos""#
            videoID = #""dQw4w9WgXcQ""#
        default: break
        }
        return #"{"ad_event_id":\#(jsonString(id)),"conversion_metric":"conversion","interaction_type":null,"#
            + #""campaign_type":\#(jsonString(campaignType)),"campaign_id":123456789,"campaign_name":"My App Campaign","#
            + #""ad_type":"ClickToDownload","external_customer_id":123456789,"location":21144,"#
            + #""network_type":"\#(networkType)","network_subtype":\#(networkSubtype),"video_id":\#(videoID),"#
            + #""keyword":\#(keyword),"match_type":\#(matchType),"placement":\#(placement),"#
            + #""ad_group_id":\#(adGroupID),"creative_id":\#(creativeID),"timestamp":\#(timestamp)}"#
    }
}
