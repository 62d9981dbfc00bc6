import Foundation
import LedgerProviders
import Synchronization

/// Singular's SKAdNetwork 4 conversion value API (Singular SKAdNetwork 4 implementation guide), faked:
/// `GET /api/v2/conversion_value`.
///
/// Every request is checked against the document first; a bad one is answered as the document
/// says Singular answers errors — `200 {"status":"error","reason":…}` with its reasons — and
/// noted (rule in parentheses):
/// - method `GET` (`wrong_method`, `405`) with no body ("Não forneça um corpo de pedido",
///   `body_not_allowed`, `400`: the document gives no answer for it);
/// - `p` `iOS` ("Unknown platform error - non-iOS platform", `platform_ios`);
/// - the required parameters `a`, `i`, `v`, `app_v`, `n`, `idfv` and the SKAN timestamps present,
///   no parameter the document does not name, each well formed: `idfa`/`idfv` UUIDs, fine values
///   0–63, coarse values 0–2, timestamps whole seconds (last not before first), revenues JSON
///   objects of currency → amount ("Conversion management: Invalid parameter %x given":
///   `missing_parameter`, `unknown_parameter`, `invalid_parameter`);
/// - `a` the configured SDK key ("Não use a chave da API de relatório, pois isso resultará em
///   dados rejeitados": "Conversion management: Conversion model not found for app: %x",
///   `wrong_credential`).
///
/// A valid request gets a deliberately simple conversion model, so tests can predict every answer:
/// - fine value: `min(63, requests seen for this idfv)` (sessions and events alike, this one
///   included);
/// - coarse value by revenue (`skan_total_revenue_by_currency` plus
///   `skan_total_admon_revenue_by_currency`, all currencies summed): `0` none, `1` below
///   ``highRevenueThreshold``, `2` at or above;
/// - `postback_sequence_index` by the time since `skan_first_call_to_skadnetwork_timestamp` on the
///   fake's clock: `0` before 48 h, `1` before 7 days, `2` before 35 days (Singular SKAdNetwork 4 implementation
///   guide's windows), and
///   "Invalid measurement period: 3" from 35 days on;
/// - `skan_updated_lock_window_value` always `false`.
///
/// Answers `{"conversion_value":…,"skan_updated_coarse_value":…,"postback_sequence_index":…,
/// "skan_updated_lock_window_value":false,"status":"ok"}`. Other errors on demand:
/// `singular.enqueue(.singularError("…"))`.
public final class FakeSingular: FakeProvider {
    /// Which provider this fakes.
    public let provider = Provider.singular
    /// Requests, script, anomalies, delay.
    public let recorder = FakeRecorder()

    private struct Model {
        var seen: [String: Int] = [:]
        var highRevenueThreshold: Double = 10
        var now: @Sendable () -> Date = { Date() }
    }

    private let model = Mutex(Model())
    private let sdkKey: String

    init(sdkKey: String) {
        self.sdkKey = sdkKey
    }

    /// The revenue (summed over currencies) from which the coarse value is `2` (high). Default 10.
    public var highRevenueThreshold: Double { model.withLock { $0.highRevenueThreshold } }

    /// Sets ``highRevenueThreshold``.
    public func setHighRevenueThreshold(_ threshold: Double) { model.withLock { $0.highRevenueThreshold = threshold } }

    /// The clock for the measurement windows (default: the wall clock), so tests with an injected
    /// clock get the windows they expect.
    public func setClock(_ now: @escaping @Sendable () -> Date) { model.withLock { $0.now = now } }

    /// Requests the model counted for this idfv.
    public func eventsSeen(idfv: String) -> Int { model.withLock { $0.seen[idfv.uppercased()] ?? 0 } }

    /// Forgets counts; keeps the threshold and the clock.
    public func resetModel() { model.withLock { $0.seen = [:] } }

    func handle(_ request: RecordedRequest) -> FakeReply {
        answer(request, check: check, model: conversionValue)
    }

