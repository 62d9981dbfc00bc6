import Foundation
import LedgerPostgres

extension EventStore {
    /// The columns every read selects, in the order ``record(from:)`` decodes them.
    ///
    /// The transaction id is selected as text under another name on purpose: a bare
    /// `ORDER BY transaction_id` would otherwise sort by that text output column ("10" before
    /// "9"), not by the `xid8` column, and global reads would come out of order. Every ORDER BY
    /// here names `events.` columns for the same reason.
    static let columns = """
        position, transaction_id::text AS transaction_text, stream_id, stream_version, event_id, event_type, schema_version, data, \
        metadata, occurred_at, recorded_at, hash
        """

    static func record(from row: PostgresRow) throws -> RecordedEvent {
        try record(from: row, at: 0)
    }

    /// The event in ``columns``' twelve columns of `row` from `first` on.
    static func record(from row: PostgresRow, at first: Int) throws -> RecordedEvent {
        RecordedEvent(
            position: try row.decode(Int64.self, at: first),
            transactionID: try row.decode(UInt64.self, at: first + 1),
            streamID: try row.decode(String.self, at: first + 2),
            streamVersion: try row.decode(Int64.self, at: first + 3),
            id: try row.decode(UUID.self, at: first + 4),
            type: try row.decode(String.self, at: first + 5),
            schemaVersion: try row.decode(Int.self, at: first + 6),
            data: try row.decode(PostgresJSONText.self, at: first + 7).data,
            metadata: try row.decode(PostgresJSONText.self, at: first + 8).data,
            occurredAt: try row.decode(Date.self, at: first + 9),
            recordedAt: try row.decode(Date.self, at: first + 10),
            hash: try row.decode(Data.self, at: first + 11))
    }

    static func appendAsOf(_ asOf: AsOf?, to query: inout PostgresQuery) {
        switch asOf {
        case .none: break
        case .position(let position):
            query.append(sql: " AND position <= ")
            query.append(bind: position)
        case .recordedAt(let time):
            query.append(sql: " AND recorded_at <= ")
            query.append(bind: time)
        }
    }

    /// Reads one stream in version order.
    ///
    /// - Parameters:
    ///   - from: forward: the first version to return (default 1); backward: the last (default: the end).
    ///   - backward: newest first.
    ///   - asOf: only what the ledger held at that position or time ("what did we know then").
    public func readStream(_ stream: String, from version: Int64? = nil, backward: Bool = false, limit: Int = 1000,
                           asOf: AsOf? = nil) async throws -> [RecordedEvent]
    {
        var query = PostgresQuery(sql: "SELECT \(Self.columns) FROM events WHERE stream_id = ")
        query.append(bind: stream)
        if let version {
            query.append(sql: backward ? " AND stream_version <= " : " AND stream_version >= ")
            query.append(bind: version)
        }
        Self.appendAsOf(asOf, to: &query)
        query.append(sql: backward ? " ORDER BY events.stream_version DESC LIMIT " : " ORDER BY events.stream_version LIMIT ")
        query.append(bind: limit)
        return try await pool.withConnection { [privacy, query] connection in
            var events = try connection.query(query).map(Self.record)
            try privacy.reveal(&events, on: connection)
            return events
        }
    }

    /// A batch of the global log and where to continue from.
    public struct GlobalBatch: Sendable {
        /// The events, in (transaction id, position) order.
        public var events: [RecordedEvent]
        /// Pass this to the next read; equal to the one given when nothing new was readable.
        public var checkpoint: GlobalCheckpoint
    }

    /// Reads the global log after a checkpoint, gap-safely.
    ///
    /// Only events whose writing transaction is older than every transaction still running
    /// (`transaction_id < pg_snapshot_xmin(pg_current_snapshot())`) are returned, ordered by
    /// (transaction id, position). An event whose transaction commits later than a reader's read
    /// therefore always sorts after that reader's checkpoint: nothing is skipped. The price: a
    /// long-running transaction anywhere on the server holds readers back until it ends.
    public func readAll(after checkpoint: GlobalCheckpoint = .start, limit: Int = 1000, filter: EventFilter = .all,
                        asOf: AsOf? = nil) async throws -> GlobalBatch
    {
        let query = Self.globalReadQuery(after: checkpoint, limit: limit, filter: filter, asOf: asOf)
        let events = try await pool.withConnection { [privacy] connection in
            var events = try connection.query(query).map(Self.record)
            try privacy.reveal(&events, on: connection)
            return events
        }
        return GlobalBatch(events: events, checkpoint: events.last?.checkpoint ?? checkpoint)
    }

