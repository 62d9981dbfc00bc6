import Foundation
import LedgerPostgres
import Synchronization

/// A lone event appended outside a transaction, hashed by the store: the common single append.
///
/// The other append statements have the database compute each hash (`ledger_event_hash`,
/// schema/0001) and stamp `recorded_at` with its clock. Here the store does both, the same way
/// (``EventHash`` over ``JSONBText``'s printing of the payload; the database's clock as measured
/// on the session, ``PostgresConnection/serverClock()``): that work was most of what a single
/// append cost beyond a bare insert (docs/performance.md). `ledger verify` recomputes every hash
/// from what is stored, so a hash computed here is checked like any other.
///
/// Three forms:
/// - After a stream's head the store knows (a hint), or as the first event of a stream the
///   caller says is new: a plain insert. A stale hint (another writer took the version), an
///   event id already stored (a retry) or a stream that exists where none was expected fail it on
///   a unique key (`23505`, leaving nothing behind, which is why this runs only outside a
///   transaction), and the head-reading statement then tells those cases apart.
/// - A stream the store knows nothing of: a head-reading insert
///   (``EventStore/appendFirstOrNextSQL``), which takes the store's hash and `recorded_at` if
///   the stream turns out to have no event, and computes them after the head otherwise. One
///   round trip either way; the same unique keys, or an expected version that does not hold,
///   leave the rest to the head-reading statement.
/// - A stream the store knows nothing of (no hint at all, not even one this session may not
///   use), while such streams have mostly turned out new (``NewStreamOdds``: a new device's
///   first event is the common case): the plain insert as version 1. A stream that exists
///   fails it on its unique key, and the head-reading statement appends after the head, as for
///   a stale hint. The plain insert costs the server about half what the head-reading one does,
///   and a session that never reads a head never prepares and plans that statement.
///
/// Events that end a send keep the statements that refuse a second one.
struct HashedInsert {
    /// Which statement.
    enum Form {
        /// ``EventStore/insertHashedSQL``.
        case plain
        /// ``EventStore/appendFirstOrNextSQL``.
        case firstOrNext
        /// ``EventStore/insertHashedSQL`` as version 1 of a stream the store knows nothing of,
        /// on the odds that it is new (``NewStreamOdds``).
        case guessedFirst
    }

    /// The statement and its parameters.
    var query: PostgresQuery
    var form: Form
    /// The event as the plain insert stores it (as the first event, for ``Form/firstOrNext``), but
    /// for its position and transaction.
    var event: AppendedEvent
    /// Whether it goes in after a hint.
    var usesHint: Bool
    /// For a stream the store knows nothing of: the odds it is new, to note what it was.
    var odds: NewStreamOdds?
}

