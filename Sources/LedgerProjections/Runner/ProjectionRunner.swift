import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerStore
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// Keeps projections up to date with the log.
///
/// Each step is one transaction: take the projection's lock, read its checkpoint, read the next
/// batch of its event types gap-safely after it, apply the batch, move the checkpoint. The state
/// change and the checkpoint commit together, so an event is applied exactly once whatever
/// crashes; and since the checkpoint is read under the lock, any number of runners (and a
/// rebuild's swap) can share one projection safely. Projections are independent: each has its
/// own checkpoint and its own steps.
///
/// ``run()`` outlives the database: a lost connection (a server restart, a failover) is retried
/// with back-off from the checkpoints, which the database keeps (``ConnectionLossRetry``, loop
/// `projection runner`). A swift-service-lifecycle `Service`, stopped gracefully by its group.
public struct ProjectionRunner: Service {
    /// The store whose log is read.
    public let store: EventStore
    /// The projections this runner keeps.
    public let projections: [any Projection]
    /// Events per step.
    public var batchSize: Int
    /// How long to wait for a notification before looking anyway (the fallback to LISTEN/NOTIFY).
    public var pollInterval: Duration
    /// How long a transaction may hold the gap-safe read horizon back, with committed events
    /// waiting behind it, before ``run()`` logs a warning naming it (then at most once per this
    /// interval). See ``ReadHorizon``.
    public var horizonWarningAfter: Duration = .seconds(60)
    let logger: Logger

    /// A runner for `projections` over `store`'s log.
    public init(store: EventStore, projections: [any Projection], batchSize: Int = 1000,
                pollInterval: Duration = .seconds(1), logger: Logger = Logger(label: "ledger.projections")) {
        self.store = store
        self.projections = projections
        self.batchSize = batchSize
        self.pollInterval = pollInterval
        self.logger = logger
    }

    /// Creates every projection's tables and checkpoint row where missing.
    public func prepare() async throws {
        for projection in projections {
            try await store.pool.withConnection { try CheckpointTable.prepare(projection, on: $0) }
        }
    }

    /// Applies the next batch of `projection`'s events on `connection`; returns how many.
    public static func step(_ projection: any Projection, store: EventStore, batchSize: Int,
                            on connection: PostgresConnection) throws -> Int {
        try connection.transaction { connection in
            try CheckpointTable.lock(projection.name, on: connection)
            guard let row = try CheckpointTable.read(projection.name, on: connection) else {
                throw ProjectionError.notPrepared(projection: projection.name)
            }
            let batch = try store.readAll(after: row.checkpoint, limit: batchSize,
                                          filter: EventFilter(types: projection.eventTypes), on: connection)
            guard let last = batch.events.last else { return 0 }
            do {
                try projection.apply(batch.events, to: .live, on: connection)
            } catch let error as ProjectionError {
                throw error
            } catch where ConnectionLossRetry.isConnectionLoss(error) {
                // The database went away mid-batch: no fault of the projection's code.
                throw error
            } catch {
                throw ProjectionError.applyFailed(projection: projection.name, position: batch.events.first?.position ?? 0,
                                                  underlying: String(describing: error))
            }
            try CheckpointTable.advance(projection.name, to: last, applied: batch.events.count, on: connection)
            return batch.events.count
        }
    }

    /// Applies batches to every projection until none has anything readable left; returns how
    /// many events were applied in all.
    @discardableResult
    public func catchUp() async throws -> Int {
        var total = 0
        for projection in projections {
            while true {
                let applied = try await store.pool.withConnection { [store, batchSize] connection in
                    try Self.step(projection, store: store, batchSize: batchSize, on: connection)
                }
                total += applied
                if applied < batchSize { break }
            }
        }
        return total
    }

    /// Follows the log until graceful shutdown (the runner is a swift-service-lifecycle `Service`:
    /// SIGTERM or SIGINT in `ledger serve`'s `ServiceGroup`) or until the task is cancelled:
    /// catches up, then waits for the store's append notifications (`LISTEN ledger_events`),
    /// looking anyway every ``pollInterval``, and after a wake-up that found nothing readable yet
    /// (an older transaction still holds the horizon), looks again soon.
    ///
    /// A lost connection does not end it: the step is tried again with back-off
    /// (``ReconnectBackoff/standard``: 100 ms doubling to 5 s, with jitter) until the database is
    /// back, and goes on from each projection's checkpoint; the outage is logged once at
    /// `warning`, the reconnection at `notice`. The listener reconnects by itself.
    ///
    /// Graceful shutdown cancels the step under way (`cancelWhenGracefulShutdown`): a step is one
    /// transaction with its checkpoint, so nothing is half applied, and the next run goes on from
    /// the checkpoint. Whatever that cancellation makes the step throw is the stop, not a failure:
    /// the run then returns normally.
    /// - Throws: `CancellationError` when cancelled (not shut down) while waiting to reconnect;
    ///   ``ProjectionError`` and any other error that is not a lost connection (a bug in a
    ///   projection, a missing table), which ends the run.
    public func run() async throws {
        do {
            try await cancelWhenGracefulShutdown { try await follow() }
        } catch where Task.isShuttingDownGracefully {
            logger.debug("projection runner stopped", metadata: ErrorLogMetadata.of(error))
        }
    }

