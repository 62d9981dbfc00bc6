import Foundation

/// Exponential back-off, the one formula the retry rules share.
public enum Backoff {
    /// `base * 2^(attempt-1)`, capped at `cap`. `attempt` below 1 counts as 1; the exponent stops
    /// at 30 (beyond it only the cap matters).
    public static func exponential(attempt: Int, base: TimeInterval, cap: TimeInterval = .infinity) -> TimeInterval {
        let exponent = max(0, min(attempt - 1, 30))
        return min(cap, base * Double(1 << exponent))
    }
}
