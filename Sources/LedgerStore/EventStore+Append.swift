import Foundation
import LedgerPostgres

extension EventStore {
    /// The append, as one statement. `$1` stream, `$2` expected version (NULL: any), `$3` the batch
    /// as a JSON array, `$4` its length.
    ///
    /// `head` is the stream's last event; `chain` walks the batch, each hash covering the one
    /// before (`ledger_event_hash`, inlined). The INSERT stores nothing when the expected version
    /// does not hold or an id is already stored; a unique-key race with a concurrent append to
    /// the same stream skips rows (`ON CONFLICT DO NOTHING`), and if that left the batch partly
    /// stored, `ledger_batch_interrupted` fails the whole statement. (The check also accepts 0: the
    /// planner may evaluate it on `checked` alone, before joining the inserted rows.)
    static let appendSQL = """
        WITH RECURSIVE
          input AS (SELECT n, e FROM jsonb_array_elements($3::jsonb) WITH ORDINALITY AS t(e, n)),
          clock AS (SELECT clock_timestamp() AS t),
          head AS (SELECT stream_version AS v, hash AS h FROM events WHERE stream_id = $1::text
                   ORDER BY stream_version DESC LIMIT 1),
          start AS (SELECT coalesce((SELECT v FROM head), 0) AS v, (SELECT h FROM head) AS h),
          chain (n, v, h) AS (
            SELECT 0::bigint, (SELECT v FROM start), (SELECT h FROM start)
            UNION ALL
            SELECT c.n + 1, c.v + 1,
                   ledger_event_hash(c.h, $1::text, c.v + 1, (i.e->>'event_id')::uuid, i.e->>'event_type',
                                     (i.e->>'schema_version')::integer, i.e->'data', i.e->'metadata',
                                     (i.e->>'occurred_at')::timestamptz, (SELECT t FROM clock))
            FROM chain AS c JOIN input AS i ON i.n = c.n + 1
          ),
          ins AS (
            INSERT INTO events (stream_id, stream_version, event_id, event_type, schema_version, data, metadata,
                                occurred_at, recorded_at, hash)
            SELECT $1::text, c.v, (i.e->>'event_id')::uuid, i.e->>'event_type', (i.e->>'schema_version')::integer,
                   i.e->'data', i.e->'metadata', (i.e->>'occurred_at')::timestamptz, (SELECT t FROM clock), c.h
            FROM chain AS c JOIN input AS i ON i.n = c.n
            WHERE ($2::bigint IS NULL OR (SELECT v FROM start) = $2::bigint)
              AND NOT EXISTS (SELECT 1 FROM input AS x JOIN events AS ev ON ev.event_id = (x.e->>'event_id')::uuid)
            ORDER BY c.n
            ON CONFLICT DO NOTHING
            RETURNING position, stream_version, transaction_id, recorded_at, hash
          ),
          checked AS (SELECT count(*) AS inserted FROM ins)
        SELECT ins.position, ins.stream_version, ins.transaction_id::text, ins.recorded_at, ins.hash
        FROM ins, checked
        WHERE checked.inserted IN (0, $4::bigint) OR ledger_batch_interrupted($1::text, checked.inserted, $4::bigint)
        ORDER BY ins.stream_version
        """

    /// Appends a validated batch; tells a stored batch (idempotent retry), an id conflict and a
    /// version conflict apart when nothing was inserted.
    func appendPrepared(_ payload: String, events: [NewEvent], to stream: String, expected: ExpectedVersion,
                        on connection: PostgresConnection) throws -> AppendResult
    {
        let inTransaction = connection.isInTransaction
        // With `.any`, losing a race for the next version just means reading the head again.
        for _ in 0..<20 {
            let attempt = Result { () throws(PostgresError) -> PostgresRows in
                try connection.query(
                    PostgresQuery(sql: Self.appendSQL, binds: [
                        .text(stream), expected.sqlValue.map(PostgresValue.int64) ?? .null, .jsonb(payload),
                        .int64(Int64(events.count)),
                    ]), prepare: true)
            }
            let rows: PostgresRows
            switch attempt {
            case .success(let returned):
                rows = returned
            case .failure(let error) where error.sqlState == EventStoreError.SQLStates.wrongExpectedVersion:
                // A concurrent append took some of our versions; nothing of ours is stored.
                if inTransaction || expected != .any {
                    let actual = inTransaction ? -1 : try Self.currentVersion(stream, on: connection)
                    throw EventStoreError.wrongExpectedVersion(stream: stream, expected: expected, actual: actual)
                }
                continue
            case .failure(let error) where ["22P02", "22P05", "22023"].contains(error.sqlState ?? ""):
                // jsonb refused a payload: name the event.
                throw Self.diagnoseRefusedBatch(events) ?? error
            case .failure(let error):
                throw error
            }
            if rows.count == events.count {
                if !inTransaction {
                    notifier.signal()
                } else if !connection.afterCommit({ [notifier] in notifier.signal() }) {
                    // A transaction the wrapper does not manage: notify inside it (this
                    // serialises its commit with other notifying ones, but no event goes unannounced).
                    try connection.execute("SELECT pg_notify('ledger_events', '')")
                }
                return try AppendResult(events: zip(events, rows).map { event, row in
                    AppendedEvent(
                        id: event.id, position: try row.decode(Int64.self, at: 0),
                        streamVersion: try row.decode(Int64.self, at: 1),
                        transactionID: UInt64(try row.decode(String.self, at: 2)) ?? 0,
                        recordedAt: try row.decode(Date.self, at: 3), hash: try row.decode(Data.self, at: 4))
                }, wasDuplicate: false)
            }
            // Nothing inserted: which rule stopped it?
            if try Self.anyStored(events.map(\.id), on: connection) {
                if let stored = try Self.readBack(events, stream: stream, privacy: privacy, on: connection) { return stored }
                let clash = try Self.fetchByIDs(events.map(\.id), privacy: privacy, on: connection).first?.id ?? events[0].id
                throw EventStoreError.eventIDConflict(eventID: clash)
            }
            let actual = try Self.currentVersion(stream, on: connection)
            if let wanted = expected.sqlValue, wanted != actual {
                throw EventStoreError.wrongExpectedVersion(stream: stream, expected: expected, actual: actual)
            }
            // The expected version held when we read it, but another writer took the next version.
            if expected != .any {
                throw EventStoreError.wrongExpectedVersion(stream: stream, expected: expected, actual: actual)
            }
        }
        throw EventStoreError.wrongExpectedVersion(stream: stream, expected: expected,
                                                   actual: try Self.currentVersion(stream, on: connection))
    }

    static func currentVersion(_ stream: String, on connection: PostgresConnection) throws -> Int64 {
        try connection.query(
            "SELECT coalesce(max(stream_version), 0) FROM events WHERE stream_id = \(stream)", prepare: true
        ).single().decode(Int64.self, at: 0)
    }

    static func anyStored(_ ids: [UUID], on connection: PostgresConnection) throws -> Bool {
        let literal = "{" + ids.map { $0.uuidString.lowercased() }.joined(separator: ",") + "}"
        return try connection.query("SELECT EXISTS (SELECT 1 FROM events WHERE event_id = ANY(\(literal)::uuid[]))")
            .single().decode(Bool.self, at: 0)
    }
}
