import Foundation
import LedgerPostgres
import LedgerStore
import Logging
import Synchronization

/// One `LISTEN ledger_events` session shared by every open event stream of the server, ringing
/// each stream's bell when an append is announced.
///
/// A session per stream would hold a database connection for as long as a client stays
/// connected, however idle; this holds one while at least one stream is open, and none otherwise
/// (the listener starts with the first stream and stops when the last one ends). Notifications
/// are wake-ups only: a stream reads the log itself, and polls as well, so a lost notification
/// delays it by a poll at most.
final class EventStreamWakeUps: Sendable {
    private struct State {
        var bells: [UUID: WakeUpBell] = [:]
        var listener: PostgresListener?
    }
    private let state = Mutex(State())
    private let conninfo: String
    private let logger: Logger

    /// Wake-ups from the database of `store`'s pool.
    init(store: EventStore, logger: Logger) {
        self.conninfo = store.pool.configuration.conninfo
        self.logger = logger
    }

    /// Registers a stream: its bell rings on every notification until ``leave(_:)``.
    func join() -> (id: UUID, bell: WakeUpBell) {
        let id = UUID()
        let bell = WakeUpBell()
        let started: PostgresListener? = state.withLock { state in
            state.bells[id] = bell
            guard state.listener == nil else { return nil }
            let listener = PostgresListener(conninfo: conninfo, channels: ["ledger_events"], logger: logger)
            state.listener = listener
            return listener
        }
        if let started {
            Task { [weak self] in
                for await _ in started.events { self?.ringAll() }
            }
        }
        return (id, bell)
    }

    /// Unregisters a stream; the last one to leave stops the listener.
    func leave(_ id: UUID) {
        let stopped: PostgresListener? = state.withLock { state in
            state.bells[id] = nil
            guard state.bells.isEmpty else { return nil }
            defer { state.listener = nil }
            return state.listener
        }
        stopped?.stop()
    }

    /// How many streams are registered (tests: a closed client's stream must leave).
    var openStreams: Int { state.withLock { $0.bells.count } }

    private func ringAll() {
        for bell in state.withLock({ Array($0.bells.values) }) { bell.ring() }
    }
}
