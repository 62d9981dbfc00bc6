import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerStore
import Logging

/// Rebuilds a projection from position 0 while appends (and the live runner) go on, then swaps
/// the result in atomically: what ops run after deploying a fix.
///
/// 1. Shadow tables (`<table>__shadow`) are created empty, beside the live ones.
/// 2. Bulk phase: the log is scanned with `COPY … TO STDOUT` in chunks and folded in memory by
///    the projection's ``ProjectionBulkBuilder``, which writes the result with `COPY … FROM STDIN`.
///    Past ``maxStatesInMemory`` states, the builder writes what it holds into the shadow tables
///    and goes on with an empty memory, reading a state back when a later event needs it: a
///    rebuild's memory does not grow with the log.
/// 3. Catch-up phase: batches are applied to the shadow tables as the runner would, until the
///    shadow is nearly at the head.
/// 4. Swap, in one transaction under the projection's lock (so no live step interleaves): the last
///    events are applied to the shadow, the live tables are dropped, the shadow tables and their
///    indexes take the live names, and the checkpoint row takes the shadow's checkpoint and the
///    code's version. Readers see the old tables until the commit and the new ones after it, never
///    a half-built projection.
///
/// A rebuild holds a session-level advisory lock for its whole run, so two never overlap; if its
/// process dies, the lock goes with the session and the next rebuild drops the stale shadow.
public struct ProjectionRebuilder: Sendable {
    /// Where a rebuild is.
    public struct Progress: Sendable, Hashable {
        /// `bulk`, `catch-up` or `swap`.
        public var phase: String
        /// Events folded so far.
        public var eventsDone: Int64
        /// Events the log held for this projection when the rebuild started (an estimate of the
        /// total: counted for a small log, the planner's estimate for a large one; see `eventCount`).
        public var eventsTotal: Int64
    }

    /// What a rebuild did.
    public struct Report: Sendable, Hashable {
        /// The projection rebuilt.
        public var projection: String
        /// The version its tables are now built with.
        public var version: Int
        /// Events applied in all.
        public var events: Int64
        /// The checkpoint the swapped-in tables stand at.
        public var checkpoint: GlobalCheckpoint
        /// Wall time, in seconds.
        public var seconds: Double
        /// How many times the bulk phase wrote its states out to stay within
        /// ``ProjectionRebuilder/maxStatesInMemory`` (0: it held them all).
        public var spills: Int = 0
    }

    /// The store whose log is read.
    public let store: EventStore
    /// Events per chunk in the bulk phase.
    public var chunkSize: Int
    /// Events per batch in the catch-up phase.
    public var batchSize: Int
    /// The most states (devices, for the per-device projections) the bulk phase holds in memory
    /// before it writes them out. A device's SKAN state takes about 3 KB in memory, so the
    /// default, 20,000, keeps a rebuild of any log near 60 MiB of states.
    public var maxStatesInMemory: Int
    let logger: Logger

    /// A rebuilder over `store`'s log.
    public init(store: EventStore, chunkSize: Int = 10_000, batchSize: Int = 1000, maxStatesInMemory: Int = 20_000,
                logger: Logger = Logger(label: "ledger.projections.rebuild")) {
        self.store = store
        self.chunkSize = chunkSize
        self.batchSize = batchSize
        self.maxStatesInMemory = max(1, maxStatesInMemory)
        self.logger = logger
    }

    /// Rebuilds `projection`; `progress` is called from the rebuild's thread now and then.
    public func rebuild(_ projection: any Projection,
                        progress: @escaping @Sendable (Progress) -> Void = { _ in }) async throws -> Report {
        try await store.pool.withConnection { [self] connection in
            try rebuild(projection, on: connection, progress: progress)
        }
    }

