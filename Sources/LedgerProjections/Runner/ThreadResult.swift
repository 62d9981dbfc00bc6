import Foundation

/// Work done on a thread of its own; ``wait()`` gives its result.
final class ThreadResult<Value: Sendable>: @unchecked Sendable {
    // `@unchecked`: `result` is read and written under `condition`.
    private let condition = NSCondition()
    private var result: Result<Value, any Error>?

    /// Starts `work` on a new thread.
    init(_ work: @escaping @Sendable () throws -> Value) {
        Thread { [self] in
            let outcome = Result { try work() }
            condition.lock()
            result = outcome
            condition.broadcast()
            condition.unlock()
        }.start()
    }

    /// Waits for the work to end; its value, or its error.
    func wait() throws -> Value {
        condition.lock()
        defer { condition.unlock() }
        while result == nil { condition.wait() }
        return try result!.get()
    }
}
