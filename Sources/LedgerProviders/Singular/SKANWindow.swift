import Foundation

/// A SKAdNetwork 4 postback window, counted from the first SKAdNetwork call (Singular SKAdNetwork
/// 4 implementation guide, `getCurrentSkanWindow`): p0 = [0, 48 h), p1 = [48 h, 7 d),
/// p2 = [7 d, 35 d), then over.
///
/// The rule is the snippet's, exactly:
/// ```
/// NSInteger timeDiff = now - firstSkanCallTimestamp;   // whole seconds
/// if (timeDiff < firstSkan4WindowInSec)  return 0;     // 48 h
/// if (timeDiff < secondSkan4WindowInSec) return 1;     // 7 d
/// if (timeDiff < thirdSkan4WindowInSec)  return 2;     // 35 d
/// return -1;
/// ```
/// so each edge belongs to the *later* window (48:00:00 is p1), times are whole Unix seconds
/// truncated like `(NSInteger)timeIntervalSince1970`, and a `now` earlier than the first call
/// (a clock that went back) is p0.
public enum SKANWindow: String, Sendable, Hashable, Codable, CaseIterable {
    /// The first window, [0, 48 h): fine and coarse values.
    case p0
    /// The second window, [48 h, 7 d): coarse value only.
    case p1
    /// The third window, [7 d, 35 d): coarse value only.
    case p2
    /// 35 days or more after the first call: nothing updates any more (`isSkanWindowOver`).
    case over

    /// `firstSkan4WindowInSec`: 48 hours.
    public static let firstWindowEnd: Int64 = 3600 * 24 * 2
    /// `secondSkan4WindowInSec`: 7 days.
    public static let secondWindowEnd: Int64 = 3600 * 24 * 7
    /// `thirdSkan4WindowInSec`: 35 days.
    public static let thirdWindowEnd: Int64 = 3600 * 24 * 35

    /// The window `elapsedSeconds` after the first SKAdNetwork call.
    public init(elapsedSeconds: Int64) {
        if elapsedSeconds < Self.firstWindowEnd {
            self = .p0
        } else if elapsedSeconds < Self.secondWindowEnd {
            self = .p1
        } else if elapsedSeconds < Self.thirdWindowEnd {
            self = .p2
        } else {
            self = .over
        }
    }

    /// The window at `now` for a device whose first SKAdNetwork call was at Unix second
    /// `firstCallTimestamp`. As in the snippet, an unregistered device (timestamp 0) is "over".
    public init(firstCallTimestamp: Int64, now: Date) {
        self.init(elapsedSeconds: BranchSingularHTTP.saturatingDifference(BranchSingularHTTP.unixSeconds(now), firstCallTimestamp))
    }

    /// The window at `now` for a device whose first SKAdNetwork call was at `firstCall`; both are
    /// truncated to whole Unix seconds first, as the snippet stores them.
    public init(firstCall: Date, now: Date) {
        self.init(firstCallTimestamp: BranchSingularHTTP.unixSeconds(firstCall), now: now)
    }

    /// The `postback_sequence_index` of this window (0, 1, 2), or `nil` when over.
    public var postbackSequenceIndex: Int? {
        switch self {
        case .p0: 0
        case .p1: 1
        case .p2: 2
        case .over: nil
        }
    }
}

/// A SKAdNetwork 4 coarse conversion value. Singular sends and answers it as an integer
/// ("Coarse value is being sent on requests and responses as an Int": 0 low, 1 medium, 2 high).
public enum SKANCoarseValue: Int, Sendable, Hashable, Codable, CaseIterable {
    /// 0, `SKAdNetworkCoarseConversionValueLow`.
    case low = 0
    /// 1, `SKAdNetworkCoarseConversionValueMedium`.
    case medium = 1
    /// 2, `SKAdNetworkCoarseConversionValueHigh`.
    case high = 2
}