extension PreparedBatch {
    /// The lone event as the store appends it outside a transaction (``HashedInsert``): right
    /// after `hint`, as version 1 when the append expects no stream and there is no hint, or as
    /// whatever the stream's head makes it when there is no hint. Its `recorded_at` is the
    /// database's clock now, and never before the head's. Nil when the batch is not one event,
    /// the event ends a send, the expected version rules the hint out, or ``JSONBText`` cannot be
    /// certain of how the database prints the payload, or the session's reading of the server's
    /// clock cannot be had.
    ///
    /// `odds`, for a stream the store knows nothing of, are noted with what it turns out to be;
    /// while they favour a new stream, one that the append allows to be new (`.any`) is inserted
    /// as version 1 without reading its head (``HashedInsert/Form/guessedFirst``).
    func hashedInsert(stream: String, expected: ExpectedVersion, hint: StreamHeads.Head?, odds: NewStreamOdds? = nil,
                      on connection: PostgresConnection) -> HashedInsert? {
        guard events.count == 1, let event = events.first, let text = texts.first,
            !EventStore.terminalSendEventTypes.contains(event.type) else { return nil }
        let form: HashedInsert.Form
        switch (expected, hint) {
        case (.noStream, nil): form = .plain
        case (.noStream, _?): return nil
        case (.exact(let version), let hint?) where version != hint.version: return nil
        case (_, _?): form = .plain
        case (.any, nil) where odds?.favoursNew == true: form = .guessedFirst
        case (_, nil): form = .firstOrNext
        }
        guard let data = JSONBText.canonical(text.data), let metadata = JSONBText.canonical(text.metadata) else { return nil }
        // Without the server's clock (it did not read), the database's statements stamp it.
        guard var recordedAt = try? connection.serverClock().now() else { return nil }
        if let hint, hint.recordedAt > recordedAt { recordedAt = hint.recordedAt }
        // Stored, hashed and returned at the microsecond the column keeps, hashed from the very
        // date that is sent.
        recordedAt = Date(timeIntervalSince1970: Double(PostgresTimestamp.microseconds(recordedAt)) / 1_000_000)
        let recordedMicroseconds = PostgresTimestamp.microseconds(recordedAt)
        let version = (hint?.version ?? 0) + 1
        let hash = EventHash.compute(
            previous: hint?.hash, stream: stream, version: version, eventID: event.id, type: event.type,
            schemaVersion: event.schemaVersion, data: data, metadata: metadata,
            occurredAtMicroseconds: PostgresTimestamp.microseconds(event.occurredAt),
            recordedAtMicroseconds: recordedMicroseconds)
        let dataText = String(decoding: data, as: UTF8.self), metadataText = String(decoding: metadata, as: UTF8.self)
        let query: PostgresQuery
        switch form {
        case .plain, .guessedFirst:
            query = PostgresQuery(sql: EventStore.insertHashedSQL, binds: [
                .text(stream), .int64(version), .uuid(event.id), .text(event.type), .int32(Int32(event.schemaVersion)),
                .jsonb(dataText), .jsonb(metadataText), .timestamptz(event.occurredAt), .timestamptz(recordedAt), .bytea(hash),
            ])
        case .firstOrNext:
            query = PostgresQuery(sql: EventStore.appendFirstOrNextSQL, binds: [
                .text(stream), expected.sqlValue.map(PostgresValue.int64) ?? .null, .uuid(event.id), .text(event.type),
                .int32(Int32(event.schemaVersion)), .jsonb(dataText), .jsonb(metadataText), .timestamptz(event.occurredAt),
                .timestamptz(recordedAt), .bytea(hash),
            ])
        }
        let stored = AppendedEvent(id: event.id, position: 0, streamVersion: version, transactionID: 0,
                                   recordedAt: recordedAt, hash: hash)
        return HashedInsert(query: query, form: form, event: stored, usesHint: hint != nil, odds: odds)
    }
}

extension EventStore {
    /// The plain insert of a ``HashedInsert``: every column given, nothing computed but the
    /// position and the transaction, which it returns.
    static let insertHashedSQL = """
        INSERT INTO events (stream_id, stream_version, event_id, event_type, schema_version, data, metadata,
                            occurred_at, recorded_at, hash)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
        RETURNING position, transaction_id::text
        """

    /// The head-reading append for a stream the store knows nothing of, outside a transaction:
    /// ``appendOneSQL`` with `$9` and `$10`, the `recorded_at` and hash the store worked out for
    /// the stream's first event, taken when the stream turns out to have none, and without the
    /// guards that make it insert nothing: an id already stored or a lost race fails it on a
    /// unique key (`23505`), and an expected version that does not hold still inserts nothing.
    /// ``appendOneSQL`` then decides. (Events that end a send never come here.)
    static let appendFirstOrNextSQL = insertOneSQL(first: (recordedAt: "$9::timestamptz", hash: "$10::bytea"), guarded: false)

