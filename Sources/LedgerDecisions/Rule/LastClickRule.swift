import Foundation
import LedgerDomain
import LedgerFolds

/// Lookback windows: how long before the trigger a touch may have happened and still get credit.
///
/// The defaults are the providers' documented ones: Apple AdServices 30 days for a tap, 24 hours
/// for a view, pre-orders 90 days (tap) / 61 days (view) (Apple AdServices attribution API); Google
/// 30 days for installs (Google's default install lookback); Branch and legacy iAd 30 days (iAd:
/// "tapped within 30 days before download", Apple Search Ads Attribution API). Configurable per
/// app.
public struct AttributionWindows: Sendable, Hashable, Codable {
    /// Google ad events (Google reports no interaction type: every ad event counts as a click).
    public var googleClick: TimeInterval
    /// Apple AdServices taps.
    public var appleClick: TimeInterval
    /// Apple AdServices views (impressions).
    public var appleView: TimeInterval
    /// Apple AdServices taps on a pre-order.
    public var applePreOrderClick: TimeInterval
    /// Apple AdServices views of a pre-order.
    public var applePreOrderView: TimeInterval
    /// Branch link clicks (`+click_timestamp`).
    public var branchClick: TimeInterval
    /// Legacy iAd taps (`iad-click-date`).
    public var iAdClick: TimeInterval

    /// One day, in seconds.
    public static let day: TimeInterval = 86_400

    /// The documented defaults.
    public init(
        googleClick: TimeInterval = 30 * day, appleClick: TimeInterval = 30 * day, appleView: TimeInterval = day,
        applePreOrderClick: TimeInterval = 90 * day, applePreOrderView: TimeInterval = 61 * day,
        branchClick: TimeInterval = 30 * day, iAdClick: TimeInterval = 30 * day
    ) {
        self.googleClick = googleClick
        self.appleClick = appleClick
        self.appleView = appleView
        self.applePreOrderClick = applePreOrderClick
        self.applePreOrderView = applePreOrderView
        self.branchClick = branchClick
        self.iAdClick = iAdClick
    }

    typealias CodingKeys = AttributionWindowName

    /// The window that applies to `candidate`.
    public func window(for candidate: TouchCandidate) -> TimeInterval {
        switch (candidate.touch.source, candidate.touch.interaction) {
        case (.google, _): googleClick
        case (.appleAdServices, .click): candidate.isPreOrder ? applePreOrderClick : appleClick
        case (.appleAdServices, .view): candidate.isPreOrder ? applePreOrderView : appleView
        case (.branch, _): branchClick
        case (.appleIAd, _): iAdClick
        }
    }
}

/// The last-click rule, version `last-click-v1`.
///
/// 0. An undated touch (see ``TouchCandidate/undated``) is placed at the start of its window.
/// 1. A touch is eligible when `trigger − window ≤ time ≤ trigger` (its window, see
///    ``AttributionWindows``); otherwise it loses as `outside_window` (a touch stamped after the
///    trigger cannot have caused it).
/// 2. Clicks beat views: when an eligible click exists, every eligible view loses as
///    `view_beaten_by_click`.
/// 3. Among the eligible touches of the winning kind, the latest wins; earlier ones lose as
///    `earlier_click` (views that lose to a later view too: the rule is "last touch").
/// 4. Ties (the same time to the microsecond) break by source, in this order: Apple AdServices,
///    Google, Branch, legacy iAd (the order of how directly each source observed the touch: Apple
///    and Google report their own ad platform's record, Branch a link click, iAd a retired API);
///    then the smallest campaign id, ad event id and creative id, compared as text. Losers of the
///    tie: `tie_lost`.
/// 5. No eligible touch: organic.
///
/// Pure: the same candidates, trigger time and windows always give the same decision, which is
/// what lets an auditor recompute a recorded decision.
public enum LastClickRule {
    /// This rule's version, stored in every decision it makes.
    public static let version = "last-click-v1"

    /// The tie-break order of sources (first wins).
    public static let sourcePriority: [AttributionSource] = [.appleAdServices, .google, .branch, .appleIAd]

    /// The rule's answer.
    public struct Outcome: Sendable, Hashable {
        /// The winning touch, `nil` for organic.
        public var winner: AttributionTouch?
        /// Every candidate with what became of it, in the order given.
        public var candidates: [AttributionCandidate]
    }

    /// Decides among `candidates` for a trigger at `triggerTime`.
    public static func decide(triggerTime: Date, candidates given: [TouchCandidate], windows: AttributionWindows) -> Outcome {
        let candidates = given.map { candidate in
            guard candidate.undated else { return candidate }
            var placed = candidate
            placed.touch.time = triggerTime.addingTimeInterval(-windows.window(for: candidate))
            return placed
        }
        let eligible = candidates.indices.filter { index in
            let time = candidates[index].touch.time
            return time <= triggerTime && time >= triggerTime.addingTimeInterval(-windows.window(for: candidates[index]))
        }
        let clicks = eligible.filter { candidates[$0].touch.interaction == .click }
        let pool = clicks.isEmpty ? eligible : clicks
        let winnerIndex = pool.max { lhs, rhs in ranks(candidates[lhs].touch, below: candidates[rhs].touch) }
        var outcomes = candidates.map { AttributionCandidate(touch: $0.touch, outcome: .outsideWindow) }
        for index in eligible {
            let touch = candidates[index].touch
            if index == winnerIndex {
                outcomes[index].outcome = .won
            } else if !clicks.isEmpty, touch.interaction == .view {
                outcomes[index].outcome = .viewBeatenByClick
            } else if let winnerIndex, touch.time == candidates[winnerIndex].touch.time {
                outcomes[index].outcome = .tieLost
            } else {
                outcomes[index].outcome = .earlierClick
            }
        }
        return Outcome(winner: winnerIndex.map { candidates[$0].touch }, candidates: outcomes)
    }

    /// True when `lhs` loses to `rhs`: earlier, or as late and after it in the tie-break order.
    static func ranks(_ lhs: AttributionTouch, below rhs: AttributionTouch) -> Bool {
        if lhs.time != rhs.time { return lhs.time < rhs.time }
        let left = sourcePriority.firstIndex(of: lhs.source) ?? sourcePriority.count
        let right = sourcePriority.firstIndex(of: rhs.source) ?? sourcePriority.count
        if left != right { return left > right }
        let leftKey = [lhs.campaignID ?? "", lhs.adEventID ?? "", lhs.creativeID ?? ""]
        let rightKey = [rhs.campaignID ?? "", rhs.adEventID ?? "", rhs.creativeID ?? ""]
        return leftKey.lexicographicallyPrecedes(rightKey) == false && leftKey != rightKey
    }
}
