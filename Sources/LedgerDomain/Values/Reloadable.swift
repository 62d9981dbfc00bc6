import Synchronization

/// A value a running process may replace while others read it: the configuration `SIGHUP`
/// reloads (API keys, attribution settings, each app's provider credentials).
///
/// Why a box of its own: the HTTP server, the decider and the send worker are values built once at
/// start-up and shared across tasks; each holds one of these instead of the value itself, so a
/// reload swaps what every later read sees without a restart. A read sees either the old value or
/// the new one whole, never a mix.
public final class Reloadable<Value: Sendable>: Sendable {
    private let current: Mutex<Value>

    /// A box holding `value` until ``replace(with:)``.
    public init(_ value: Value) {
        current = Mutex(value)
    }

    /// The value as of this read.
    public var value: Value { current.withLock { $0 } }

    /// Replaces the value every later read sees.
    public func replace(with value: Value) {
        current.withLock { $0 = value }
    }
}
