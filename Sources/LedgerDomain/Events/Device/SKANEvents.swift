import Foundation

/// The app registered for SKAdNetwork attribution on its first launch: fine value 0, and the start
/// of the SKAN 4 windows (p0 = [0, 48 h), p1 = [48 h, 7 d), p2 = [7 d, 35 d), counted from this
/// event's `occurred_at`). Registering again changes nothing.
///
/// Stream: `device-<app>/<device>`.
public struct SKANRegistered: LedgerEvent {
    /// The stored type name (see ``LedgerEvent/eventType``).
    public static let eventType = "SKANRegistered"
    /// The version of this JSON shape.
    public static let schemaVersion = 1
    /// What the event is about.
    public static let category = EventCategory.device
    /// The category of the streams it is appended to.
    public static let streamCategory = StreamCategory.device
    /// The fields the privacy layer encrypts per device (see ``LedgerEvent/personalFields``).
    public static let personalFields: [String] = []

    /// The SKAdNetwork version the app registered with, e.g. `4.0`, when known.
    public var skanVersion: String?

    /// Creates the event.
    public init(skanVersion: String? = nil) { self.skanVersion = skanVersion }

    enum CodingKeys: String, CodingKey {
        case skanVersion = "skan_version"
    }

    /// A version of at most 16 characters.
    public func validate() throws(RuleViolation) { try Check.text(skanVersion, "skan_version", max: 16) }
}

/// The app updated its SKAdNetwork conversion value (`updatePostbackConversionValue`), typically
/// with what Singular's conversion-value API answered. The SKAN projection applies it to the window
/// it falls in: fine and coarse in p0, coarse only in p1 and p2, ignored in a locked window.
///
/// Stream: `device-<app>/<device>`.
public struct SKANConversionValueUpdated: LedgerEvent {
    /// The stored type name (see ``LedgerEvent/eventType``).
    public static let eventType = "SKANConversionValueUpdated"
    /// The version of this JSON shape.
    public static let schemaVersion = 1
    /// What the event is about.
    public static let category = EventCategory.device
    /// The category of the streams it is appended to.
    public static let streamCategory = StreamCategory.device
    /// The fields the privacy layer encrypts per device (see ``LedgerEvent/personalFields``).
    public static let personalFields: [String] = []

    /// The fine conversion value, 0–63 (counts only in the first window).
    public var fineValue: Int?
    /// The coarse conversion value.
    public var coarseValue: SKANCoarseValue?
    /// Whether the app locked the current window (Apple ignores later updates in it).
    public var lockWindow: Bool

    /// Creates the event.
    public init(fineValue: Int? = nil, coarseValue: SKANCoarseValue? = nil, lockWindow: Bool = false) {
        self.fineValue = fineValue
        self.coarseValue = coarseValue
        self.lockWindow = lockWindow
    }

    enum CodingKeys: String, CodingKey {
        case fineValue = "fine_value"
        case coarseValue = "coarse_value"
        case lockWindow = "lock_window"
    }

    /// A fine value in 0–63, and at least one of fine and coarse.
    public func validate() throws(RuleViolation) {
        guard fineValue != nil || coarseValue != nil else {
            throw RuleViolation(field: "fine_value", rule: "fine_or_coarse_required", message: "An update sets a fine or a coarse value.")
        }
        if let fineValue { try Check.range(fineValue, 0...63, "fine_value") }
    }
}

/// SKAdNetwork 4's coarse conversion values (Singular's 0, 1, 2).
public enum SKANCoarseValue: String, LedgerEnum {
    /// Low (0).
    case low
    /// Medium (1).
    case medium
    /// High (2).
    case high
}
