import LedgerDomain

/// A touch a provider reported, with what the rule needs beyond the touch itself.
public struct TouchCandidate: Sendable, Hashable, Codable {
    /// The touch (source, click or view, time, campaign ids).
    public var touch: AttributionTouch
    /// Apple's `conversionType` was `PreOrder` (longer windows).
    public var isPreOrder: Bool
    /// The log position of the answer that reported it.
    public var position: Int64
    /// The source certified the touch inside its window without saying when (Apple's standard
    /// payload has no `clickDate`): the rule places it at the window's start, so any dated click
    /// in the window outranks it.
    public var undated: Bool

    /// Creates a candidate.
    public init(touch: AttributionTouch, isPreOrder: Bool = false, position: Int64, undated: Bool = false) {
        self.touch = touch
        self.isPreOrder = isPreOrder
        self.position = position
        self.undated = undated
    }

    enum CodingKeys: String, CodingKey {
        case touch
        case isPreOrder = "pre_order"
        case position
        case undated
    }
}
