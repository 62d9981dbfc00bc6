import Synchronization

/// A doorbell for loops that wait for work: ``ring()`` from anywhere (a notification arrived, a
/// task finished); ``wait(upTo:)`` returns true if it rang (since the last wait) before the time
/// ran out. One waiter at a time. The projection runner and the send worker ring theirs when a
/// ``PostgresListener`` notification arrives.
public final class WakeUpBell: Sendable {
    private struct State {
        var rang = false
        var waiter: CheckedContinuation<Bool, Never>?
        var generation = 0
    }
    private let state = Mutex(State())

    /// A bell that has not rung.
    public init() {}

    /// Rings: the current or next ``wait(upTo:)`` returns true.
    public func ring() {
        let waiter: CheckedContinuation<Bool, Never>? = state.withLock { state in
            guard let waiter = state.waiter else {
                state.rang = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume(returning: true)
    }

    /// Waits until the bell rings (true) or `limit` passes (false).
    public func wait(upTo limit: Duration) async -> Bool {
        await withCheckedContinuation { continuation in
            let generation: Int? = state.withLock { state in
                if state.rang {
                    state.rang = false
                    return nil
                }
                state.generation += 1
                state.waiter = continuation
                return state.generation
            }
            guard let generation else { return continuation.resume(returning: true) }
            Task { [self] in
                try? await Task.sleep(for: limit)
                expire(generation)
            }
        }
    }

    private func expire(_ generation: Int) {
        let waiter: CheckedContinuation<Bool, Never>? = state.withLock { state in
            guard state.generation == generation, let waiter = state.waiter else { return nil }
            state.waiter = nil
            return waiter
        }
        waiter?.resume(returning: false)
    }
}
