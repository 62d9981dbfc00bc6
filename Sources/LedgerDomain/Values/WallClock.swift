import Foundation
import Synchronization

/// Tells the current wall-clock time. Code that stamps times (`recorded_at`, `not_before`,
/// deadlines) asks a clock instead of calling `Date()`, so tests can fix and move time.
///
/// Named `WallClock`, not `Clock`, so that importing this module never shadows the standard
/// library's `Clock` protocol (used with `ContinuousClock` for sleeping and timeouts).
public protocol WallClock: Sendable {
    /// The current time.
    func now() -> Date
}

/// The system's real time.
public struct SystemClock: WallClock {
    /// Creates the system clock.
    public init() {}

    /// `Date()`.
    public func now() -> Date { Date() }
}

/// A clock that stands still until told otherwise: for tests. Safe to share between tasks.
public final class ManualClock: WallClock {
    private let current: Mutex<Date>

    /// A clock showing `start`.
    public init(_ start: Date) { current = Mutex(start) }

    /// The time it was last set to.
    public func now() -> Date { current.withLock { $0 } }

    /// Sets the time (backwards too: tests of clock skew need it).
    public func set(_ date: Date) { current.withLock { $0 = date } }

    /// Moves the time forward by `interval` seconds (backward when negative).
    public func advance(by interval: TimeInterval) { current.withLock { $0 += interval } }
}

extension Duration {
    /// The duration in seconds, as Foundation's `TimeInterval` (for comparing with `Date`s and
    /// lease lengths).
    public var timeInterval: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