    private static func error(_ reason: String) -> FakeReply {
        .respond(200, json: #"{"status":"error","reason":\#(jsonString(reason))}"#)
    }

    private static func invalidParameter(_ rule: String, _ name: String, _ detail: String) -> FakeRefusal {
        FakeRefusal(
            rule: rule, detail: "\(name): \(detail) (Singular SKAdNetwork 4 implementation guide)",
            reply: error("Conversion management: Invalid parameter \(name) given"))
    }

    /// The required query parameters ("Parâmetros necessários"; the IDFA only when the user allowed
    /// tracking).
    static let required = [
        "a", "p", "i", "v", "app_v", "n", "idfv", "skan_first_call_to_skadnetwork_timestamp",
        "skan_last_call_to_skadnetwork_timestamp",
    ]
    static let fineValues = ["skan_current_conversion_value", "prev_fine_value"]
    static let coarseValues = [
        "p0_coarse", "p1_coarse", "p2_coarse", "p0_prev_coarse_value", "p1_prev_coarse_value", "p2_prev_coarse_value",
    ]
    static let revenues = [
        "skan_total_revenue_by_currency", "skan_total_admon_revenue_by_currency", "p0_total_iap_revenue", "p1_total_iap_revenue",
        "p2_total_iap_revenue", "p0_total_admon_revenue", "p1_total_admon_revenue", "p2_total_admon_revenue",
    ]
    static let timestamps = [
        "p0_window_lock", "p1_window_lock", "p2_window_lock", "skan_first_call_to_skadnetwork_timestamp",
        "skan_last_call_to_skadnetwork_timestamp",
    ]
    /// Every parameter the Singular SKAdNetwork 4 implementation guide names.
    static let known = Set(required + ["idfa"] + fineValues + coarseValues + revenues + timestamps)

    func check(_ request: RecordedRequest) -> FakeRefusal? {
        guard request.method == "GET" else { return .wrongMethod(request, expected: "GET", document: "Singular SKAdNetwork 4 implementation guide") }
        guard request.body.isEmpty else {
            return FakeRefusal(
                rule: "body_not_allowed", detail: "the request has no body, only query parameters (Singular SKAdNetwork 4 implementation guide)",
                reply: .text(400, "body_not_allowed: GET with query parameters only (Singular SKAdNetwork 4 implementation guide)"))
        }
        let names = request.query.map(\.name)
        if let repeated = names.first(where: { name in names.filter { $0 == name }.count > 1 }) {
            return Self.invalidParameter("repeated_parameter", repeated, "given more than once")
        }
        if let unknown = names.first(where: { !Self.known.contains($0) }) {
            return Self.invalidParameter("unknown_parameter", unknown, "not a parameter of the conversion value API")
        }
        if request.queryValue("p") != "iOS" {
            return FakeRefusal(
                rule: "platform_ios", detail: "p must be iOS (Singular SKAdNetwork 4 implementation guide), got '\(request.queryValue("p") ?? "")'",
                reply: Self.error("Unknown platform error - non-iOS platform"))
        }
        for name in Self.required where FakeChecks.isBlank(request.queryValue(name)) {
            return Self.invalidParameter("missing_parameter", name, "required")
        }
        if request.queryValue("a") != sdkKey {
            return FakeRefusal(
                rule: "wrong_credential", detail: "a is not the configured SDK key (Singular SKAdNetwork 4 implementation guide)",
                reply: Self.error("Conversion management: Conversion model not found for app: \(request.queryValue("i") ?? "")"))
        }
        return checkValues(request)
    }

    private func checkValues(_ request: RecordedRequest) -> FakeRefusal? {
        for name in ["idfa", "idfv"] {
            if let id = request.queryValue(name), !FakeChecks.isUUID(id) {
                return Self.invalidParameter("invalid_parameter", name, "must be a UUID, got '\(id)'")
            }
        }
        for (names, range) in [(Self.fineValues, 0...63), (Self.coarseValues, 0...2)] {
            for name in names {
                if let text = request.queryValue(name), !(FakeChecks.isInteger(text) && Int(text).map(range.contains) == true) {
                    return Self.invalidParameter("invalid_parameter", name, "must be an integer in \(range), got '\(text)'")
                }
            }
        }
        for name in Self.timestamps {
            if let text = request.queryValue(name), !(FakeChecks.isInteger(text) && !text.hasPrefix("-")) {
                return Self.invalidParameter("invalid_parameter", name, "must be a Unix timestamp in seconds, got '\(text)'")
            }
        }
        let first = Int64(request.queryValue("skan_first_call_to_skadnetwork_timestamp") ?? "") ?? 0
        let last = Int64(request.queryValue("skan_last_call_to_skadnetwork_timestamp") ?? "") ?? 0
        guard last >= first else {
            return Self.invalidParameter(
                "invalid_parameter", "skan_last_call_to_skadnetwork_timestamp", "the last call cannot come before the first")
        }
        for name in Self.revenues {
            guard let text = request.queryValue(name) else { continue }
            let members = FakeJSON.parse(Data(text.utf8))?.object
            guard let members, !members.isEmpty,
                members.allSatisfy({ $0.key.count == 3 && $0.key.allSatisfy(\.isUppercase) && $0.value.number != nil }),
                FakeChecks.jsonNumberTokens(text).allSatisfy(FakeChecks.isPlainDecimal)
            else {
                return Self.invalidParameter("invalid_parameter", name, "must be a JSON object of currency → amount, got '\(text)'")
            }
        }
        return nil
    }

    private func conversionValue(_ request: RecordedRequest) -> FakeReply {
        let idfv = (request.queryValue("idfv") ?? "").uppercased()
        let revenue =
            Self.sum(request.queryValue("skan_total_revenue_by_currency"))
            + Self.sum(request.queryValue("skan_total_admon_revenue_by_currency"))
        let first = request.queryValue("skan_first_call_to_skadnetwork_timestamp").flatMap { Double($0) }
        enum Decision {
            case error(String)
            case value(fine: Int, coarse: Int, index: Int)
        }
        let decision = model.withLock { model -> Decision in
            var index = 0
            if let first {
                let elapsed = model.now().timeIntervalSince1970 - first
                switch elapsed {
                case ..<(48 * 3_600): index = 0
                case ..<(7 * 86_400): index = 1
                case ..<(35 * 86_400): index = 2
                default: return .error("Invalid measurement period: 3")
                }
            }
            let count = (model.seen[idfv] ?? 0) + 1
            model.seen[idfv] = count
            let coarse = revenue <= 0 ? 0 : (revenue < model.highRevenueThreshold ? 1 : 2)
            return .value(fine: min(63, count), coarse: coarse, index: index)
        }
        switch decision {
        case .error(let reason):
            return Self.error(reason)
        case .value(let fine, let coarse, let index):
            return .respond(
                200,
                json: #"{"conversion_value":\#(fine),"skan_updated_coarse_value":\#(coarse),"#
                    + #""postback_sequence_index":\#(index),"skan_updated_lock_window_value":false,"status":"ok"}"#)
        }
    }

    /// The sum of a revenue object's amounts (`{"USD":9.99,"EUR":1}` → 10.99); 0 when absent or
    /// unreadable.
    static func sum(_ json: String?) -> Double {
        guard let json, let members = FakeJSON.parse(Data(json.utf8))?.object else { return 0 }
        return members.values.reduce(0) { $0 + ($1.number ?? 0) }
    }
}
