import Foundation

/// The lookback windows by the names configuration gives them (the apps file and
/// `LEDGER_ATTRIBUTION_SETTINGS`): also ``AttributionWindows``' coding keys, so the two never drift.
public enum AttributionWindowName: String, Sendable, CaseIterable, CodingKey {
    /// Google ad events.
    case googleClick = "google_click"
    /// Apple AdServices taps.
    case appleClick = "apple_click"
    /// Apple AdServices views.
    case appleView = "apple_view"
    /// Apple AdServices taps on a pre-order.
    case applePreOrderClick = "apple_preorder_click"
    /// Apple AdServices views of a pre-order.
    case applePreOrderView = "apple_preorder_view"
    /// Branch link clicks.
    case branchClick = "branch_click"
    /// Legacy iAd taps.
    case iAdClick = "iad_click"

    /// The window's field of ``AttributionWindows``.
    public var field: WritableKeyPath<AttributionWindows, TimeInterval> {
        switch self {
        case .googleClick: \.googleClick
        case .appleClick: \.appleClick
        case .appleView: \.appleView
        case .applePreOrderClick: \.applePreOrderClick
        case .applePreOrderView: \.applePreOrderView
        case .branchClick: \.branchClick
        case .iAdClick: \.iAdClick
        }
    }
}
