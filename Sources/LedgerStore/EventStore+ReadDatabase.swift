import Foundation
import LedgerPostgres

/// Reads from a streaming standby (`LEDGER_READ_DATABASE_URL`): what it holds, and waiting for
/// what it has not replayed yet.
///
/// A store whose pool points at a hot standby reads as it reads on the primary: the gap-safe rule
/// (`transaction_id < pg_snapshot_xmin(pg_current_snapshot())`) holds there too, because a
/// standby's snapshot counts as running every transaction of the primary whose end it has not
/// replayed, including those whose ids it has only seen skipped over (PostgreSQL: "Hot Standby").
/// What a standby adds is lag: an event acknowledged by the primary may not be there yet. An
/// "as of position P" answer therefore first waits, for a bounded time, until the standby holds
/// the log through P (``waitUntilReadable(through:timeout:)``), and otherwise says it lags.
extension EventStore {
    /// The newest position a gap-safe reader of this store's database sees: that of the newest
    /// event whose transaction ended before every transaction still running there (0 when none).
    public func readableThrough() async throws -> Int64 {
        try await pool.withConnection { connection in
            try connection.query("""
                SELECT coalesce(max(position), 0) FROM events WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())
                """).single().decode(Int64.self, at: 0)
        }
    }

    /// Returns once this store's database holds the log through `position`, gap-safe: an event
    /// at `position` or later is there, and every transaction that began before it has ended.
    /// On the primary that is at once for a position it acknowledged; on a standby, once it has
    /// replayed that far.
    ///
    /// - Parameters:
    ///   - position: the log position the read is "as of" (from an append's answer, or a read of
    ///     the primary).
    ///   - timeout: how long to wait for the database to replay that far.
    ///   - interval: how often to look meanwhile (a standby sends no notifications).
    /// - Throws: ``EventStoreError/readDatabaseBehind(position:readableThrough:waited:)`` when the
    ///   wait ends first; ``PostgresError`` when the database cannot be read.
    public func waitUntilReadable(through position: Int64, timeout: Duration = .seconds(5),
                                  interval: Duration = .milliseconds(20)) async throws
    {
        let started = ContinuousClock.now
        while true {
            let holds = try await pool.withConnection { connection in
                try connection.query("""
                    SELECT EXISTS (SELECT 1 FROM events WHERE position >= \(position)
                                   AND transaction_id < pg_snapshot_xmin(pg_current_snapshot()))
                    """).single().decode(Bool.self, at: 0)
            }
            if holds { return }
            let waited = ContinuousClock.now - started
            guard waited < timeout else {
                throw EventStoreError.readDatabaseBehind(position: position, readableThrough: try await readableThrough(), waited: waited)
            }
            try await Task.sleep(for: min(interval, timeout - waited))
        }
    }
}
