import Foundation
import Logging

/// How long a loop waits before it tries the database again after losing it: capped exponential
/// back-off with jitter.
///
/// Retry number `n` (1 for the first after a failure) waits `initial × 2ⁿ⁻¹`, at most `maximum`,
/// less up to `jitter` of that at random, so that the processes that lost one server do not all
/// come back in step. The defaults (``standard``): 100 ms, 200 ms, 400 ms, … up to 5 s, each up to
/// a fifth shorter.
public struct ReconnectBackoff: Sendable, Hashable {
    /// The wait before the first retry (before jitter).
    public var initial: Duration
    /// The longest wait (before jitter).
    public var maximum: Duration
    /// The largest share of a wait taken off at random, from 0 (none) to 1.
    public var jitter: Double

    /// A back-off from `initial`, doubling up to `maximum`, each wait up to `jitter` of itself shorter.
    public init(initial: Duration = .milliseconds(100), maximum: Duration = .seconds(5), jitter: Double = 0.2) {
        self.initial = initial
        self.maximum = max(initial, maximum)
        self.jitter = min(1, max(0, jitter))
    }

    /// 100 ms doubling to 5 s, each wait up to a fifth shorter.
    public static let standard = ReconnectBackoff()

    /// The wait before retry number `attempt` (1 for the first), given `random` in `0..<1`.
    public func delay(attempt: Int, random: Double) -> Duration {
        var base = initial
        var doublings = max(attempt, 1) - 1
        while doublings > 0, base < maximum {
            base *= 2
            doublings -= 1
        }
        base = min(base, maximum)
        let cut = jitter * min(1, max(0, random))
        return cut > 0 ? base - base * cut : base
    }

    static func seconds(_ duration: Duration) -> Double {
        let parts = duration.components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}

/// Keeps a long-running loop going through database outages (a server restart, a failover, a
/// terminated session, a network cut): it tells a lost connection from other failures, logs each
/// outage once, and says how long to wait before trying again.
///
/// A loop reports each failure to ``delay(after:)`` and each success to ``succeeded()``, or runs
/// its work through ``retrying(_:)``, which does both and waits in between. The first connection
/// loss after a success is logged at `warning` (the loop's name and the error's code, SQLSTATE
/// and message: never a statement's text nor a row's values); the retries after it are silent;
/// the first success after them is logged at `notice` with how long the outage lasted. Failures
/// that are not connection losses are left to the caller.
public final class ConnectionLossRetry: Sendable {
    private struct State {
        var failures = 0
        var since: ContinuousClock.Instant?
    }

    /// The loop's name in the log (`db.loop`): `projection runner`, `attribution decider`, ….
    public let loop: String
    /// How long to wait between tries; nil for callers that do not wait (the pool: each caller
    /// fails at once and the next one tries again).
    public let backoff: ReconnectBackoff?
    private let logger: Logger
    private let random: @Sendable () -> Double
    private let state = PostgresLocked(State())

    /// A tracker for the loop named `loop`, logging to `logger`.
    /// - Parameters:
    ///   - backoff: the waits between tries; nil when the caller does not wait (``delay(after:)``
    ///     then answers zero).
    ///   - random: a number in `0..<1` for each wait's jitter.
    public init(loop: String, logger: Logger, backoff: ReconnectBackoff? = .standard,
                random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        self.loop = loop
        self.logger = logger
        self.backoff = backoff
        self.random = random
    }

    /// True when `error` says the database or the session went away, so that trying again on a
    /// fresh session is the remedy: a ``PostgresError`` with ``PostgresError/isConnectionBroken``
    /// (no session could be opened, the session broke, SQLSTATE class 08, or the server shutting
    /// down, crashing or still starting: 57P01, 57P02, 57P03).
    public static func isConnectionLoss(_ error: any Error) -> Bool {
        (error as? PostgresError)?.isConnectionBroken ?? false
    }

    /// True while an outage is under way: a connection loss was reported and no success since.
    public var isInOutage: Bool { state.withLock { $0.failures > 0 } }

    /// After a failure: nil when `error` is not a connection loss (``isConnectionLoss(_:)``; the
    /// caller decides what it means), otherwise how long to wait before the next try (zero
    /// without a ``backoff``). The first connection loss of an outage is logged at `warning`.
    public func delay(after error: any Error) -> Duration? {
        guard Self.isConnectionLoss(error) else { return nil }
        let failures = state.withLock { state in
            state.failures += 1
            if state.since == nil { state.since = .now }
            return state.failures
        }
        guard let backoff else {
            if failures == 1 {
                logger.warning("lost the database connection; each caller fails until it is back", metadata: [
                    "db.loop": "\(loop)", "db.error": "\(Self.describe(error))",
                ])
            }
            return .zero
        }
        let wait = backoff.delay(attempt: failures, random: random())
        if failures == 1 {
            logger.warning("lost the database connection; retrying with back-off until it is back", metadata: [
                "db.loop": "\(loop)", "db.error": "\(Self.describe(error))",
                "db.retry_in_ms": "\(Int(ReconnectBackoff.seconds(wait) * 1000))",
            ])
        }
        return wait
    }

    /// After a success: ends the outage under way, if any (logged at `notice` with its length and
    /// the number of failed tries), and starts the back-off from its beginning again.
    public func succeeded() {
        let ended = state.withLock { state -> (failures: Int, since: ContinuousClock.Instant)? in
            guard state.failures > 0, let since = state.since else { return nil }
            defer { state = State() }
            return (state.failures, since)
        }
        guard let ended else { return }
        let seconds = ReconnectBackoff.seconds(ContinuousClock.now - ended.since)
        logger.notice("reconnected to the database; going on", metadata: [
            "db.loop": "\(loop)", "db.outage_s": "\(String(format: "%.2f", seconds))", "db.failed_tries": "\(ended.failures)",
        ])
    }

    /// Runs `operation` until it returns, trying it again after each connection loss once the
    /// back-off's wait has passed (``delay(after:)``, ``succeeded()``).
    ///
    /// - Throws: what `operation` throws when it is not a connection loss; `CancellationError`
    ///   when the task is cancelled while waiting to try again, or after a connection loss (a
    ///   stopping process waits for no database).
    @discardableResult
    public func retrying<T>(_ operation: () async throws -> T) async throws -> T {
        while true {
            do {
                let value = try await operation()
                succeeded()
                return value
            } catch {
                guard Self.isConnectionLoss(error) else { throw error }
                try Task.checkCancellation()
                guard let wait = delay(after: error) else { throw error }
                try await Task.sleep(for: wait)
            }
        }
    }

    /// The error for the log: for a lost or refused connection the ``PostgresError/description``
    /// (libpq's reason, which names the server, never a password nor row data); for any other
    /// database error only its code and SQLSTATE (a server message can quote the values it
    /// refused); else the error's type.
    public static func describe(_ error: any Error) -> String {
        if let error = error as? PostgresError { return error.isConnectionBroken ? error.description : error.shortDescription }
        return String(describing: type(of: error))
    }
}