    /// Rebuilds `projection` on a connection the caller holds (which must not be in a transaction,
    /// and must reach the store's database: the bulk phase reads ahead on two sessions of its own
    /// opened like the store pool's, outside its limit, and a device-state
    /// projection's final write uses one more, when it can open it).
    public func rebuild(_ projection: any Projection, on connection: PostgresConnection,
                        progress: (Progress) -> Void = { _ in }) throws -> Report {
        let started = ContinuousClock.now
        let lockKey = "ledger.rebuild." + projection.name
        let locked = try connection.query("SELECT pg_try_advisory_lock(hashtextextended(\(lockKey), 0))").single()
            .decode(Bool.self, at: 0)
        guard locked else { throw ProjectionError.rebuildInProgress(projection: projection.name) }
        defer { _ = try? connection.execute("SELECT pg_advisory_unlock(hashtextextended(\(lockKey), 0))") }

        try CheckpointTable.prepare(projection, on: connection)
        try connection.transaction { connection in
            for table in projection.tableNames {
                try connection.execute("DROP TABLE IF EXISTS \(unescaped: ProjectionTables.shadow.quoted(table))")
            }
            try projection.createTables(.shadow, on: connection)
            try CheckpointTable.grantToApplication(projection, .shadow, on: connection)
        }
        // Counted, or estimated on a large log, where counting would read all of it first.
        let total = try EventStore.eventCount(ofTypes: projection.eventTypes, on: connection).count

        // Bulk: fold in memory, write once. The chunks are read, and their personal fields opened
        // as every read does (docs/privacy.md), on sessions of their own, ahead of the fold.
        var builder = projection.makeBulkBuilder()
        var checkpoint = GlobalCheckpoint.start
        var done: Int64 = 0
        var spills = 0
        let reader = ChunkPrefetcher(store: store, types: projection.eventTypes, selection: projection.personalFieldsRead,
                                     chunkSize: chunkSize)
        reader.start()
        defer { reader.cancel() }
        while let chunk = try reader.next(), let last = chunk.last {
            if try builder.fold(chunk, holdingAtMost: maxStatesInMemory, spillingInto: .shadow, on: connection,
                                sessionsFrom: store.pool) {
                spills += 1
            }
            checkpoint = last.checkpoint
            done += Int64(chunk.count)
            progress(Progress(phase: "bulk", eventsDone: done, eventsTotal: max(total, done)))
        }
        let pool = store.pool
        try connection.transaction { [builder] in try builder.write(to: .shadow, on: $0, sessionsFrom: pool) }

        // Catch up outside the lock, then finish under it.
        let filter = EventFilter(types: projection.eventTypes)
        func applyNext(on connection: PostgresConnection) throws -> Int {
            let batch = try store.readAll(after: checkpoint, limit: batchSize, filter: filter, on: connection)
            guard let last = batch.events.last else { return 0 }
            try projection.apply(batch.events, to: .shadow, on: connection)
            checkpoint = last.checkpoint
            done += Int64(batch.events.count)
            return batch.events.count
        }
        while try connection.transaction({ try applyNext(on: $0) }) == batchSize {
            progress(Progress(phase: "catch-up", eventsDone: done, eventsTotal: max(total, done)))
        }
        try connection.transaction { connection in
            try CheckpointTable.lock(projection.name, on: connection)
            while try applyNext(on: connection) > 0 {}
            try swap(projection, on: connection)
            let lastRecordedAt = try EventStore.recordedAt(position: checkpoint.position, on: connection)
            try connection.execute("""
                UPDATE projection_checkpoints SET version = \(projection.version),
                    transaction_id = \(String(checkpoint.transactionID))::xid8, position = \(checkpoint.position),
                    events_applied = \(done), updated_at = clock_timestamp(), rebuilt_at = clock_timestamp(),
                    last_event_recorded_at = \(lastRecordedAt)
                WHERE name = \(projection.name)
                """)
        }
        progress(Progress(phase: "swap", eventsDone: done, eventsTotal: max(total, done)))
        let elapsed = ContinuousClock.now - started
        let seconds = elapsed.timeInterval
        logger.info("rebuilt projection", metadata: [
            "ledger.projection": "\(projection.name)", "ledger.events": "\(done)", "ledger.seconds": "\(seconds)",
            "ledger.spills": "\(spills)",
        ])
        return Report(projection: projection.name, version: projection.version, events: done, checkpoint: checkpoint,
                      seconds: seconds, spills: spills)
    }

    /// Drops the live tables and gives the shadow tables (and their indexes and constraints)
    /// the live names. Inside the caller's transaction.
    func swap(_ projection: any Projection, on connection: PostgresConnection) throws {
        for table in projection.tableNames {
            let shadow = ProjectionTables.shadow.name(table)
            try connection.execute("DROP TABLE IF EXISTS \(identifier: table)")
            try connection.execute("ALTER TABLE \(identifier: shadow) RENAME TO \(identifier: table)")
            let indexes = try connection.query("""
                SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = \(table)
                """).map { try $0.decode(String.self, at: 0) }
            for index in indexes where index.contains(ProjectionTables.shadowSuffix) {
                let renamed = index.replacingOccurrences(of: ProjectionTables.shadowSuffix, with: "")
                try connection.execute("ALTER INDEX \(identifier: index) RENAME TO \(identifier: renamed)")
            }
        }
    }
}
