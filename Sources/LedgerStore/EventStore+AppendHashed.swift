import Foundation
import LedgerPostgres
import Synchronization

/// A lone event appended outside a transaction, hashed by the store: the common single append.
///
/// The other append statements have the database compute each hash (`ledger_event_hash`,
/// schema/0001) and stamp `recorded_at` with its clock. Here the store does both, the same way
/// (``EventHash`` over ``JSONBText``'s printing of the payload; the database's clock as measured
/// on the session, ``PostgresConnection/serverClock()``), and the statement is a plain insert:
/// that work was most of what a single append cost beyond a bare insert (docs/performance.md).
/// `ledger verify` recomputes every hash in the database, so a hash computed here is checked
/// against the database's own rule like any other.
///
/// The rules the other statements check in SQL hold here through the table's unique keys: a
/// stale hint (another writer took the version), an event id already stored (a retry) or a
/// stream that exists where none was expected fail the insert (`23505`, leaving nothing behind,
/// which is why this runs only outside a transaction), and the head-reading statement then tells
/// those cases apart. Events that end a send keep the statements that refuse a second one.
struct HashedInsert {
    /// The insert (``EventStore/insertHashedSQL``).
    var query: PostgresQuery
    /// The event as it will be stored, but for its position and transaction.
    var event: AppendedEvent
    /// Whether it goes in after a hint (rather than as a stream's first event).
    var usesHint: Bool
}

extension PreparedBatch {
    /// The lone event as ``EventStore/insertHashedSQL`` appends it: right after the stream's
    /// head (`hint`, or else read now on `connection`), or as version 1 when the append expects no
    /// stream and no hint says otherwise. Its `recorded_at` is the database's clock now, and never
    /// before the head's. Nil when the batch is not one event, the event ends a send, the expected
    /// version rules the head out, or ``JSONBText`` cannot be certain of how the database prints
    /// the payload.
    ///
    /// - Throws: ``PostgresError`` when the session fails reading the head or the server's clock.
    func hashedInsert(stream: String, expected: ExpectedVersion, hint: StreamHeads.Head?,
                      on connection: PostgresConnection) throws(PostgresError) -> HashedInsert? {
        guard events.count == 1, let event = events.first, let text = texts.first,
            !EventStore.terminalSendEventTypes.contains(event.type) else { return nil }
        guard let data = JSONBText.canonical(text.data), let metadata = JSONBText.canonical(text.metadata) else { return nil }
        let head: (version: Int64, hash: Data, recordedAt: Date)?
        var sql = EventStore.insertHashedSQL
        switch (expected, hint) {
        case (.noStream, nil): head = nil
        case (.noStream, _?): return nil
        case (_, let hint?): head = (hint.version, hint.hash, hint.recordedAt)
        case (.any, nil):
            // Most likely a stream's first event: inserted only if the stream has none, and
            // otherwise nothing is written and the head-reading statement appends.
            head = nil
            sql = EventStore.insertFirstHashedSQL
        case (_, nil):
            // The committed head, read on this session: the insert follows it on the same server.
            let rows = try connection.query("""
                SELECT stream_version, hash, recorded_at FROM events WHERE stream_id = \(stream)
                ORDER BY stream_version DESC LIMIT 1
                """, prepare: true)
            head = rows.count == 0 ? nil
                : (try rows[0].decode(Int64.self, at: 0), try rows[0].decode(Data.self, at: 1), try rows[0].decode(Date.self, at: 2))
        }
        if case .exact(let version) = expected, version != head?.version ?? 0 { return nil }
        var recordedAt = try connection.serverClock().now()
        if let head, head.recordedAt > recordedAt { recordedAt = head.recordedAt }
        // Stored, hashed and returned at the microsecond the column keeps.
        let recordedMicroseconds = PostgresTimestamp.microseconds(recordedAt)
        recordedAt = Date(timeIntervalSince1970: Double(recordedMicroseconds) / 1_000_000)
        let version = (head?.version ?? 0) + 1
        let hash = EventHash.compute(
            previous: head?.hash, stream: stream, version: version, eventID: event.id, type: event.type,
            schemaVersion: event.schemaVersion, data: data, metadata: metadata,
            occurredAtMicroseconds: PostgresTimestamp.microseconds(event.occurredAt),
            recordedAtMicroseconds: recordedMicroseconds)
        let query = PostgresQuery(sql: sql, binds: [
            .text(stream), .int64(version), .uuid(event.id), .text(event.type), .int32(Int32(event.schemaVersion)),
            .jsonb(String(decoding: data, as: UTF8.self)), .jsonb(String(decoding: metadata, as: UTF8.self)),
            .timestamptz(event.occurredAt), .timestamptz(recordedAt), .bytea(hash),
        ])
        let stored = AppendedEvent(id: event.id, position: 0, streamVersion: version, transactionID: 0,
                                   recordedAt: recordedAt, hash: hash)
        return HashedInsert(query: query, event: stored, usesHint: hint != nil)
    }
}

