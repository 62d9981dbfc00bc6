import Foundation
import LedgerProviders
import Synchronization

/// Branch's server-to-server `POST /v1/open` (seed 003), faked.
///
/// - A device is recognised by any of `hardware_id`, `ios_vendor_id`, `google_advertising_id` in
///   the JSON body, or by the `randomized_bundle_token` it carries.
/// - A new device's first open gets a new `randomized_device_token` and, with
///   `server_to_server_identity: true`, a new `randomized_bundle_token` ("Branch returns a new
///   identity value in any request that does not set randomized_bundle_token").
/// - A later open of a known device with `server_to_server_identity` must carry that token: when it
///   does not, the anomaly `missing_randomized_bundle_token` is noted and — as Branch does — a new
///   identity is issued; a different token is noted as `wrong_randomized_bundle_token`.
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

    init() {}

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
        answer(request) { request in open(request) }
    }

    private static func text(_ value: Any?) -> String? {
        switch value {
        case let text as String: text.isEmpty ? nil : text
        case let number as NSNumber: number.stringValue
        default: nil
        }
    }

    private static func flag(_ value: Any?) -> Bool {
        switch value {
        case let flag as Bool: flag
        case let text as String: text == "true"
        case let number as NSNumber: number.boolValue
        default: false
        }
    }

    private func open(_ request: RecordedRequest) -> FakeReply {
        guard let body = request.jsonObject() else {
            note(request, "json_body", "the body must be a JSON object (seed 003)")
            return .respond(400, json: #"{"error":{"code":400,"message":"Invalid JSON"}}"#)
        }
        for key in ["branch_key", "branch_secret"] where Self.text(body[key]) == nil {
            note(request, "missing_parameter", "\(key) is required (seed 003)")
            return .respond(400, json: #"{"error":{"code":400,"message":"Missing \#(key)"}}"#)
        }
        if request.headerValue("X-IP-Override") == nil {
            note(request, "missing_header", "X-IP-Override (the device's public IP) is required (seed 003)")
        }
        let ids = ["hardware_id", "ios_vendor_id", "google_advertising_id"].compactMap { Self.text(body[$0])?.lowercased() }
        let sentToken = Self.text(body["randomized_bundle_token"])
        let identity = Self.flag(body["server_to_server_identity"])
        let firstSession = body["first_session"].map { Self.flag($0) }
        if ids.isEmpty && sentToken == nil {
            note(request, "no_device_id", "no hardware_id, ios_vendor_id, google_advertising_id or token")
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
                             "a later open of a known device must carry randomized_bundle_token \(issued) (seed 003)"))
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
                    linkIdentifier: Self.text(body["link_identifier"])))
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