    /// Runs `insert` (outside a transaction) and returns the stored event, or nil when it stored
    /// nothing (a unique key refused the plain insert; the head-reading one found an id stored,
    /// another version expected or a race lost) and the head-reading statement must decide.
    func appendHashed(_ insert: HashedInsert, batch: PreparedBatch, to stream: String, sessionsOpened: UInt64,
                      on connection: PostgresConnection) throws -> AppendResult? {
        let rows: PostgresRows
        switch Result(catching: { () throws(PostgresError) -> PostgresRows in try connection.query(insert.query, prepare: true) }) {
        case .success(let returned): rows = returned
        case .failure(let error) where error.sqlState == SQLState.uniqueViolation:
            // The stream exists, or the event is a retry (or its id is taken elsewhere): counted
            // as a wrong guess either way, which errs towards reading heads.
            if insert.form == .guessedFirst { insert.odds?.note(wasNew: false) }
            return nil
        case .failure(let error) where error.sqlState == EventStoreError.SQLStates.recordedAtRefused
            || error.sqlState == EventStoreError.SQLStates.unchained:
            // The database refused the time this session's reading of its clock gave (the clock
            // was stepped since), or the hint's chain: measure again, and let the statements
            // that read the head and stamp the time decide.
            connection.forgetServerClock()
            return nil
        case .failure(let error): throw Self.diagnosed(error, batch.events)
        }
        guard rows.count == 1 else {
            // Nothing stored. From the head-reading statement: an expected version that did not
            // hold, which says nothing of whether streams tend to be new. From a plain insert: a
            // taken key skipped rather than refused, as `events` partitioned by time does it
            // (ops/sql/partition-events-by-time.sql), so the same wrong guess as a 23505 above.
            if insert.form == .guessedFirst { insert.odds?.note(wasNew: false) }
            return nil
        }
        switch insert.form {
        case .firstOrNext:
            let result = try appended(batch.events, rows: rows, to: stream, sessionsOpened: sessionsOpened, on: connection)
            let wasNew = result.events.first?.hash == insert.event.hash
            insert.odds?.note(wasNew: wasNew)
            if wasNew { hashedAppends.increment() }
            return result
        case .plain, .guessedFirst:
            if insert.form == .guessedFirst { insert.odds?.note(wasNew: true) }
            var stored = insert.event
            let row = try rows.single()
            stored.position = try row.decode(Int64.self, at: 0)
            stored.transactionID = try row.decode(UInt64.self, at: 1)
            if insert.usesHint { heads.noteHit() }
            hashedAppends.increment()
            try announceAppend(on: connection)
            heads.rememberCommitted(stream, version: stored.streamVersion, hash: stored.hash, recordedAt: stored.recordedAt,
                                    sessionsOpened: sessionsOpened, on: connection)
            return AppendResult(events: [stored], wasDuplicate: false)
        }
    }
}

/// Whether a stream the store knows no head of is likely to be new: then its first append is
/// a plain insert as version 1, and otherwise the statement that reads the head
/// (``HashedInsert``).
///
/// A guess that is right saves about half the statement's server work; one that is wrong costs
/// a failed insert and a second statement. So the store guesses "new" only while at least four
/// in five of such streams have recently turned out new: each new one adds 1 to a score, each
/// that had events takes 4 away, the score stays within ±``limit``, and the guess is "new"
/// while it is above 0. It starts at 0, so a store that has only met existing streams (just
/// restarted, say) reads heads, as a store with no record would.
final class NewStreamOdds: Sendable {
    private let score = Atomic<Int>(0)

    /// The score's bound either way: how much history weighs.
    static let limit = 16

    /// Whether to guess that a stream with no known head is new.
    var favoursNew: Bool { score.load(ordering: .relaxed) > 0 }

    /// Records what a stream with no known head turned out to be.
    func note(wasNew: Bool) {
        var current = score.load(ordering: .relaxed)
        while true {
            let next = wasNew ? min(current + 1, Self.limit) : max(current - 4, -Self.limit)
            if next == current { return }
            let (exchanged, original) = score.compareExchange(expected: current, desired: next, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
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
