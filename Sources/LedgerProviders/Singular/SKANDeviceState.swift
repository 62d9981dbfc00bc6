import Foundation

/// One device's SKAdNetwork 4 state, as Singular's snippet keeps it in `NSUserDefaults` and as its
/// `getSkanDetails` dictionary reports it (Singular SKAdNetwork 4 implementation guide): the state
/// the conversion value request carries. A projection over the event store fills it with
/// ``register(at:)``, ``addRevenue(_:currency:isAdMonetization:at:)`` and
/// ``applyConversionUpdate(_:at:)``.
///
/// Encodes with the snippet's keys (`skan_current_conversion_value`, `p0_coarse`, …); absent
/// values are absent keys, as `setValue:nil` removes them. Timestamps are whole Unix seconds.
/// Money is `Decimal` (the snippet's `floatValue` sums lose cents; these do not).
public struct SKANDeviceState: Sendable, Hashable, Codable {
    /// `skan_current_conversion_value`: the fine value, 0...63.
    public var conversionValue: Int?
    /// `prev_fine_value`: the fine value before the last p0 update.
    public var previousFineValue: Int?
    /// `p0_coarse`.
    public var p0Coarse: SKANCoarseValue?
    /// `p1_coarse`.
    public var p1Coarse: SKANCoarseValue?
    /// `p2_coarse`.
    public var p2Coarse: SKANCoarseValue?
    /// `p0_prev_coarse_value`.
    public var p0PreviousCoarse: SKANCoarseValue?
    /// `p1_prev_coarse_value`.
    public var p1PreviousCoarse: SKANCoarseValue?
    /// `p2_prev_coarse_value`.
    public var p2PreviousCoarse: SKANCoarseValue?
    /// `p0_window_lock`: when an update locked p0 (Unix seconds).
    public var p0WindowLock: Int64?
    /// `p1_window_lock`.
    public var p1WindowLock: Int64?
    /// `p2_window_lock`.
    public var p2WindowLock: Int64?
    /// `skan_total_revenue_by_currency`: all IAP (non-ad) revenue, by currency.
    public var totalRevenueByCurrency: [String: Decimal]
    /// `skan_total_admon_revenue_by_currency`: all ad-monetization revenue, by currency.
    public var totalAdMonRevenueByCurrency: [String: Decimal]
    /// `p0_total_iap_revenue`.
    public var p0TotalIAPRevenue: [String: Decimal]
    /// `p1_total_iap_revenue`.
    public var p1TotalIAPRevenue: [String: Decimal]
    /// `p2_total_iap_revenue`.
    public var p2TotalIAPRevenue: [String: Decimal]
    /// `p0_total_admon_revenue`.
    public var p0TotalAdMonRevenue: [String: Decimal]
    /// `p1_total_admon_revenue`.
    public var p1TotalAdMonRevenue: [String: Decimal]
    /// `p2_total_admon_revenue`.
    public var p2TotalAdMonRevenue: [String: Decimal]
    /// `skan_first_call_to_skadnetwork_timestamp` (Unix seconds).
    public var firstCallTimestamp: Int64?
    /// `skan_last_call_to_skadnetwork_timestamp` (Unix seconds).
    public var lastCallTimestamp: Int64?

    /// A device that never called SKAdNetwork: everything absent.
    public init() {
        totalRevenueByCurrency = [:]
        totalAdMonRevenueByCurrency = [:]
        p0TotalIAPRevenue = [:]
        p1TotalIAPRevenue = [:]
        p2TotalIAPRevenue = [:]
        p0TotalAdMonRevenue = [:]
        p1TotalAdMonRevenue = [:]
        p2TotalAdMonRevenue = [:]
    }

    /// Whether ``register(at:)`` ran: the snippet's `getFirstSkanCallTimestamp != 0`.
    public var isRegistered: Bool { (firstCallTimestamp ?? 0) != 0 }

    /// The window at `now`, by the snippet's rule (``SKANWindow``); `.over` when unregistered,
    /// as the snippet computes from a first-call timestamp of 0.
    public func window(at now: Date) -> SKANWindow {
        SKANWindow(firstCallTimestamp: firstCallTimestamp ?? 0, now: now)
    }

    /// The lock timestamp recorded for `window`.
    public func windowLock(_ window: SKANWindow) -> Int64? {
        switch window {
        case .p0: p0WindowLock
        case .p1: p1WindowLock
        case .p2: p2WindowLock
        case .over: nil
        }
    }

    /// The current coarse value of `window`.
    public func coarse(_ window: SKANWindow) -> SKANCoarseValue? {
        switch window {
        case .p0: p0Coarse
        case .p1: p1Coarse
        case .p2: p2Coarse
        case .over: nil
        }
    }

