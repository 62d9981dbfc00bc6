import Foundation
import LedgerDomain
import LedgerPostgres
import Logging

/// Tells subscribers that events were appended: `NOTIFY ledger_events`, coalesced, sent from a
/// session of its own after the append committed.
///
/// Not inside the append's transaction on purpose: PostgreSQL serialises the commits of all
/// transactions that NOTIFY (a cluster-wide lock held through the commit's flush), which capped
/// appends at one writer's speed. Here appends that come close together share one notification
/// (``minimumInterval``, growing to ``maximumInterval`` while they keep coming), and appends never
/// wait. If this process dies between a commit and its notification, subscribers still find the
/// events at their next poll.
///
/// Its session is checked before each use (``PostgresConnection/checkUsable()``); one that broke
/// since (a server restart) is replaced, and a notification that fails on a session that had
/// looked usable is sent once more on a fresh one. While the server is away, notifications are
/// dropped (subscribers poll) and the next ones are spaced by the back-off
/// (``ReconnectBackoff/standard``); the outage is logged once (``ConnectionLossRetry``, loop
/// `append notifier`).
final class AppendNotifier: Sendable {
    private let conninfo: String
    private let logger: Logger
    private let condition = NotifierCondition()
    private let outage: ConnectionLossRetry

    init(conninfo: String, logger: Logger) {
        self.conninfo = conninfo
        self.logger = logger
        self.outage = ConnectionLossRetry(loop: "append notifier", logger: logger)
    }

    /// Asks for a notification soon; starts the sending thread if it is not running.
    func signal() {
        if condition.markPending() {
            let conninfo = self.conninfo
            let logger = self.logger
            let condition = self.condition
            let outage = self.outage
            let thread = Thread { Self.run(conninfo: conninfo, logger: logger, condition: condition, outage: outage) }
            thread.name = "ledger.store.notifier"
            thread.start()
        }
    }

    /// At most one notification per interval: appends signalled meanwhile share the next one.
    /// Without it a lone writer would cost the server a second transaction per append. After a
    /// quiet spell the first append is announced at once and the next no sooner than this.
    static let minimumInterval = 0.005

    /// The interval under sustained appends: it doubles from ``minimumInterval`` each time appends
    /// were already waiting for the next notification, up to this, and falls back once they stop.
    /// Each notification is a transaction on its own session; at one every 5 ms, sustained single
    /// appends ran 2–3 % slower (docs/performance.md). A subscriber that is caught up then learns
    /// of new events at most this late; one that is behind reads on without waiting for
    /// notifications.
    static let maximumInterval = 0.04

    /// Sends while there are signals; exits after a few idle seconds (and is started again by the next signal).
    private static func run(conninfo: String, logger: Logger, condition: NotifierCondition, outage: ConnectionLossRetry) {
        var session: PostgresConnection?
        var interval = minimumInterval
        var first = true
        while let waited = condition.takePending(idleTimeout: 5) {
            // The thread starts with the signal that started it pending: one after a quiet spell.
            interval = waited || first ? minimumInterval : min(interval * 2, maximumInterval)
            first = false
            var pause = interval
            let reused = session?.checkUsable() == true
            if !reused { session = nil }
            do {
                do {
                    try notify(on: &session, conninfo: conninfo, logger: logger)
                } catch where reused && ConnectionLossRetry.isConnectionLoss(error) {
                    // The session looked usable but the server had gone since (a restart): once
                    // more on a fresh one.
                    session = nil
                    try notify(on: &session, conninfo: conninfo, logger: logger)
                }
                outage.succeeded()
            } catch {
                session = nil
                if let wait = outage.delay(after: error) {
                    pause = max(pause, wait.timeInterval)
                } else {
                    logger.debug("append notification not sent; subscribers will poll", metadata: [
                        "db.error": "\(ConnectionLossRetry.describe(error))",
                    ])
                }
            }
            Thread.sleep(forTimeInterval: pause)
        }
    }

    /// Sends one notification on `session`, opening one first when there is none.
    private static func notify(on session: inout PostgresConnection?, conninfo: String, logger: Logger) throws {
        if session == nil {
            let fresh = try PostgresConnection(conninfo: conninfo, logger: logger)
            // NOTIFY takes a transaction id, so each one would be a durable commit with its own
            // flush, competing with the appends' flushes. A notification lost in a crash costs
            // nothing: subscribers poll.
            try fresh.run(script: "SET synchronous_commit = off")
            session = fresh
        }
        try session?.execute("SELECT pg_notify('ledger_events', '')")
    }
}

/// The notifier's shared state: a pending flag and whether the thread runs.
private final class NotifierCondition: @unchecked Sendable {
    // `@unchecked`: every field is read and written under `lock`.
    private let lock = NSCondition()
    private var pending = false
    private var running = false

    /// Marks a notification as wanted; returns true when the caller must start the thread.
    func markPending() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        pending = true
        lock.signal()
        if running { return false }
        running = true
        return true
    }

    /// Waits for a pending signal and clears it; answers whether it had to wait (false: the
    /// signal was there already), or nil (the thread should exit) after `idleTimeout` seconds
    /// without one.
    func takePending(idleTimeout: Double) -> Bool? {
        lock.lock()
        defer { lock.unlock() }
        let waited = !pending
        let deadline = Date().addingTimeInterval(idleTimeout)
        while !pending {
            // A signal may have come in as the wait timed out: it is taken, not lost.
            if !lock.wait(until: deadline), !pending {
                running = false
                return nil
            }
        }
        pending = false
        return waited
    }
}
