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
///
/// A lost connection (a server restart) does not end the sequence: the read is tried again with
/// back-off (``ReconnectBackoff/standard``) from the checkpoint it had reached, the outage logged
/// once (``ConnectionLossRetry``, loop `subscription`). Other failures end it with their error;
/// cancelling the task ends it at once.
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
        let outage: ConnectionLossRetry

        init(subscription: EventSubscription) {
            self.subscription = subscription
            self.checkpoint = subscription.start
            self.outage = ConnectionLossRetry(loop: "subscription", logger: subscription.store.logger)
        }

        deinit {
            listenerTask?.cancel()
            listener?.stop()
        }

        public func next() async throws -> EventStore.GlobalBatch? {
            await startListeningIfNeeded()
            // After a wake-up that found nothing readable yet (an older transaction still open
            // holds the horizon back), look again soon rather than at the next poll.
            var eagerDelay: Duration?
            while !Task.isCancelled {
                let (store, after, batchSize, filter) = (subscription.store, checkpoint, subscription.batchSize,
                                                         subscription.filter)
                let batch = try await outage.retrying {
                    try await store.readAll(after: after, limit: batchSize, filter: filter)
                }
                if !batch.events.isEmpty {
                    checkpoint = batch.checkpoint
                    return batch
                }
                let wait = eagerDelay.map { Swift.min($0, subscription.pollInterval) } ?? subscription.pollInterval
                if await doorbell.wait(upTo: wait) {
                    eagerDelay = .milliseconds(5)
                } else if let delay = eagerDelay {
                    eagerDelay = delay < subscription.pollInterval ? delay * 2 : nil
                }
            }
            return nil
        }

        /// Starts the listener and waits (up to a few seconds) until it listens, so that no
        /// append committed after the first read can go unheard.
        private func startListeningIfNeeded() async {
            guard listener == nil else { return }
            let listener = PostgresListener(conninfo: subscription.conninfo, channels: ["ledger_events"],
                                            logger: subscription.store.logger)
            self.listener = listener
            let doorbell = self.doorbell
            listenerTask = Task {
                for await _ in listener.events { doorbell.ring() }
            }
            _ = await doorbell.wait(upTo: .seconds(5))
        }
    }
}

/// Wakes one waiter, or remembers the ring for the next one; a wait also ends after a timeout.
final class Doorbell: Sendable {
    private struct State {
        var rung = false
        var waiter: CheckedContinuation<Bool, Never>?
        var waiterTimeout: Duration?
        var generation = 0
        var answeredRings = 0
    }
    private let state = Mutex(State())

    /// The timeout of the wait suspended now, if one is: tests append once the subscription waits
    /// for its poll (a wait of `pollInterval`), so that only a notification can wake it sooner.
    var suspendedWaitTimeout: Duration? { state.withLock { $0.waiter == nil ? nil : $0.waiterTimeout } }

    /// How many waits a ring ended (not a timeout): tests tell a notification's wake-up from a poll.
    var answeredRings: Int { state.withLock { $0.answeredRings } }

    func ring() {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                state.answeredRings += 1
                return waiter
            }
            state.rung = true
            return nil
        }
        waiter?.resume(returning: true)
    }

    /// Waits for a ring or the timeout; true when it was rung.
    @discardableResult
    func wait(upTo timeout: Duration) async -> Bool {
        let generation: Int? = state.withLock { state in
            if state.rung {
                state.rung = false
                state.answeredRings += 1
                return nil
            }
            state.generation += 1
            return state.generation
        }
        guard let generation else { return true }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            self?.expire(generation)
        }
        let wasRung = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let immediate: Bool? = state.withLock { state in
                if state.rung {
                    state.rung = false
                    state.answeredRings += 1
                    return true
                }
                if state.generation != generation { return false }
                state.waiter = continuation
                state.waiterTimeout = timeout
                return nil
            }
            if let immediate { continuation.resume(returning: immediate) }
        }
        timer.cancel()
        return wasRung
    }

    private func expire(_ generation: Int) {
        // Bumping the generation also covers a timeout that fires before the waiter is
        // installed: the installing side sees the change and does not suspend.
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard state.generation == generation else { return nil }
            state.generation += 1
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: false)
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
