import Foundation
import LedgerDomain
import LedgerFolds
import LedgerProjections
import LedgerStore

/// Everything the per-device projections know about one device, replayed from its history.
public struct DeviceState: Sendable, Equatable, Codable {
    /// SKAdNetwork 4 (`skan_devices`): windows, conversion values, revenue totals, Singular's answers.
    public var skan: SKANDeviceReducer.State
    /// Apple AdServices tokens (`adservices_tokens`): each token's lookups and Apple's answer.
    public var adServices: AdServicesTokenReducer.State
    /// Branch identity (`branch_identity`): the tokens Branch gave the device.
    public var branch: BranchIdentityReducer.State
    /// Google obligations (`google_obligations`): conversions Google attributed and what was
    /// reported back for them.
    public var google: GoogleObligationReducer.State
    /// The position of the newest event of the device's history that was read (nil: no history).
    public var lastPosition: Int64?
    /// How many events the history held (device, decision and send streams).
    public var eventCount: Int

    /// Creates a state.
    public init(
        skan: SKANDeviceReducer.State, adServices: AdServicesTokenReducer.State, branch: BranchIdentityReducer.State,
        google: GoogleObligationReducer.State, lastPosition: Int64?, eventCount: Int
    ) {
        self.skan = skan
        self.adServices = adServices
        self.branch = branch
        self.google = google
        self.lastPosition = lastPosition
        self.eventCount = eventCount
    }

    enum CodingKeys: String, CodingKey {
        case skan
        case adServices = "adservices"
        case branch, google
        case lastPosition = "last_position"
        case eventCount = "event_count"
    }
}

/// A SKAdNetwork 4 window's name: p0 [0, 48 h), p1 [48 h, 7 d), p2 [7 d, 35 d), then over.
public enum SKANWindowName: String, Sendable, Hashable, Codable, CaseIterable {
    /// The first window: fine and coarse values.
    case p0
    /// The second window: coarse value only.
    case p1
    /// The third window: coarse value only.
    case p2
    /// 35 days or more after registration (or never registered): nothing updates any more.
    case over
}

/// One SKAN 4 window of a device.
public struct SKANWindowValues: Sendable, Hashable, Codable {
    /// The window.
    public var window: SKANWindowName
    /// Its coarse value, if one was set.
    public var coarseValue: SKANCoarseValue?
    /// When an update locked it, if one did.
    public var lockedAt: Date?
    /// In-app purchase revenue counted in it, by currency.
    public var iapRevenue: [String: Decimal]
    /// Ad monetization revenue counted in it, by currency.
    public var adRevenue: [String: Decimal]

    /// Creates window values.
    public init(window: SKANWindowName, coarseValue: SKANCoarseValue?, lockedAt: Date?, iapRevenue: [String: Decimal],
                adRevenue: [String: Decimal]) {
        self.window = window
        self.coarseValue = coarseValue
        self.lockedAt = lockedAt
        self.iapRevenue = iapRevenue
        self.adRevenue = adRevenue
    }

    enum CodingKeys: String, CodingKey {
        case window
        case coarseValue = "coarse_value"
        case lockedAt = "locked_at"
        case iapRevenue = "iap_revenue"
        case adRevenue = "ad_revenue"
    }
}

/// What Singular's conversion-value API last answered for the device: the value the app should
/// set next.
public struct NextConversionValue: Sendable, Hashable, Codable {
    /// The fine value to set (0–63), when Singular gave one.
    public var fineValue: Int?
    /// The coarse value to set, when Singular gave one.
    public var coarseValue: SKANCoarseValue?
    /// Whether to lock the current window.
    public var lockWindow: Bool
    /// Singular's `postback_sequence_index`.
    public var postbackSequenceIndex: Int?
    /// When the answer was recorded.
    public var answeredAt: Date
    /// Whether the app has since reported setting exactly these values.
    public var confirmedByDevice: Bool

    /// Creates an answer.
    public init(fineValue: Int?, coarseValue: SKANCoarseValue?, lockWindow: Bool, postbackSequenceIndex: Int?, answeredAt: Date,
                confirmedByDevice: Bool) {
        self.fineValue = fineValue
        self.coarseValue = coarseValue
        self.lockWindow = lockWindow
        self.postbackSequenceIndex = postbackSequenceIndex
        self.answeredAt = answeredAt
        self.confirmedByDevice = confirmedByDevice
    }

    enum CodingKeys: String, CodingKey {
        case fineValue = "fine_value"
        case coarseValue = "coarse_value"
        case lockWindow = "lock_window"
        case postbackSequenceIndex = "postback_sequence_index"
        case answeredAt = "answered_at"
        case confirmedByDevice = "confirmed_by_device"
    }
}

/// A device's SKAdNetwork values, as the ledger holds them.
public struct SKANValues: Sendable, Hashable, Codable {
    /// Whether the app registered for SKAdNetwork on this device.
    public var registered: Bool
    /// When it registered (the windows count from here).
    public var registeredAt: Date?
    /// The last SKAdNetwork call (registration or applied update).
    public var lastCallAt: Date?
    /// The window at ``windowAt``.
    public var currentWindow: SKANWindowName
    /// The time the current window was computed for (now, or the as-of time).
    public var windowAt: Date
    /// The current fine conversion value (0–63).
    public var fineValue: Int?
    /// p0, p1 and p2, in order.
    public var windows: [SKANWindowValues]
    /// All in-app purchase revenue counted, by currency.
    public var totalIAPRevenue: [String: Decimal]
    /// All ad monetization revenue counted, by currency.
    public var totalAdRevenue: [String: Decimal]
    /// Singular's latest answer: the next conversion value (nil until Singular answered `ok`).
    public var nextConversionValue: NextConversionValue?
    /// Conversion updates applied.
    public var updatesApplied: Int
    /// Conversion updates not applied, by reason (`ignored_window_locked`, …).
    public var updatesIgnored: [String: Int]

    enum CodingKeys: String, CodingKey {
        case registered
        case registeredAt = "registered_at"
        case lastCallAt = "last_call_at"
        case currentWindow = "current_window"
        case windowAt = "window_at"
        case fineValue = "fine_value"
        case windows
        case totalIAPRevenue = "total_iap_revenue"
        case totalAdRevenue = "total_ad_revenue"
        case nextConversionValue = "next_conversion_value"
        case updatesApplied = "updates_applied"
        case updatesIgnored = "updates_ignored"
    }
}

/// The attribution decisions about a device (stream `decision-<app>/<device>`).
public struct DeviceAttribution: Sendable, Hashable, Codable {
    /// The newest decision, or nil when none was made (yet).
    public var latest: AttributionDecided?
    /// Where the newest decision sits in the log.
    public var position: Int64?
    /// When the ledger recorded it.
    public var decidedAt: Date?
    /// How many decisions the device has had (later ones supersede earlier ones).
    public var decisionCount: Int64

    /// Creates a summary.
    public init(latest: AttributionDecided?, position: Int64?, decidedAt: Date?, decisionCount: Int64) {
        self.latest = latest
        self.position = position
        self.decidedAt = decidedAt
        self.decisionCount = decisionCount
    }

    enum CodingKeys: String, CodingKey {
        case latest, position
        case decidedAt = "decided_at"
        case decisionCount = "decision_count"
    }
}
