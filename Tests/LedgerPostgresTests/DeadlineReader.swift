import Synchronization

/// Reads an `AsyncStream` on a task of its own, so that a test waits for each element with a
/// deadline instead of awaiting the stream for ever.
final class DeadlineReader<Element: Sendable>: Sendable {
    private struct State {
        var elements: [Element] = []
        var ended = false
        var taken = 0
    }

    private final class Buffer: Sendable {
        let state = Mutex(State())
    }

    private let buffer = Buffer()
    private let reading: Task<Void, Never>

    init(_ stream: AsyncStream<Element>) {
        let buffer = self.buffer
        reading = Task {
            for await element in stream { buffer.state.withLock { $0.elements.append(element) } }
            buffer.state.withLock { $0.ended = true }
        }
    }

    deinit { reading.cancel() }

    /// The next element, `.ended` when the stream ended, or `.timedOut` when neither happened
    /// within `timeout` (polled every 5 ms).
    func next(within timeout: Duration = .seconds(30)) async -> Next {
        let deadline = ContinuousClock.now + timeout
        while true {
            let next = buffer.state.withLock { state -> Next? in
                if state.taken < state.elements.count {
                    defer { state.taken += 1 }
                    return .element(state.elements[state.taken])
                }
                return state.ended ? .ended : nil
            }
            if let next { return next }
            if ContinuousClock.now >= deadline { return .timedOut }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// What ``next(within:)`` found.
    enum Next: Sendable {
        case element(Element)
        case ended
        case timedOut
    }
}

extension DeadlineReader.Next: Equatable where Element: Equatable {}
