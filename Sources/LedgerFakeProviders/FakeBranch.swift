import Foundation
import LedgerProviders
import Synchronization

/// Branch's server-to-server `POST /v1/open` (Branch v1/open server-to-server guide), faked.
///
/// Every request is checked against the document's endpoint specification and body table first; a
/// bad one is refused with `400` and `{"error":{"code":400,"message":…}}` naming the rule (the
/// document gives no error answer), and noted:
/// - method `POST` (`wrong_method`, `405`); headers `content-type: application/json`
///   (`content_type_json`) and `X-IP-Override`, the device's public IP (`missing_header`,
///   `ip_override_public_ip`);
/// - a JSON object body (`json_body`) with only the document's keys (`unknown_parameter`), each of
///   its type (`wrong_type`: booleans are booleans, ids strings, none blank);
/// - `branch_key` and `branch_secret` equal to the configured ones (`wrong_credential`);
///   `server_to_server` `true`; `app_version`, `os` (`Android` or `iOS`), `os_version`,
///   `user_agent` and `is_hardware_id_real` present (`missing_parameter`, `invalid_parameter`);
/// - the device ids by platform (`invalid_parameter`): iOS `hardware_id` with `hardware_id_type`
///   `idfa` (a UUID) or `vendor_id` (the `ios_vendor_id`), no Android ids; Android no iOS ids;
///   `is_hardware_id_real` true exactly with a `hardware_id`; `ad_tracking_enabled` only `true`
///   (omitted under limit-ad-tracking); first-session-only fields not on a later open;
///   `randomized_bundle_token` and `identity` only with `server_to_server_identity`.
///
/// A valid open is answered by the model:
/// - A device is recognised by any of `hardware_id`, `ios_vendor_id`, `google_advertising_id`, or
///   by the `randomized_bundle_token` it carries.
/// - A new device's first open gets a new `randomized_device_token` and, with
///   `server_to_server_identity: true`, a new `randomized_bundle_token` ("Branch returns a new
///   identity value in any request that does not set randomized_bundle_token").
/// - A later open of a known device with `server_to_server_identity` must carry that token: when it
///   does not, the anomaly `missing_randomized_bundle_token` is noted and — as Branch does — a new
///   identity is issued; a different token is noted as `wrong_randomized_bundle_token`.
/// - An `apple_attribution_token` the fake Apple knows to be past its 24 h TTL is noted
///   (`apple_attribution_token_expired`: "send to Branch within that time").
/// - The same device opening again within ``rapidRepeatInterval`` of its last accepted open gets
///   `429` ("we will return 429 responses if the app starts sending requests for the same user in
///   rapid succession"); a 429 does not count as an open.
/// - Answers are `200` with `session_id`, the tokens, `link` and `data` — a JSON *string* inside
///   the JSON, as in the document's samples.
public final class FakeBranch: FakeProvider {
    /// Which provider this fakes.
    public let provider = Provider.branch
    /// Requests, script, anomalies, delay.
    public let recorder = FakeRecorder()

    /// The default rapid-repeat window: short enough that tests which space their opens a little
    /// apart never see a 429, long enough that back-to-back opens do. `.zero` turns 429s off.
    public static let defaultRapidRepeatInterval = Duration.milliseconds(200)

    private struct Device {
        var number: Int
        var ids: Set<String>
        var bundleToken: String?
        var deviceToken: String
        var opens = 0
        var lastOpen: ContinuousClock.Instant?
    }

    private struct Model {
        var rapidRepeatInterval = FakeBranch.defaultRapidRepeatInterval
        var retryAfterSeconds: Int?
        var devices: [Device] = []
        var byID: [String: Int] = [:]
        var byToken: [String: Int] = [:]
        var tokenCounter: UInt64 = 0
        var sessionCounter: UInt64 = 0
    }

    private let model = Mutex(Model())
    private let clock = ContinuousClock()
    private let branchKey: String
    private let branchSecret: String
    private let apple: FakeAppleAdServices

