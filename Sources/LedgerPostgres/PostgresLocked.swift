import Foundation

/// A value behind a lock that ThreadSanitizer can follow: the pool's state.
///
/// On Linux, `Synchronization.Mutex` hands a contended lock over through the kernel
/// (`FUTEX_LOCK_PI`): the thread that receives it runs no instrumented atomic operation, so
/// ThreadSanitizer sees no order between the two holders and reports their accesses, both under
/// the lock, as a race. The pool's waiters contend for its lock by design, and `ops/test-tsan`
/// failed that way about one run in eight (`PostgresPool.checkout`). `NSLock` is a pthread
/// mutex, whose lock and unlock ThreadSanitizer intercepts.
final class PostgresLocked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    /// A lock around `value`.
    init(_ value: Value) { self.value = value }

    /// Runs `body` with the value, holding the lock.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
