import Foundation
import LedgerProviders
import Synchronization

/// Singular's SKAdNetwork 4 conversion value API (seed 004), faked:
/// `GET /api/v2/conversion_value`.
///
/// A deliberately simple conversion model, so tests can predict every answer:
/// - fine value: `min(63, requests seen for this idfv)` (sessions and events alike, this one
///   included);
/// - coarse value by revenue (`skan_total_revenue_by_currency` plus
///   `skan_total_admon_revenue_by_currency`, all currencies summed): `0` none, `1` below
///   ``highRevenueThreshold``, `2` at or above;
/// - `postback_sequence_index` by the time since `skan_first_call_to_skadnetwork_timestamp` on the
///   fake's clock: `0` before 48 h, `1` before 7 days, `2` before 35 days (seed 004's windows);
/// - `skan_updated_lock_window_value` always `false`.
///
/// Answers `{"conversion_value":…,"skan_updated_coarse_value":…,"postback_sequence_index":…,
/// "skan_updated_lock_window_value":false,"status":"ok"}`, or — with the document's reasons —
/// `{"status":"error","reason":…}` for a platform other than iOS, a missing parameter, an SDK key
/// other than the configured one, or a request 35 days or more after the first call. Errors on
/// demand: `singular.enqueue(.singularError("…"))`.
public final class FakeSingular: FakeProvider {
    /// Which provider this fakes.
    public let provider = Provider.singular
    /// Requests, script, anomalies, delay.
    public let recorder = FakeRecorder()

    private struct Model {
        var seen: [String: Int] = [:]
        var highRevenueThreshold: Double = 10
        var sdkKey: String?
        var now: @Sendable () -> Date = { Date() }
    }

    private let model = Mutex(Model())

    init() {}

    /// The revenue (summed over currencies) from which the coarse value is `2` (high). Default 10.
    public var highRevenueThreshold: Double { model.withLock { $0.highRevenueThreshold } }

    /// Sets ``highRevenueThreshold``.
    public func setHighRevenueThreshold(_ threshold: Double) { model.withLock { $0.highRevenueThreshold = threshold } }

    /// When set, requests with another `a` get "conversion model not found"; `nil` accepts any key.
    public func setSDKKey(_ key: String?) { model.withLock { $0.sdkKey = key } }

    /// The clock for the measurement windows (default: the wall clock), so tests with an injected
    /// clock get the windows they expect.
    public func setClock(_ now: @escaping @Sendable () -> Date) { model.withLock { $0.now = now } }

    /// Requests the model counted for this idfv.
    public func eventsSeen(idfv: String) -> Int { model.withLock { $0.seen[idfv.uppercased()] ?? 0 } }

    /// Forgets counts; keeps threshold, key and clock.
    public func resetModel() { model.withLock { $0.seen = [:] } }

    func handle(_ request: RecordedRequest) -> FakeReply {
        answer(request) { request in conversionValue(request) }
    }

    private static func error(_ reason: String) -> FakeReply {
        .respond(200, json: #"{"status":"error","reason":\#(jsonString(reason))}"#)
    }

    private func conversionValue(_ request: RecordedRequest) -> FakeReply {
        guard request.queryValue("p") == "iOS" else {
            note(request, "platform_ios", "p must be iOS (seed 004)")
            return Self.error("Unknown platform error - non-iOS platform")
        }
        for name in ["a", "i", "v", "n", "app_v", "idfv"] where (request.queryValue(name) ?? "").isEmpty {
            note(request, "missing_parameter", "\(name) is required (seed 004)")
            return Self.error("Conversion management: Invalid parameter \(name) given")
        }
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
            if let key = model.sdkKey, request.queryValue("a") != key {
                return .error("Conversion management: Conversion model not found for app: \(request.queryValue("i") ?? "")")
            }
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
        guard let json, let object = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any] else {
            return 0
        }
        return object.values.reduce(0) { total, value in
            switch value {
            case let number as NSNumber: total + number.doubleValue
            case let text as String: total + (Double(text) ?? 0)
            default: total
            }
        }
    }
}