    init(branchKey: String, branchSecret: String, apple: FakeAppleAdServices) {
        self.branchKey = branchKey
        self.branchSecret = branchSecret
        self.apple = apple
    }

    /// The rapid-repeat window in force.
    public var rapidRepeatInterval: Duration { model.withLock { $0.rapidRepeatInterval } }

    /// Sets the rapid-repeat window; `.zero` never answers 429.
    public func setRapidRepeatInterval(_ interval: Duration) { model.withLock { $0.rapidRepeatInterval = interval } }

    /// Adds `Retry-After: <seconds>` to 429 answers (`nil`, the default, sends none).
    public func setRetryAfter(seconds: Int?) { model.withLock { $0.retryAfterSeconds = seconds } }

    /// The number of devices seen.
    public var deviceCount: Int { model.withLock { $0.devices.count } }

    /// The `randomized_bundle_token` issued to the device with this id (hardware id, IDFV or GAID).
    public func bundleToken(forDevice id: String) -> String? {
        model.withLock { model in model.byID[id.lowercased()].flatMap { model.devices[$0].bundleToken } }
    }

    /// Accepted (non-429) opens of the device with this id.
    public func opens(forDevice id: String) -> Int {
        model.withLock { model in model.byID[id.lowercased()].map { model.devices[$0].opens } ?? 0 }
    }

    /// Every `randomized_bundle_token` issued, in order.
    public var issuedBundleTokens: [String] {
        model.withLock { model in model.byToken.sorted { $0.key < $1.key }.map(\.key) }
    }

    /// Forgets devices and tokens; keeps the interval and Retry-After settings.
    public func resetModel() {
        model.withLock { model in
            let interval = model.rapidRepeatInterval
            let retryAfter = model.retryAfterSeconds
            model = Model()
            model.rapidRepeatInterval = interval
            model.retryAfterSeconds = retryAfter
        }
    }

    func handle(_ request: RecordedRequest) -> FakeReply {
        answer(request, check: check, model: open)
    }

    /// The body's keys in the Branch v1/open server-to-server guide's table (and `model`, in both of its examples), by JSON
    /// kind.
    static let stringKeys: Set<String> = [
        "branch_key", "branch_secret", "app_version", "os", "user_agent", "hardware_id", "hardware_id_type", "ios_vendor_id",
        "google_advertising_id", "local_ip", "link_identifier", "universal_link_url", "android_app_link_url",
        "install_referrer_extras", "google_search_install_referrer", "apple_attribution_token", "search_ad_encoded",
        "randomized_bundle_token", "identity", "local_url", "referrer_gclid", "gbraid", "custom_param_1", "custom_param_2",
        "custom_param_3", "model",
    ]
    /// The body's boolean keys.
    static let boolKeys: Set<String> = [
        "server_to_server", "is_hardware_id_real", "ad_tracking_enabled", "facebook_app_link_checked", "first_session",
        "server_to_server_identity", "tracking_disabled", "disable_ad_network_callouts",
    ]
    /// The body's integer keys.
    static let integerKeys: Set<String> = ["screen_height", "screen_width", "clicked_referrer_ts", "install_begin_ts"]
    /// "iOS ONLY" keys.
    static let iOSOnly = ["hardware_id_type", "ios_vendor_id", "apple_attribution_token", "search_ad_encoded", "gbraid"]
    /// "ANDROID ONLY" keys.
    static let androidOnly = [
        "google_advertising_id", "advertising_ids", "install_referrer_extras", "google_search_install_referrer",
        "clicked_referrer_ts", "install_begin_ts", "referrer_gclid",
    ]
    /// Keys to "only include in the app's first session".
    static let firstSessionOnly = [
        "install_referrer_extras", "google_search_install_referrer", "clicked_referrer_ts", "install_begin_ts",
        "search_ad_encoded", "local_url",
    ]