extension EventStore {
    /// The insert of a ``HashedInsert``: every column given, nothing computed but the position
    /// and the transaction, which it returns.
    static let insertHashedSQL = """
        INSERT INTO events (stream_id, stream_version, event_id, event_type, schema_version, data, metadata,
                            occurred_at, recorded_at, hash)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
        RETURNING position, transaction_id::text
        """

    /// ``insertHashedSQL`` for a stream's first event when the store knows nothing of the stream
    /// and any version will do: it inserts only if the stream has no event yet, and otherwise
    /// nothing (no row, no transaction id, no flush). `$2` is 1.
    static let insertFirstHashedSQL = """
        INSERT INTO events (stream_id, stream_version, event_id, event_type, schema_version, data, metadata,
                            occurred_at, recorded_at, hash)
        SELECT $1::text, $2::bigint, $3::uuid, $4::text, $5::integer, $6::jsonb, $7::jsonb, $8::timestamptz,
               $9::timestamptz, $10::bytea
        WHERE NOT EXISTS (SELECT 1 FROM events WHERE stream_id = $1::text)
        RETURNING position, transaction_id::text
        """

    /// Runs `insert` (outside a transaction) and returns the stored event, or nil when it stored
    /// nothing (a unique key refused it, or the stream it took for new has events) and the
    /// head-reading statement must decide.
    func appendHashed(_ insert: HashedInsert, batch: PreparedBatch, to stream: String, sessionsOpened: UInt64,
                      on connection: PostgresConnection) throws -> AppendResult? {
        let rows: PostgresRows
        switch Result(catching: { () throws(PostgresError) -> PostgresRows in try connection.query(insert.query, prepare: true) }) {
        case .success(let returned): rows = returned
        case .failure(let error) where error.sqlState == SQLState.uniqueViolation: return nil
        case .failure(let error): throw Self.diagnosed(error, batch.events)
        }
        guard rows.count == 1 else { return nil }
        var stored = insert.event
        let row = try rows.single()
        stored.position = try row.decode(Int64.self, at: 0)
        stored.transactionID = UInt64(try row.decode(String.self, at: 1)) ?? 0
        if insert.usesHint { heads.noteHit() }
        hashedAppends.increment()
        try announceAppend(on: connection)
        heads.rememberCommitted(stream, version: stored.streamVersion, hash: stored.hash, recordedAt: stored.recordedAt,
                                sessionsOpened: sessionsOpened, on: connection)
        return AppendResult(events: [stored], wasDuplicate: false)
    }
}

/// A count shared by every copy of a store (``EventStore`` is a value type).
final class AppendCounter: Sendable {
    private let value = Atomic<Int>(0)

    /// The count so far.
    var count: Int { value.load(ordering: .relaxed) }

    /// Adds one.
    func increment() { value.add(1, ordering: .relaxed) }
}
