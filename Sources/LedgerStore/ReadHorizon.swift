import Foundation
import LedgerPostgres

/// Where gap-safe reading stands, and who holds it back.
///
/// Every gap-safe reader (projections, subscriptions, `readAll`) returns only events whose
/// transaction id is below that of every transaction still running on the server
/// (`pg_snapshot_xmin(pg_current_snapshot())`, see ``EventStore/readAll(after:limit:filter:asOf:)``).
/// Transaction ids are the server's, not the database's: one transaction left open anywhere on
/// it, once it has an id (it wrote something: a session `idle in transaction` after an UPDATE, a
/// long migration, a `DROP DATABASE` waiting for its checkpoint, a forgotten prepared
/// transaction), holds every reader of every ledger on that server back, and projections stop
/// moving while appends go on. This says how many committed
/// events are waiting behind the horizon and which transactions are in front of them, so that
/// `ledger projections status` can name the session to end.
///
/// A role without `pg_read_all_stats` (or `pg_monitor`) sees other roles' sessions without their
/// state, start time and statement: they are still listed, by process id, database and role.
public struct ReadHorizon: Sendable, Hashable, Codable {
    /// A transaction that holds the horizon back: it took a transaction id before the newest
    /// waiting event's and has not ended.
    public struct Holder: Sendable, Hashable, Codable {
        /// The server process (`pg_terminate_backend(pid)` ends it); nil for a prepared
        /// transaction, which belongs to no session.
        public var pid: Int32?
        /// Its transaction id (32 bits, as `pg_stat_activity` shows it).
        public var transactionID: UInt32
        /// Its database.
        public var database: String?
        /// Its role.
        public var user: String?
        /// Its `application_name`.
        public var application: String?
        /// `active`, `idle in transaction`, …; `prepared` for a prepared transaction (its
        /// global id in ``query``); nil where the server does not show it to this role.
        public var state: String?
        /// Seconds since the transaction started; nil where the server does not show it to this role.
        public var secondsOpen: Double?
        /// The start of its current or last statement; `<insufficient privilege>` where the server
        /// does not show it to this role.
        public var query: String?

        /// A holder as the server describes it.
        public init(pid: Int32?, transactionID: UInt32, database: String?, user: String?, application: String?,
                    state: String?, secondsOpen: Double?, query: String?) {
            self.pid = pid
            self.transactionID = transactionID
            self.database = database
            self.user = user
            self.application = application
            self.state = state
            self.secondsOpen = secondsOpen
            self.query = query
        }
    }

    /// The lowest transaction id still running: events of this id or later are not read yet.
    public var transactionID: UInt64
    /// Committed events that readers cannot see yet because of the transactions below (counted
    /// up to ``countLimit``).
    public var eventsWaiting: Int64
    /// Seconds since the oldest of them was recorded: how long the horizon has held readers back
    /// (0 when none wait). Needs no privilege, unlike a holder's ``Holder/secondsOpen``.
    public var secondsWaiting: Double
    /// The transactions whose ids are below the newest waiting event's, lowest id (the one that
    /// pins the horizon) first, at most the limit asked for; empty when nothing waits. Past
    /// ``countLimit`` waiting events, "newest" is the newest of the first ``countLimit`` in log
    /// order (and ``secondsWaiting`` their oldest's age), so a holder behind only later ones is
    /// not listed; the one pinning the horizon always is.
    public var holders: [Holder]

    /// Waiting events are counted up to this many (a count of millions on every poll would cost
    /// most when the server is already held up).
    public static let countLimit = 100_000

    /// A horizon as read.
    public init(transactionID: UInt64, eventsWaiting: Int64, secondsWaiting: Double, holders: [Holder]) {
        self.transactionID = transactionID
        self.eventsWaiting = eventsWaiting
        self.secondsWaiting = secondsWaiting
        self.holders = holders
    }

    /// Reads the horizon on `connection`, naming at most `limit` holders.
    public static func read(on connection: PostgresConnection, limit: Int = 5) throws -> ReadHorizon {
        let row = try connection.query("""
            SELECT pg_snapshot_xmin(pg_current_snapshot())::text, count(*), max(transaction_id)::text,
                   coalesce(extract(epoch FROM clock_timestamp() - min(recorded_at)), 0)::float8
            FROM (SELECT transaction_id, recorded_at FROM events
                  WHERE transaction_id >= pg_snapshot_xmin(pg_current_snapshot())
                  ORDER BY transaction_id, position LIMIT \(Int64(countLimit))) AS waiting
            """).single()
        let horizon = try row.decode(UInt64.self, at: 0)
        let waiting = try row.decode(Int64.self, at: 1)
        guard waiting > 0, let newest = try row.decode(String?.self, at: 2) else {
            return ReadHorizon(transactionID: horizon, eventsWaiting: 0, secondsWaiting: 0, holders: [])
        }
        let secondsWaiting = max(0, try row.decode(Double.self, at: 3))
        // Sessions and prepared transactions (2PC), lowest id first: the lowest pins the horizon.
        let holders = try connection.query("""
            SELECT pid, datname::text, usename::text, application_name, state, age_seconds, query, xid::text FROM (
                SELECT pid, datname, usename, application_name, state,
                       extract(epoch FROM clock_timestamp() - xact_start)::float8 AS age_seconds,
                       left(query, 200) AS query, backend_xid AS xid
                FROM pg_stat_activity WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid()
                UNION ALL
                SELECT NULL, database, owner, NULL, 'prepared',
                       extract(epoch FROM clock_timestamp() - prepared)::float8, gid, transaction
                FROM pg_prepared_xacts
            ) AS open_transactions
            WHERE age(xid) > age(\(newest)::xid8::xid)
            ORDER BY age(xid) DESC LIMIT \(Int64(limit))
            """).map { row in
                Holder(pid: try row.decode(Int32?.self, at: 0), transactionID: UInt32(try row.decode(String.self, at: 7)) ?? 0,
                       database: try row.decode(String?.self, at: 1),
                       user: try row.decode(String?.self, at: 2), application: try row.decode(String?.self, at: 3),
                       state: try row.decode(String?.self, at: 4), secondsOpen: try row.decode(Double?.self, at: 5),
                       query: try row.decode(String?.self, at: 6))
            }
        return ReadHorizon(transactionID: horizon, eventsWaiting: waiting, secondsWaiting: secondsWaiting, holders: holders)
    }
}