    private static func refuse(_ rule: String, _ detail: String) -> FakeRefusal {
        FakeRefusal(
            rule: rule, detail: detail + " (Branch v1/open server-to-server guide)",
            reply: .respond(400, json: #"{"error":{"code":400,"message":\#(jsonString("\(rule): \(detail)"))}}"#))
    }

    func check(_ request: RecordedRequest) -> FakeRefusal? {
        guard request.method == "POST" else { return .wrongMethod(request, expected: "POST", document: "Branch v1/open server-to-server guide") }
        guard request.rawQuery.isEmpty else { return Self.refuse("unknown_parameter", "v1/open takes no query") }
        let contentType = request.headerValue("Content-Type")?.lowercased() ?? ""
        guard contentType == "application/json" || contentType.hasPrefix("application/json;") else {
            return Self.refuse("content_type_json", "the header content-type: application/json is required, got '\(contentType)'")
        }
        guard let ip = request.headerValue("X-IP-Override"), !FakeChecks.isBlank(ip) else {
            return Self.refuse("missing_header", "X-IP-Override (the device's public IP) is required")
        }
        guard FakeChecks.isPublicIP(ip) else {
            return Self.refuse("ip_override_public_ip", "X-IP-Override must be the device's public IP address, got '\(ip)'")
        }
        guard let body = FakeJSON.parse(request.body)?.object else {
            return Self.refuse("json_body", "the body must be a JSON object")
        }
        return checkTypes(body) ?? checkRequired(body) ?? checkDevice(body)
    }

    private func checkTypes(_ body: [String: FakeJSON]) -> FakeRefusal? {
        for (key, value) in body.sorted(by: { $0.key < $1.key }) {
            let fits: Bool
            if Self.stringKeys.contains(key) {
                fits = value.text != nil
            } else if Self.boolKeys.contains(key) {
                fits = value.bool != nil
            } else if Self.integerKeys.contains(key) {
                fits = value.isWholeNumber
            } else if key == "os_version" {
                fits = value.text != nil || value.number != nil  // "23" or, as in the Android example, 26
            } else if key == "advertising_ids" {
                fits = value.object.map { !$0.isEmpty && $0.values.allSatisfy { $0.text != nil } } ?? false
            } else {
                return Self.refuse("unknown_parameter", "\(key) is not a v1/open body parameter")
            }
            guard fits else { return Self.refuse("wrong_type", "\(key) has the wrong type or is blank") }
        }
        return nil
    }

    private func checkRequired(_ body: [String: FakeJSON]) -> FakeRefusal? {
        for key in [
            "branch_key", "branch_secret", "server_to_server", "app_version", "os", "os_version", "user_agent", "is_hardware_id_real",
        ] where body[key] == nil {
            return Self.refuse("missing_parameter", "\(key) is REQUIRED")
        }
        guard body["branch_key"]?.string == branchKey else {
            return Self.refuse("wrong_credential", "branch_key is not the configured key")
        }
        guard body["branch_secret"]?.string == branchSecret else {
            return Self.refuse("wrong_credential", "branch_secret is not the configured secret")
        }
        guard body["server_to_server"]?.bool == true else {
            return Self.refuse("invalid_parameter", "server_to_server: \"Always set to true\"")
        }
        guard let os = body["os"]?.string, ["Android", "iOS"].contains(os) else {
            return Self.refuse("invalid_parameter", "os \"Only accepts Android or iOS\"")
        }
        if body["ad_tracking_enabled"]?.bool == false {
            return Self.refuse("invalid_parameter", "ad_tracking_enabled: omit it when limit-ad-tracking applies, never false")
        }
        if body["randomized_bundle_token"] != nil || body["identity"] != nil, body["server_to_server_identity"]?.bool != true {
            return Self.refuse(
                "invalid_parameter", "randomized_bundle_token and identity are used only with server_to_server_identity true")
        }
        if let ip = body["local_ip"]?.string, FakeChecks.ipBytes(ip) == nil {
            return Self.refuse("invalid_parameter", "local_ip must be an IP address, got '\(ip)'")
        }
        for key in ["universal_link_url", "android_app_link_url", "local_url"] {
            if let url = body[key]?.string, !FakeChecks.isWebURL(url) {
                return Self.refuse("invalid_parameter", "\(key) must be a web URL, got '\(url)'")
            }
        }
        for key in ["screen_height", "screen_width"] where (body[key]?.number ?? 1) <= 0 {
            return Self.refuse("invalid_parameter", "\(key) must be a positive pixel count")
        }
        if body["first_session"]?.bool == false, let key = Self.firstSessionOnly.first(where: { body[$0] != nil }) {
            return Self.refuse("invalid_parameter", "\(key): only include in the app's first session")
        }
        return nil
    }

    private func checkDevice(_ body: [String: FakeJSON]) -> FakeRefusal? {
        let hardwareID = body["hardware_id"]?.string
        if body["is_hardware_id_real"]?.bool != (hardwareID != nil) {
            return Self.refuse("invalid_parameter", "is_hardware_id_real must be true exactly when hardware_id is populated")
        }
        if body["os"]?.string == "iOS" {
            if let key = Self.androidOnly.first(where: { body[$0] != nil }) {
                return Self.refuse("invalid_parameter", "\(key) is ANDROID ONLY")
            }
            let vendorID = body["ios_vendor_id"]?.string
            if let vendorID, !FakeChecks.isUUID(vendorID) {
                return Self.refuse("invalid_parameter", "ios_vendor_id must be the IDFV, got '\(vendorID)'")
            }
            switch (hardwareID, body["hardware_id_type"]?.string) {
            case (nil, nil): break
            case (let id?, "idfa"?) where FakeChecks.isUUID(id): break
            case (let id?, "vendor_id"?) where id == vendorID: break
            default:
                return Self.refuse(
                    "invalid_parameter",
                    "hardware_id_type confirms hardware_id: idfa (the IDFA) or vendor_id (the IDFV in ios_vendor_id), both or neither")
            }
        } else {
            if let key = Self.iOSOnly.first(where: { body[$0] != nil }) {
                return Self.refuse("invalid_parameter", "\(key) is iOS ONLY")
            }
            if let gaid = body["google_advertising_id"]?.string, !FakeChecks.isUUID(gaid) {
                return Self.refuse("invalid_parameter", "google_advertising_id must be the GAID, got '\(gaid)'")
            }
        }
        return nil
    }

    private func open(_ request: RecordedRequest) -> FakeReply {
        let body = FakeJSON.parse(request.body)?.object ?? [:]
        let ids = ["hardware_id", "ios_vendor_id", "google_advertising_id"].compactMap { body[$0]?.text?.lowercased() }
        let sentToken = body["randomized_bundle_token"]?.text
        let identity = body["server_to_server_identity"]?.bool ?? false
        let firstSession = body["first_session"]?.bool
        if ids.isEmpty && sentToken == nil {
            note(request, "no_device_id", "no hardware_id, ios_vendor_id, google_advertising_id or token")
        }
        if let token = body["apple_attribution_token"]?.text, apple.isPastTTL(token: token) {
            note(request, "apple_attribution_token_expired", "apple_attribution_token is past its 24 h TTL (Branch v1/open server-to-server guide)")
        }

        enum Decision {
            case tooMany(Int?)
            case answer(String)
        }
        var anomalies: [(String, String)] = []
        let decision = model.withLock { model -> Decision in
            let now = clock.now
            var index: Int?
            for id in ids where index == nil { index = model.byID[id] }
            if index == nil, let sentToken {
                index = model.byToken[sentToken]
                if index == nil {
                    anomalies.append(("unknown_randomized_bundle_token", "token \(sentToken) was never issued"))
                }
            }
            var isNewDevice = false
            if let known = index {
                let device = model.devices[known]
                if let last = device.lastOpen, model.rapidRepeatInterval > .zero,
                    last.duration(to: now) < model.rapidRepeatInterval
                {
                    return .tooMany(model.retryAfterSeconds)
                }
            } else {
                model.tokenCounter += 1
                model.devices.append(
                    Device(
                        number: model.devices.count, ids: [], bundleToken: nil,
                        deviceToken: Self.token(model.tokenCounter, salt: 1)))
                index = model.devices.count - 1
                isNewDevice = true
            }
            let i = index!
            var device = model.devices[i]
            if identity {
                if let issued = device.bundleToken {
                    if sentToken == nil {
                        anomalies.append(
                            ("missing_randomized_bundle_token",
                             "a later open of a known device must carry randomized_bundle_token \(issued) (Branch v1/open server-to-server guide)"))
                        model.tokenCounter += 1
                        device.bundleToken = Self.token(model.tokenCounter, salt: 0)
                    } else if sentToken != issued {
                        anomalies.append(
                            ("wrong_randomized_bundle_token", "carried \(sentToken ?? ""), issued \(issued)"))
                    }
                } else if let sentToken, isNewDevice {
                    // A token the fake never issued: adopt it so later opens are checked against it.
                    device.bundleToken = sentToken
                } else {
                    model.tokenCounter += 1
                    device.bundleToken = Self.token(model.tokenCounter, salt: 0)
                }
                if let token = device.bundleToken { model.byToken[token] = i }
            }
            for id in ids {
                device.ids.insert(id)
                model.byID[id] = i
            }
            device.opens += 1
            device.lastOpen = now
            model.devices[i] = device
            model.sessionCounter += 1
            let isFirst = firstSession ?? (device.opens == 1)
            return .answer(
                Self.response(
                    session: Self.token(model.sessionCounter, salt: 2), bundleToken: identity ? device.bundleToken : nil,
                    deviceToken: device.deviceToken, firstSession: isFirst,
                    linkIdentifier: body["link_identifier"]?.text))
        }
        for (rule, detail) in anomalies { note(request, rule, detail) }
        switch decision {
        case .tooMany(let retryAfter):
            return .respond(
                429, json: #"{"error":{"code":429,"message":"Too many requests"}}"#,
                headers: retryAfter.map { [Header("Retry-After", String($0))] } ?? [])
        case .answer(let json):
            return .respond(200, json: json)
        }
    }

    /// An 18-digit numeric id like the document's `791040498773585647`.
    static func token(_ n: UInt64, salt: UInt64) -> String {
        String(800_000_000_000_000_000 + salt * 10_000_000_000_000_000 + n)
    }

    static func response(
        session: String, bundleToken: String?, deviceToken: String, firstSession: Bool, linkIdentifier: String?
    ) -> String {
        var data: String
        if let linkIdentifier {
            data =
                #"{"+clicked_branch_link":true,"+is_first_session":\#(firstSession),"+match_guaranteed":true,"#
                + #""+click_timestamp":\#(Int(Date().timeIntervalSince1970)),"~campaign":"fake_campaign","#
                + #""~channel":"fake_channel","~feature":"marketing","~id":\#(jsonString(linkIdentifier)),"#
                + #""$canonical_url":"https://example.app.link/fake","$deeplink_path":"fake/path"}"#
        } else {
            data = #"{"+clicked_branch_link":false,"+is_first_session":\#(firstSession)}"#
        }
        var fields = [#""session_id":\#(jsonString(session))"#]
        if let bundleToken { fields.append(#""randomized_bundle_token":\#(jsonString(bundleToken))"#) }
        fields.append(#""randomized_device_token":\#(jsonString(deviceToken))"#)
        fields.append(#""link":"https://example.app.link/fake-\#(session)""#)
        fields.append(#""data":\#(jsonString(data))"#)
        return "{" + fields.joined(separator: ",") + "}"
    }
}
