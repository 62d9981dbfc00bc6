import Foundation
import LedgerPostgres

/// What other modules ask of the log, as typed questions: the store alone reads `events`
/// (docs/architecture.md, "The event store"). Each answers on a connection the caller holds,
/// so that it can take part in the caller's transaction; none opens personal fields.
extension EventStore {
    /// Whether the database answers and holds the log (the `events` table): a readiness probe's
    /// question.
    /// - Throws: `PostgresError` when the database cannot be reached.
    public func holdsLog() async throws -> Bool {
        try await pool.query("SELECT to_regclass('public.events') IS NOT NULL").single().decode(Bool.self, at: 0)
    }

    /// How many events gap-safe readers can see yet (below the read horizon), and how many the
    /// log holds: what a caller waits on before it reads back everything it appended.
    public func eventCounts() async throws -> (readable: Int, stored: Int) {
        let row = try await pool.query("""
            SELECT count(*) FILTER (WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())), count(*) FROM events
            """).single()
        return (try row.decode(Int.self, at: 0), try row.decode(Int.self, at: 1))
    }

    /// Whether `stream` holds any event.
    public static func streamExists(_ stream: String, on connection: PostgresConnection) throws -> Bool {
        try connection.query("SELECT EXISTS (SELECT 1 FROM event_key_rows WHERE stream_id = \(stream))")
            .single().decode(Bool.self, at: 0)
    }

    /// Whether `stream` holds an event of one of `types`.
    public static func streamHolds(_ stream: String, anyOf types: [String], on connection: PostgresConnection) throws -> Bool {
        try connection.query("""
            SELECT EXISTS (SELECT 1 FROM events WHERE stream_id = \(stream) AND event_type = ANY(\(PostgresQuery.textArrayLiteral(types))::text[]))
            """).single().decode(Bool.self, at: 0)
    }

    /// The newest event of `stream` as stored (personal fields sealed), or nil for an empty stream.
    public static func lastStoredEvent(of stream: String, on connection: PostgresConnection) throws -> RecordedEvent? {
        var query = PostgresQuery(sql: "SELECT \(columns) FROM events WHERE stream_id = ")
        query.append(bind: stream)
        query.append(sql: " ORDER BY events.stream_version DESC LIMIT 1")
        return try connection.query(query).first.map(Self.record)
    }

    /// The id of the newest event of `type` in `stream` whose top-level data member `member` is
    /// the string `value`, or nil.
    public static func newestEventID(ofType type: String, in stream: String, whereMember member: String, is value: String,
                                     on connection: PostgresConnection) throws -> UUID? {
        try connection.query("""
            SELECT event_id FROM events
            WHERE stream_id = \(stream) AND event_type = \(type) AND data ->> \(member) = \(value)
            ORDER BY position DESC LIMIT 1
            """).first.map { try $0.decode(UUID.self, at: 0) }
    }

    /// Every event after `position`, in position order, as stored (personal fields sealed): for
    /// tools that know nothing else appends meanwhile (position order is not the gap-safe
    /// order of ``readAll(after:limit:filter:asOf:on:)``).
    public static func storedEvents(afterPosition position: Int64, on connection: PostgresConnection) throws -> [RecordedEvent] {
        var query = PostgresQuery(sql: "SELECT \(columns) FROM events WHERE position > ")
        query.append(bind: position)
        query.append(sql: " ORDER BY events.position")
        return try connection.query(query).map(Self.record)
    }

    /// The position of the newest event, or 0 for an empty log.
    public static func lastPosition(on connection: PostgresConnection) throws -> Int64 {
        try connection.query("SELECT coalesce(max(position), 0) FROM events").single().decode(Int64.self, at: 0)
    }

    /// When the event at `position` was recorded, or nil when there is none.
    public static func recordedAt(position: Int64, on connection: PostgresConnection) throws -> Date? {
        try connection.query("SELECT recorded_at FROM events WHERE position = \(position)").first
            .map { try $0.decode(Date.self, at: 0) }
    }

    /// How far the log runs ahead of `checkpoint` in events of `types`: their number, and the
    /// seconds since the oldest of them was recorded (0 when there is none).
    public static func backlog(after checkpoint: GlobalCheckpoint, ofTypes types: [String],
                               on connection: PostgresConnection) throws -> (events: Int64, oldestSeconds: Double) {
        let row = try connection.query("""
            SELECT count(*), coalesce(extract(epoch FROM clock_timestamp() - min(recorded_at)), 0)::float8 FROM events
            WHERE (transaction_id, position) > (\(String(checkpoint.transactionID))::xid8, \(checkpoint.position))
              AND event_type = ANY(\(PostgresQuery.textArrayLiteral(types))::text[])
            """).single()
        return (try row.decode(Int64.self, at: 0), max(0, try row.decode(Double.self, at: 1)))
    }

    /// How many events of `types` the log holds: counted when the planner expects fewer than
    /// `threshold`, else the planner's estimate (from the table's statistics, typically within a
    /// few percent), since counting a large log reads all of it.
    public static func eventCount(ofTypes types: [String], estimatingFrom threshold: Int64 = 100_000,
                                  on connection: PostgresConnection) throws -> (count: Int64, estimated: Bool) {
        let list = PostgresQuery.textArrayLiteral(types)
        let plan = try connection.query("EXPLAIN (FORMAT JSON) SELECT 1 FROM events WHERE event_type = ANY(\(list)::text[])")
            .single().decode(String.self, at: 0)
        let estimate = ((try? JSONSerialization.jsonObject(with: Data(plan.utf8))) as? [[String: Any]])?
            .first.flatMap { $0["Plan"] as? [String: Any] }.flatMap { ($0["Plan Rows"] as? NSNumber)?.int64Value }
        if let estimate, estimate >= threshold { return (estimate, true) }
        return (try connection.query("SELECT count(*) FROM events WHERE event_type = ANY(\(list)::text[])")
            .single().decode(Int64.self, at: 0), false)
    }

    /// Every distinct `app_id` the events' metadata records.
    public static func recordedAppIDs(on connection: PostgresConnection) throws -> [String] {
        try connection.query("SELECT DISTINCT metadata ->> 'app_id' FROM events WHERE metadata ? 'app_id' ORDER BY 1")
            .map { try $0.decode(String.self, at: 0) }
    }
}