    /// The loop of ``run()``, until the task is cancelled.
    private func follow() async throws {
        let outage = ConnectionLossRetry(loop: "projection runner", logger: logger)
        try await outage.retrying { try await prepare() }
        let bell = WakeUpBell()
        let listener = PostgresListener(conninfo: store.pool.configuration.conninfo, channels: ["ledger_events"],
                                        logger: logger)
        let listening = Task { for await _ in listener.events { bell.ring() } }
        defer {
            listening.cancel()
            listener.stop()
        }
        var eager: Duration?
        var lastReported = ContinuousClock.now - .seconds(3600)
        var lastHorizonWarning = ContinuousClock.now - .seconds(3600)
        while !Task.isCancelled {
            let applied = try await outage.retrying { try await catchUp() }
            if ContinuousClock.now - lastReported >= pollInterval {
                lastReported = ContinuousClock.now
                let horizon = await reportLag()
                if let horizon, let metadata = Self.horizonWarning(horizon, after: horizonWarningAfter),
                   ContinuousClock.now - lastHorizonWarning >= horizonWarningAfter {
                    lastHorizonWarning = ContinuousClock.now
                    logger.warning("an open transaction holds the read horizon back: projections wait for it to end",
                                   metadata: metadata)
                }
            }
            if applied > 0 { eager = nil }
            let wait = eager.map { min($0, pollInterval) } ?? pollInterval
            if await bell.wait(upTo: wait) {
                eager = .milliseconds(5)
            } else if let delay = eager {
                eager = delay < pollInterval ? delay * 2 : nil
            }
        }
    }
}

extension ProjectionRunner {
    /// Records each projection's lag as gauges: `ledger_projection_lag_events` (readable events
    /// not yet applied) and `ledger_projection_lag_seconds` (age of the oldest of them), by
    /// `projection`; and the read horizon's: `ledger_read_horizon_waiting_events` (committed
    /// events no reader sees yet) and `ledger_read_horizon_waiting_seconds` (how long the oldest
    /// of them has waited; 0 when none wait). A failure to read either is logged, never fatal to
    /// the runner, and one does not keep the other from being recorded; a lost connection is left
    /// for the next step to report.
    func reportLag() async -> ReadHorizon? {
        do {
            let statuses = try await store.pool.withConnection { [projections] in try ProjectionStatus.read(projections, on: $0) }
            for status in statuses {
                Gauge(label: "ledger_projection_lag_events", dimensions: [("projection", status.name)])
                    .record(Double(status.eventsBehind))
                Gauge(label: "ledger_projection_lag_seconds", dimensions: [("projection", status.name)]).record(status.secondsBehind)
            }
        } catch {
            if !ConnectionLossRetry.isConnectionLoss(error) {
                logger.warning("could not read projection lag", metadata: ErrorLogMetadata.of(error))
            }
        }
        do {
            let horizon = try await store.pool.withConnection { try ReadHorizon.read(on: $0, limit: 1) }
            Gauge(label: "ledger_read_horizon_waiting_events").record(Double(horizon.eventsWaiting))
            Gauge(label: "ledger_read_horizon_waiting_seconds").record(horizon.secondsWaiting)
            return horizon
        } catch {
            if !ConnectionLossRetry.isConnectionLoss(error) {
                logger.warning("could not read the read horizon", metadata: ErrorLogMetadata.of(error))
            }
            return nil
        }
    }

    /// The warning's metadata when committed events have waited at least `threshold` behind the
    /// horizon, naming the transaction with the lowest id (the one to end first), else nil.
    static func horizonWarning(_ horizon: ReadHorizon, after threshold: Duration) -> Logger.Metadata? {
        guard horizon.eventsWaiting > 0, horizon.secondsWaiting >= threshold.timeInterval else { return nil }
        var metadata: Logger.Metadata = [
            "horizon.events_waiting": "\(horizon.eventsWaiting)",
            "horizon.seconds_waiting": "\(Int(horizon.secondsWaiting))",
        ]
        guard let oldest = horizon.holders.first else { return metadata }
        if let state = oldest.state { metadata["horizon.holder.state"] = "\(state)" }
        if let open = oldest.secondsOpen { metadata["horizon.holder.seconds_open"] = "\(Int(open))" }
        if let pid = oldest.pid { metadata["horizon.holder.pid"] = "\(pid)" }
        if let database = oldest.database { metadata["horizon.holder.database"] = "\(database)" }
        if let application = oldest.application, !application.isEmpty { metadata["horizon.holder.application"] = "\(application)" }
        return metadata
    }
}

/// Why a projection could not move.
public enum ProjectionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The projection has no checkpoint row yet: run ``ProjectionRunner/prepare()`` (or `ledger migrate`).
    case notPrepared(projection: String)
    /// Applying an event failed: a bug in the projection's code. Fix it, deploy, rebuild.
    case applyFailed(projection: String, position: Int64, underlying: String)
    /// No projection of that name is known.
    case unknownProjection(String)
    /// A rebuild of the projection is already running (another process holds its rebuild lock).
    case rebuildInProgress(projection: String)

    /// One line naming the projection and what went wrong.
    public var description: String {
        switch self {
        case .notPrepared(let name): "projection \(name) has no checkpoint row (not prepared)"
        case .applyFailed(let name, let position, let underlying):
            "projection \(name) failed to apply the batch starting at position \(position): \(underlying)"
        case .unknownProjection(let name): "no projection is called \(name)"
        case .rebuildInProgress(let name): "projection \(name) is already being rebuilt by another process"
        }
    }
}
