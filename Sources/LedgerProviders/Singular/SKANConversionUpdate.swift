/// A new conversion value from Singular, checked: what ``SKANDeviceState/applyConversionUpdate(_:at:)``
/// records. Encodes with the answer's keys.
public struct SKANConversionUpdate: Sendable, Hashable, Codable {
    /// `conversion_value`: the fine value, 0...63.
    public var conversionValue: Int
    /// `skan_updated_coarse_value`, when given.
    public var coarseValue: SKANCoarseValue?
    /// `skan_updated_lock_window_value`: lock the current window.
    public var lockWindow: Bool
    /// `postback_sequence_index`: the window Singular computed (0...2), when given. Informational:
    /// the snippet records the update in the window it computes itself.
    public var postbackSequenceIndex: Int?

    /// Checks the values as the snippet's `validateValues` does ("Illegal values"): fine 0...63,
    /// coarse 0...2, and `postback_sequence_index` 0...2. Throws an `invalidRequest`
    /// ``ProviderError`` naming the field (`range_0_63` / `range_0_2`).
    public init(
        conversionValue: Int, coarseValue: Int? = nil, lockWindow: Bool = false, postbackSequenceIndex: Int? = nil
    ) throws(ProviderError) {
        try self.init(
            conversionValue: conversionValue, coarse: coarseValue, lockWindow: lockWindow,
            postbackSequenceIndex: postbackSequenceIndex, kind: .invalidRequest)
    }

    init(
        conversionValue: Int, coarse: Int?, lockWindow: Bool, postbackSequenceIndex: Int?, kind: ProviderError.Kind
    ) throws(ProviderError) {
        guard (0...63).contains(conversionValue) else {
            throw SingularRules.illegal(kind, "conversion_value", "range_0_63", "\(conversionValue) is not in 0...63")
        }
        var coarseValue: SKANCoarseValue?
        if let coarse {
            guard let value = SKANCoarseValue(rawValue: coarse) else {
                throw SingularRules.illegal(kind, "skan_updated_coarse_value", "range_0_2", "\(coarse) is not in 0...2")
            }
            coarseValue = value
        }
        if let postbackSequenceIndex, !(0...2).contains(postbackSequenceIndex) {
            throw SingularRules.illegal(
                kind, "postback_sequence_index", "range_0_2", "\(postbackSequenceIndex) is not in 0...2")
        }
        self.conversionValue = conversionValue
        self.coarseValue = coarseValue
        self.lockWindow = lockWindow
        self.postbackSequenceIndex = postbackSequenceIndex
    }

    enum CodingKeys: String, CodingKey {
        case conversionValue = "conversion_value"
        case coarseValue = "skan_updated_coarse_value"
        case lockWindow = "skan_updated_lock_window_value"
        case postbackSequenceIndex = "postback_sequence_index"
    }
}

/// What ``SKANDeviceState/applyConversionUpdate(_:at:)`` did.
public enum SKANUpdateOutcome: String, Sendable, Hashable, Codable {
    /// Recorded in p0: fine and coarse values set, previous values kept.
    case appliedP0 = "applied_p0"
    /// Recorded in p1: coarse value set, previous kept.
    case appliedP1 = "applied_p1"
    /// Recorded in p2: coarse value set, previous kept.
    case appliedP2 = "applied_p2"
    /// The window was already locked: Apple ignores the update, so only the last-call timestamp
    /// moves (the call to SKAdNetwork did happen).
    case ignoredWindowLocked = "ignored_window_locked"
    /// 35 days or more after the first call: the snippet does not update any more.
    case ignoredWindowOver = "ignored_window_over"
}

/// What ``SKANDeviceState/addRevenue(_:currency:isAdMonetization:at:)`` did.
public enum SKANRevenueOutcome: String, Sendable, Hashable, Codable {
    /// Added to the total and to p0's total.
    case addedInP0 = "added_p0"
    /// Added to the total and to p1's total.
    case addedInP1 = "added_p1"
    /// Added to the total and to p2's total.
    case addedInP2 = "added_p2"
    /// Added to the total only: no window is open (over, or not registered yet) — the snippet's
    /// `case -1`.
    case addedToTotalOnly = "added_total_only"
    /// Ignored: the amount is zero (`amount == 0`).
    case ignoredZeroAmount = "ignored_zero_amount"
    /// Ignored: no currency (`!currency`; a blank currency counts as none).
    case ignoredMissingCurrency = "ignored_missing_currency"
}

/// Helpers for Singular's errors.
enum SingularRules {
    static func illegal(_ kind: ProviderError.Kind, _ field: String, _ rule: String, _ detail: String) -> ProviderError {
        ProviderError(
            kind, provider: .singular, field: field, rule: rule,
            message: "Illegal values: \(field) \(detail) (Singular SKAdNetwork 4 implementation guide, validateValues).")
    }

    static func fail(_ kind: ProviderError.Kind, _ field: String, _ rule: String, _ message: String) -> ProviderError {
        ProviderError(kind, provider: .singular, field: field, rule: rule, message: message)
    }
}
