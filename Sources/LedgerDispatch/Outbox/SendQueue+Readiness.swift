import LedgerPostgres

extension SendQueue {
    /// Reads the queue as a worker's claim would (one row of `send_queue`, whatever its state), so
    /// that `ledger worker`'s `GET /ready` says the worker can work, not only that its process
    /// runs: the database answers, the schema is migrated and the role may read the queue.
    /// - Throws: `PostgresError`: a connection loss (``ConnectionLossRetry/isConnectionLoss(_:)``)
    ///   when the database is away, another error when the queue cannot be read.
    public static func checkReadable(on connection: PostgresConnection) throws {
        _ = try connection.query("SELECT count(*) FROM (SELECT 1 FROM send_queue LIMIT 1) AS probe").single()
    }
}