    enum CodingKeys: String, CodingKey {
        case conversionValue = "skan_current_conversion_value"
        case previousFineValue = "prev_fine_value"
        case p0Coarse = "p0_coarse"
        case p1Coarse = "p1_coarse"
        case p2Coarse = "p2_coarse"
        case p0PreviousCoarse = "p0_prev_coarse_value"
        case p1PreviousCoarse = "p1_prev_coarse_value"
        case p2PreviousCoarse = "p2_prev_coarse_value"
        case p0WindowLock = "p0_window_lock"
        case p1WindowLock = "p1_window_lock"
        case p2WindowLock = "p2_window_lock"
        case totalRevenueByCurrency = "skan_total_revenue_by_currency"
        case totalAdMonRevenueByCurrency = "skan_total_admon_revenue_by_currency"
        case p0TotalIAPRevenue = "p0_total_iap_revenue"
        case p1TotalIAPRevenue = "p1_total_iap_revenue"
        case p2TotalIAPRevenue = "p2_total_iap_revenue"
        case p0TotalAdMonRevenue = "p0_total_admon_revenue"
        case p1TotalAdMonRevenue = "p1_total_admon_revenue"
        case p2TotalAdMonRevenue = "p2_total_admon_revenue"
        case firstCallTimestamp = "skan_first_call_to_skadnetwork_timestamp"
        case lastCallTimestamp = "skan_last_call_to_skadnetwork_timestamp"
    }

    /// Decodes the stored form; absent revenue objects are empty.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init()
        conversionValue = try c.decodeIfPresent(Int.self, forKey: .conversionValue)
        previousFineValue = try c.decodeIfPresent(Int.self, forKey: .previousFineValue)
        p0Coarse = try c.decodeIfPresent(SKANCoarseValue.self, forKey: .p0Coarse)
        p1Coarse = try c.decodeIfPresent(SKANCoarseValue.self, forKey: .p1Coarse)
        p2Coarse = try c.decodeIfPresent(SKANCoarseValue.self, forKey: .p2Coarse)
        p0PreviousCoarse = try c.decodeIfPresent(SKANCoarseValue.self, forKey: .p0PreviousCoarse)
        p1PreviousCoarse = try c.decodeIfPresent(SKANCoarseValue.self, forKey: .p1PreviousCoarse)
        p2PreviousCoarse = try c.decodeIfPresent(SKANCoarseValue.self, forKey: .p2PreviousCoarse)
        p0WindowLock = try c.decodeIfPresent(Int64.self, forKey: .p0WindowLock)
        p1WindowLock = try c.decodeIfPresent(Int64.self, forKey: .p1WindowLock)
        p2WindowLock = try c.decodeIfPresent(Int64.self, forKey: .p2WindowLock)
        let money: (CodingKeys) throws -> [String: Decimal] = {
            try c.decodeIfPresent([String: Decimal].self, forKey: $0) ?? [:]
        }
        totalRevenueByCurrency = try money(.totalRevenueByCurrency)
        totalAdMonRevenueByCurrency = try money(.totalAdMonRevenueByCurrency)
        p0TotalIAPRevenue = try money(.p0TotalIAPRevenue)
        p1TotalIAPRevenue = try money(.p1TotalIAPRevenue)
        p2TotalIAPRevenue = try money(.p2TotalIAPRevenue)
        p0TotalAdMonRevenue = try money(.p0TotalAdMonRevenue)
        p1TotalAdMonRevenue = try money(.p1TotalAdMonRevenue)
        p2TotalAdMonRevenue = try money(.p2TotalAdMonRevenue)
        firstCallTimestamp = try c.decodeIfPresent(Int64.self, forKey: .firstCallTimestamp)
        lastCallTimestamp = try c.decodeIfPresent(Int64.self, forKey: .lastCallTimestamp)
    }

    /// Encodes with the snippet's keys; absent values and empty revenue objects are left out, as
    /// `getSkanDetails` leaves out keys never written.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(conversionValue, forKey: .conversionValue)
        try c.encodeIfPresent(previousFineValue, forKey: .previousFineValue)
        try c.encodeIfPresent(p0Coarse, forKey: .p0Coarse)
        try c.encodeIfPresent(p1Coarse, forKey: .p1Coarse)
        try c.encodeIfPresent(p2Coarse, forKey: .p2Coarse)
        try c.encodeIfPresent(p0PreviousCoarse, forKey: .p0PreviousCoarse)
        try c.encodeIfPresent(p1PreviousCoarse, forKey: .p1PreviousCoarse)
        try c.encodeIfPresent(p2PreviousCoarse, forKey: .p2PreviousCoarse)
        try c.encodeIfPresent(p0WindowLock, forKey: .p0WindowLock)
        try c.encodeIfPresent(p1WindowLock, forKey: .p1WindowLock)
        try c.encodeIfPresent(p2WindowLock, forKey: .p2WindowLock)
        for (key, value) in [
            (CodingKeys.totalRevenueByCurrency, totalRevenueByCurrency),
            (.totalAdMonRevenueByCurrency, totalAdMonRevenueByCurrency),
            (.p0TotalIAPRevenue, p0TotalIAPRevenue), (.p1TotalIAPRevenue, p1TotalIAPRevenue),
            (.p2TotalIAPRevenue, p2TotalIAPRevenue), (.p0TotalAdMonRevenue, p0TotalAdMonRevenue),
            (.p1TotalAdMonRevenue, p1TotalAdMonRevenue), (.p2TotalAdMonRevenue, p2TotalAdMonRevenue),
        ] where !value.isEmpty {
            try c.encode(value, forKey: key)
        }
        try c.encodeIfPresent(firstCallTimestamp, forKey: .firstCallTimestamp)
        try c.encodeIfPresent(lastCallTimestamp, forKey: .lastCallTimestamp)
    }
}