    /// Reads the global log after a checkpoint on a connection the caller holds (see
    /// ``readAll(after:limit:filter:asOf:)``), for callers that work synchronously on their own
    /// thread, such as a projection applying a batch in its own transaction.
    public func readAll(after checkpoint: GlobalCheckpoint = .start, limit: Int = 1000, filter: EventFilter = .all,
                        asOf: AsOf? = nil, on connection: PostgresConnection) throws -> GlobalBatch
    {
        let rows = try connection.query(Self.globalReadQuery(after: checkpoint, limit: limit, filter: filter, asOf: asOf))
        var events = try rows.map(Self.record)
        try privacy.reveal(&events, on: connection)
        return GlobalBatch(events: events, checkpoint: events.last?.checkpoint ?? checkpoint)
    }

    static func globalReadQuery(after checkpoint: GlobalCheckpoint, limit: Int, filter: EventFilter, asOf: AsOf?)
        -> PostgresQuery
    {
        var query = PostgresQuery(sql: "SELECT \(columns) FROM events WHERE (transaction_id, position) > (")
        query.append(bind: String(checkpoint.transactionID))
        query.append(sql: "::xid8, ")
        query.append(bind: checkpoint.position)
        query.append(sql: ") AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())")
        if !filter.types.isEmpty {
            query.append(sql: " AND event_type = ANY(")
            query.append(bind: PostgresQuery.textArrayLiteral(filter.types))
            query.append(sql: "::text[])")
        }
        if !filter.categories.isEmpty {
            // A prefix match on the "C"-collated stream id: an index range per category.
            query.append(sql: " AND (")
            for (index, category) in filter.categories.enumerated() {
                if index > 0 { query.append(sql: " OR ") }
                query.append(sql: "stream_id LIKE ")
                query.append(bind: likePrefix(category) + "-%")
            }
            query.append(sql: ")")
        }
        if let app = filter.app { appendAppStreams(of: app, to: &query) }
        appendAsOf(asOf, to: &query)
        query.append(sql: " ORDER BY events.transaction_id, events.position LIMIT ")
        query.append(bind: limit)
        return query
    }

    /// `value` with LIKE's wildcards escaped.
    static func likePrefix(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
            .replacingOccurrences(of: "_", with: "\\_")
    }


    /// The events with these ids as stored (sealed fields still sealed: open them with
    /// ``PersonalDataProtection/reveal(_:on:)``), in stream order; an id not in the log is left
    /// out. For modules that read events by id on a connection they hold (the send worker's
    /// claim reads its sends' causes so, once per claim).
    public static func storedEvents(withIDs ids: [UUID], on connection: PostgresConnection) throws -> [RecordedEvent] {
        let rows: PostgresRows
        if ids.count == 1 {
            // One id (the worker's cause read, on every try): a statement whose generic plan
            // PostgreSQL keeps, instead of planning an `= ANY(array)` again on every call.
            rows = try connection.query("SELECT \(unescaped: columns) FROM events WHERE event_id = \(ids[0])", prepare: true)
        } else {
            let literal = "{" + ids.map { $0.uuidString.lowercased() }.joined(separator: ",") + "}"
            rows = try connection.query(
                "SELECT \(unescaped: columns) FROM events WHERE event_id = ANY(\(literal)::uuid[]) ORDER BY events.stream_id, events.stream_version")
        }
        return try rows.map { try record(from: $0) }
    }

    /// Events by id, in the order of `ids` (missing ones left out), their sealed fields opened.
    /// An id stored twice (possible only where `events` is hash-partitioned on `shard_key` and
    /// two appends to two devices raced with it, docs/scaling.md) gives its first stored event.
    static func fetchByIDs(_ ids: [UUID], privacy: PersonalDataProtection, on connection: PostgresConnection) throws
        -> [RecordedEvent]
    {
        var events = try storedEvents(withIDs: ids, on: connection)
        try privacy.reveal(&events, on: connection)
        let byID = Dictionary(events.map { ($0.id, $0) }, uniquingKeysWith: { $0.position <= $1.position ? $0 : $1 })
        return ids.compactMap { byID[$0] }
    }

    /// One event by id.
    public func event(id: UUID) async throws -> RecordedEvent? {
        try await pool.withConnection { [privacy] in try Self.fetchByIDs([id], privacy: privacy, on: $0).first }
    }

    /// The events with these ids, by id (an id not in the log is absent): one query, and one key
    /// lookup for all their sealed fields.
    public func events(ids: [UUID]) async throws -> [UUID: RecordedEvent] {
        guard !ids.isEmpty else { return [:] }
        let found = try await pool.withConnection { [privacy] in try Self.fetchByIDs(ids, privacy: privacy, on: $0) }
        return Dictionary(found.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The stream's current version (0 when it does not exist).
    public func streamVersion(_ stream: String) async throws -> Int64 {
        try await pool.withConnection { try Self.currentVersion(stream, on: $0) }
    }
}
