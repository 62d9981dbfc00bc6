import Foundation
import LedgerPostgres
import Logging
import Synchronization

/// Follows the global log from a checkpoint: catches up in batches, then waits for new events.
///
/// Woken by `NOTIFY ledger_events` (sent by every append) through a ``PostgresListener``, with a
/// poll every `pollInterval` as the fallback for lost notifications and for events that became
/// readable only when an older transaction ended. Back-pressure is the consumer's pace: the next
/// batch is read only when it asks for one. Store the checkpoint of each handled batch; a
/// subscription restarted from it sees every event exactly once.
public struct EventSubscription: AsyncSequence, Sendable {
    public typealias Element = EventStore.GlobalBatch

    let store: EventStore
    let start: GlobalCheckpoint
    let filter: EventFilter
    let batchSize: Int
    let pollInterval: Duration
    let conninfo: String

    public func makeAsyncIterator() -> Iterator {
        Iterator(subscription: self)
    }

    /// Reads batch after batch; `next()` suspends while nothing new is readable.
    public final class Iterator: AsyncIteratorProtocol {
        let subscription: EventSubscription
        var checkpoint: GlobalCheckpoint
        let doorbell = Doorbell()
        var listenerTask: Task<Void, Never>?
        var listener: PostgresListener?

        init(subscription: EventSubscription) {
            self.subscription = subscription
            self.checkpoint = subscription.start
        }

        deinit {
            listenerTask?.cancel()
            listener?.stop()
        }

        public func next() async throws -> EventStore.GlobalBatch? {
            startListeningIfNeeded()
            while !Task.isCancelled {
                let batch = try await subscription.store.readAll(
                    after: checkpoint, limit: subscription.batchSize, filter: subscription.filter)
                if !batch.events.isEmpty {
                    checkpoint = batch.checkpoint
                    return batch
                }
                await doorbell.wait(upTo: subscription.pollInterval)
            }
            return nil
        }

        private func startListeningIfNeeded() {
            guard listener == nil else { return }
            let listener = PostgresListener(conninfo: subscription.conninfo, channels: ["ledger_events"],
                                            logger: subscription.store.logger)
            self.listener = listener
            let doorbell = self.doorbell
            listenerTask = Task {
                for await _ in listener.events { doorbell.ring() }
            }
        }
    }
}

/// Wakes one waiter, or remembers the ring for the next one; a wait also ends after a timeout.
final class Doorbell: Sendable {
    private struct State {
        var rung = false
        var waiter: CheckedContinuation<Void, Never>?
        var generation = 0
    }
    private let state = Mutex(State())

    func ring() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.rung = true
            return nil
        }
        waiter?.resume()
    }

    func wait(upTo timeout: Duration) async {
        let generation: Int? = state.withLock { state in
            if state.rung {
                state.rung = false
                return nil
            }
            state.generation += 1
            return state.generation
        }
        guard let generation else { return }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            self?.expire(generation)
        }
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
                if state.rung || state.generation != generation {
                    state.rung = false
                    return true
                }
                state.waiter = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
        timer.cancel()
    }

    private func expire(_ generation: Int) {
        // Bumping the generation also covers a timeout that fires before the waiter is
        // installed: the installing side sees the change and does not suspend.
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard state.generation == generation else { return nil }
            state.generation += 1
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }
}

extension EventStore {
    /// Follows the global log after `checkpoint`.
    ///
    /// - Parameters:
    ///   - conninfo: where the listener connects (the pool's own conninfo by default).
    ///   - pollInterval: how often to look even without a notification.
    public func subscribe(after checkpoint: GlobalCheckpoint = .start, filter: EventFilter = .all, batchSize: Int = 500,
                          pollInterval: Duration = .milliseconds(500)) -> EventSubscription
    {
        EventSubscription(store: self, start: checkpoint, filter: filter, batchSize: batchSize,
                          pollInterval: pollInterval, conninfo: pool.configuration.conninfo)
    }
}
