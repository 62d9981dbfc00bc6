import Foundation
import LedgerDomain
import LedgerPostgres

/// A validated batch: the events and the JSON texts the append statement stores for each
/// (the payload sealed where it carries personal data).
struct PreparedBatch {
    struct Texts {
        var data: String
        var metadata: String
    }

    let events: [NewEvent]
    let texts: [Texts]

    /// The batch as the JSON array ``EventStore/appendSQL`` takes as `$3`, written as bytes.
    var json: String {
        var json: [UInt8] = []
        json.reserveCapacity(estimatedJSONBytes + 2)
        json.append(UInt8(ascii: "["))
        for index in events.indices {
            if index > 0 { json.append(UInt8(ascii: ",")) }
            json.append(UInt8(ascii: "{"))
            writeMembers(of: index, into: &json)
            json.append(UInt8(ascii: "}"))
        }
        json.append(UInt8(ascii: "]"))
        return String(decoding: json, as: UTF8.self)
    }

    /// About how many bytes the events' JSON takes (to reserve once).
    var estimatedJSONBytes: Int { texts.reduce(0) { $0 + $1.data.utf8.count + $1.metadata.utf8.count + 200 } }

    /// Writes the members of event `index`'s JSON object (id, type, schema version, occurred at,
    /// data, metadata), without the braces.
    func writeMembers(of index: Int, into json: inout [UInt8]) {
        let event = events[index]
        let text = texts[index]
        json.append(contentsOf: Self.eventIDKey)
        json.append(contentsOf: event.id.lowercasedText.utf8)
        json.append(contentsOf: Self.eventTypeKey)
        json.append(contentsOf: event.type.utf8)
        json.append(contentsOf: Self.schemaVersionKey)
        json.append(contentsOf: String(event.schemaVersion).utf8)
        json.append(contentsOf: Self.occurredAtKey)
        json.append(contentsOf: PostgresTimestamp.format(event.occurredAt).utf8)
        json.append(contentsOf: Self.dataKey)
        json.append(contentsOf: text.data.utf8)
        json.append(contentsOf: Self.metadataKey)
        json.append(contentsOf: text.metadata.utf8)
    }

    // The envelope's keys, between the values (type names and ids need no escaping: both are
    // checked against their character rules first).
    private static let eventIDKey = Array(#""event_id":""#.utf8)
    private static let eventTypeKey = Array(#"","event_type":""#.utf8)
    private static let schemaVersionKey = Array(#"","schema_version":"#.utf8)
    private static let occurredAtKey = Array(#","occurred_at":""#.utf8)
    private static let dataKey = Array(#"","data":"#.utf8)
    private static let metadataKey = Array(#","metadata":"#.utf8)

    /// The statement and its parameters: a lone event takes the single-event statement, whose
    /// server cost is about two thirds of the batch statement's for one event.
    func query(stream: String, expected: ExpectedVersion) -> PostgresQuery {
        let version = expected.sqlValue.map(PostgresValue.int64) ?? .null
        if let event = loneEventBinds {
            return PostgresQuery(sql: EventStore.appendOneSQL, binds: [.text(stream), version] + event)
        }
        return PostgresQuery(sql: EventStore.appendSQL, binds: [.text(stream), version, .jsonb(json),
                                                                .int64(Int64(events.count))])
    }

    /// The cached-head insert of a lone event (``EventStore/appendNextSQL``): right after `head`
    /// when there is a hint and the expected version allows it (`usesHint`), or as version 1 when
    /// the append expects no stream and no hint says otherwise. Nil when neither holds, and for an
    /// event that ends a send: that one reads the head (``EventStore/appendOneSQL``), which
    /// refuses a second with LE004 before inserting, so no append relies on a conflict being
    /// swallowed for that rule (`events` partitioned by time keeps it with a plain 23505:
    /// ops/sql/partition-events-by-time.sql).
    func query(stream: String, expected: ExpectedVersion, after head: StreamHeads.Head?)
        -> (query: PostgresQuery, usesHint: Bool)?
    {
        guard let event = loneEventBinds, !EventStore.terminalSendEventTypes.contains(events[0].type) else { return nil }
        switch (expected, head) {
        case (.noStream, nil): break  // version 1, recorded at the database's clock
        case (.any, _?): break
        case (.exact(let version), let head?) where version == head.version: break
        default: return nil
        }
        let after: PostgresValue = head.map { .timestamptz($0.recordedAt) } ?? .null
        let shardKey: PostgresValue = head?.shardKey.map(PostgresValue.text) ?? .null
        let query = PostgresQuery(sql: EventStore.appendNextSQL,
                                  binds: [.text(stream), .int64(head?.version ?? 0)] + event + [after, shardKey])
        return (query, head != nil)
    }

    /// `$3`–`$8` of the single-event statements (id, type, schema version, data, metadata,
    /// occurred at); nil for a batch of more than one.
    private var loneEventBinds: [PostgresValue]? {
        guard events.count == 1, let event = events.first, let text = texts.first else { return nil }
        return [.uuid(event.id), .text(event.type), .int32(Int32(event.schemaVersion)), .jsonb(text.data),
                .jsonb(text.metadata), .timestamptz(event.occurredAt)]
    }
}

extension EventStore {
    /// The general single append: one event, in or outside a transaction, whatever the store
    /// knows of the stream. The same rules as ``appendSQL`` without the batch's JSON array. `$1`
    /// stream, `$2` expected version (NULL: any), `$3` event id, `$4` type, `$5` schema version,
    /// `$6` data, `$7` metadata, `$8` occurred at.
    ///
    /// It reads the stream's head, stamps `recorded_at` with the database's clock, never before
    /// the head's, and inserts without a hash: the database's check chains the event as it goes
    /// in (schema/0016). It inserts nothing when the expected version does not hold, the id is
    /// already stored or a concurrent append took the version (`ON CONFLICT DO NOTHING`); the
    /// store then tells those apart. A second event that ends a send fails it with LE004. The
    /// event's `shard_key` (schema/0021) comes from the stream id, or for a send from the head's
    /// key or its request's device (`ledger_shard_key`).
    static let appendOneSQL = """
        INSERT INTO events (stream_id, stream_version, event_id, event_type, schema_version, data, metadata,
                            occurred_at, recorded_at, hash, shard_key)
        SELECT $1::text, coalesce(head.v, 0) + 1, $3::uuid, $4::text, $5::integer, $6::jsonb, $7::jsonb,
               $8::timestamptz, greatest(clock.t, head.r), NULL::bytea, ledger_shard_key($1::text, $6::jsonb, head.k)
        FROM (SELECT clock_timestamp() AS t) AS clock
        LEFT JOIN LATERAL (SELECT stream_version AS v, recorded_at AS r, shard_key AS k FROM event_key_rows
                           WHERE stream_id = $1::text ORDER BY stream_version DESC LIMIT 1) AS head ON true
        WHERE ($2::bigint IS NULL OR coalesce(head.v, 0) = $2::bigint)
          AND NOT EXISTS (SELECT 1 FROM event_key_rows WHERE event_id = $3::uuid)
          AND \(refuseSecondTerminal(stream: "$1::text", type: "$4::text"))
        ON CONFLICT DO NOTHING
        RETURNING position, stream_version, transaction_id::text AS transaction_text, recorded_at, hash, shard_key
        """

    /// The event types that end their stream, from the catalog (``EventCatalog/streamEndingTypes``):
    /// one of them per stream, a database rule too (the partial unique index
    /// `events_one_terminal_per_send`, schema/0003).
    static let terminalSendEventTypes = EventCatalog.standard.streamEndingTypes

    /// The append statements' part of that rule (schema/0009): an event whose `type` (SQL) is
    /// terminal is inserted only if its `stream` has no terminal event yet, and otherwise fails
    /// the statement with LE004. Other events never call the function. (The index alone would
    /// only be a conflict, which `ON CONFLICT DO NOTHING` swallows.)
    static func refuseSecondTerminal(stream: String, type: String) -> String {
        let types = terminalSendEventTypes.sorted().map { "'\($0)'" }.joined(separator: ", ")
        return "CASE WHEN \(type) IN (\(types)) THEN ledger_refuse_second_terminal(\(stream), \(type)) ELSE true END"
    }

    /// The cached-head insert: one event after a known head. It reads no head, only whether the
    /// id is stored in any stream (one index probe: `events` hash-partitioned on `shard_key` keeps
    /// an id unique per device alone, docs/scaling.md, and the facade's lone facts come this way
    /// with no look-up of their own). `$2` the version of a committed event the stream is known
    /// to have (``StreamHeads``), or 0 for a stream's first event; `$9` that event's `recorded_at` (NULL
    /// for a first event), which the new one is never stamped before; the other parameters as in
    /// ``appendOneSQL``. The hash is left to the database's check, which reads the previous
    /// version and chains the event as it goes in (schema/0016), and which would compute it to
    /// check one given here anyway. Committed events stay, so the event after the hinted one is
    /// the stream's next unless another writer took its version since: the unique key on
    /// `(stream_id, stream_version)` and `ON CONFLICT DO NOTHING` then turn the stale hint into
    /// zero rows, as they do an event id already stored, without failing a caller's
    /// transaction, and the store runs ``appendOneSQL``, which reads the head and tells an
    /// idempotent retry from a conflict. (Events that end a send never come here.) `$10` is
    /// the hinted event's `shard_key` (schema/0021), from which a send's next event takes its
    /// own (`ledger_shard_key`); read back in the statement instead, the sub-select's set-up
    /// cost every single append ≈ 55 µs of server CPU, though it ran only for sends.
    static let appendNextSQL = """
        INSERT INTO events (stream_id, stream_version, event_id, event_type, schema_version, data, metadata,
                            occurred_at, recorded_at, shard_key)
        SELECT $1::text, $2::bigint + 1, $3::uuid, $4::text, $5::integer, $6::jsonb, $7::jsonb, $8::timestamptz,
               greatest(clock_timestamp(), $9::timestamptz),
               ledger_shard_key($1::text, $6::jsonb, $10::text)
        WHERE NOT EXISTS (SELECT 1 FROM event_key_rows WHERE event_id = $3::uuid)
        ON CONFLICT DO NOTHING
        RETURNING position, stream_version, transaction_id::text, recorded_at, hash, shard_key
        """

    /// The append, as one statement. `$1` stream, `$2` expected version (NULL: any), `$3` the batch
    /// as a JSON array, `$4` its length.
    ///
    /// `input` takes each event's fields out of the batch once; `head` is the stream's last event;
    /// `chain` numbers the versions and stamps them; the rows go in in version order without a
    /// hash, and the database's check (schema/0016) chains each to the one before as it goes in.
    /// Every row gets the stream's `shard_key` (schema/0021): the head's, or for a new stream the
    /// one its first event gives (a send's request names its device).
    /// The INSERT stores nothing when the expected version does not hold or an id is
    /// already stored; a unique-key race with a concurrent append to the same stream skips rows
    /// (`ON CONFLICT DO NOTHING`), and if that left the batch partly stored,
    /// `ledger_batch_interrupted` fails the whole statement. (The check also accepts 0: the
    /// planner may evaluate it on `checked` alone, before joining the inserted rows.)
    static let appendSQL = """
        WITH
          head AS MATERIALIZED (SELECT stream_version AS v, hash AS h, recorded_at AS r, shard_key AS k FROM event_key_rows
                                WHERE stream_id = $1::text ORDER BY stream_version DESC LIMIT 1),
          clock AS MATERIALIZED (SELECT greatest(clock_timestamp(), (SELECT r FROM head)) AS t),
          input AS MATERIALIZED (
            SELECT n, (e->>'event_id')::uuid AS id, e->>'event_type' AS type, (e->>'schema_version')::integer AS sv,
                   e->'data' AS data, e->'metadata' AS md, (e->>'occurred_at')::timestamptz AS at
            FROM jsonb_array_elements($3::jsonb) WITH ORDINALITY AS t(e, n)),
          chain AS (
            SELECT i.n, i.id, i.type, i.sv, i.data, i.md, i.at, coalesce(h.v, 0) + i.n AS v, c.t AS recorded_at,
                   NULL::bytea AS hash  -- chained by the database's check as each row goes in (schema/0016)
            FROM input AS i CROSS JOIN clock AS c LEFT JOIN head AS h ON true),
          ins AS (
            INSERT INTO events (stream_id, stream_version, event_id, event_type, schema_version, data, metadata,
                                occurred_at, recorded_at, hash, shard_key)
            SELECT $1::text, v, id, type, sv, data, md, at, recorded_at, hash,
                   ledger_shard_key($1::text, (SELECT data FROM input WHERE n = 1), (SELECT k FROM head))
            FROM chain
            WHERE ($2::bigint IS NULL OR coalesce((SELECT v FROM head), 0) = $2::bigint)
              AND NOT EXISTS (SELECT 1 FROM input AS x JOIN event_key_rows AS ev ON ev.event_id = x.id)
              AND \(refuseSecondTerminal(stream: "$1::text", type: "type"))
            ORDER BY n
            ON CONFLICT DO NOTHING
            RETURNING position, stream_version, transaction_id, recorded_at, hash, shard_key
          ),
          checked AS (SELECT count(*) AS inserted FROM ins)
        SELECT ins.position, ins.stream_version, ins.transaction_id::text, ins.recorded_at, ins.hash, ins.shard_key
        FROM ins, checked
        WHERE checked.inserted IN (0, $4::bigint) OR ledger_batch_interrupted($1::text, checked.inserted, $4::bigint)
        ORDER BY ins.stream_version
        """

    /// Appends a validated batch; tells a stored batch (idempotent retry), an id conflict and a
    /// version conflict apart when nothing was inserted.
    func appendPrepared(_ batch: PreparedBatch, to stream: String, expected: ExpectedVersion,
                        on connection: PostgresConnection) throws -> AppendResult
    {
        let events = batch.events
        let inTransaction = connection.isInTransaction
        let sessionsOpened = PostgresConnection.sessionsOpened  // before any statement is sent (StreamHeads)
        let hint = heads.head(of: stream, usableOn: connection)
        // A lone event after the head this process last saw, or a stream's first: the cached-head
        // insert, no head read. Zero rows means the hint was stale, the stream exists, or the
        // event is a retry: the general statement below decides.
        if let (direct, usesHint) = batch.query(stream: stream, expected: expected, after: hint) {
            let rows: PostgresRows
            switch Result(catching: { () throws(PostgresError) -> PostgresRows in try connection.query(direct, prepare: true) }) {
            case .success(let returned): rows = returned
            case .failure(let error): throw Self.diagnosed(error, events)
            }
            if rows.count == 1 {
                if usesHint { heads.noteHit() }
                return try appended(events, rows: rows, to: stream, sessionsOpened: sessionsOpened, on: connection)
            }
        }
        let query = batch.query(stream: stream, expected: expected)
        // With `.any`, losing a race for the next version just means reading the head again.
        for _ in 0..<20 {
            let attempt = Result { () throws(PostgresError) -> PostgresRows in
                try connection.query(query, prepare: true)
            }
            let rows: PostgresRows
            switch attempt {
            case .success(let returned):
                rows = returned
            case .failure(let error) where EventStore.lostRace(error):
                // A concurrent append took some of our versions; nothing of ours is stored.
                if inTransaction || expected != .any {
                    let actual = inTransaction ? -1 : try Self.currentVersion(stream, on: connection)
                    throw EventStoreError.wrongExpectedVersion(stream: stream, expected: expected, actual: actual)
                }
                continue
            case .failure(let error):
                throw Self.diagnosed(error, events)
            }
            if rows.count == events.count {
                return try appended(events, rows: rows, to: stream, sessionsOpened: sessionsOpened, on: connection)
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

    /// Whether a statement failed because a concurrent append took versions it needed: its
    /// statements' LE001, or the database's check of a row (schema/0016) meeting the other
    /// append's event where the statement's own was to be: a hash that does not chain to it
    /// (LE005), or a time before its (LE006; the statements stamp after the head they read, so
    /// only another append's head can be later).
    static func lostRace(_ error: PostgresError) -> Bool {
        switch error.sqlState {
        case EventStoreError.SQLStates.wrongExpectedVersion, EventStoreError.SQLStates.unchained,
             EventStoreError.SQLStates.recordedAtRefused:
            true
        default:
            false
        }
    }

    /// The SQLSTATEs with which jsonb refuses a payload's text.
    private static let jsonRefusals: Set<String> = ["22P02", "22P05", "22023"]

    /// An append statement's failure as thrown: when jsonb refused a payload, the typed error
    /// naming the event; otherwise the database's error.
    static func diagnosed(_ error: PostgresError, _ events: [NewEvent]) -> any Error {
        guard jsonRefusals.contains(error.sqlState ?? ""), let refused = diagnoseRefusedBatch(events) else { return error }
        return refused
    }

    /// The result of a stored batch: announces it (after the commit, inside a transaction),
    /// remembers the stream's new head once committed, and decodes what the statement returned.
    /// `sessionsOpened` is ``PostgresConnection/sessionsOpened`` as read before the statement
    /// was sent (``StreamHeads``).
    func appended(_ events: [NewEvent], rows: PostgresRows, to stream: String, sessionsOpened: UInt64,
                  on connection: PostgresConnection) throws -> AppendResult
    {
        try announceAppend(on: connection)
        let result = try AppendResult(events: zip(events, rows).map { event, row in
            AppendedEvent(
                id: event.id, position: try row.decode(Int64.self, at: 0),
                streamVersion: try row.decode(Int64.self, at: 1),
                transactionID: try row.decode(UInt64.self, at: 2),
                recordedAt: try row.decode(Date.self, at: 3), hash: try row.decode(Data.self, at: 4))
        }, wasDuplicate: false)
        // Every row of one stream's append carries the same shard key, so any row gives the head's.
        if let last = result.events.max(by: { $0.streamVersion < $1.streamVersion }), let row = rows.first {
            heads.rememberCommitted(stream, version: last.streamVersion, recordedAt: last.recordedAt,
                                    shardKey: try row.decode(String?.self, at: 5), sessionsOpened: sessionsOpened,
                                    on: connection)
        }
        return result
    }

    /// Wakes the store's subscribers: now, or once the caller's transaction has committed.
    func announceAppend(on connection: PostgresConnection) throws {
        if !connection.isInTransaction {
            notifier.signal()
        } else if !connection.afterCommit({ [notifier] in notifier.signal() }) {
            // A transaction the wrapper does not manage: notify inside it (this
            // serialises its commit with other notifying ones, but no event goes unannounced).
            try connection.execute("SELECT pg_notify('ledger_events', '')")
        }
    }

    static func currentVersion(_ stream: String, on connection: PostgresConnection) throws -> Int64 {
        try connection.query(
            "SELECT coalesce(max(stream_version), 0) FROM event_key_rows WHERE stream_id = \(stream)", prepare: true
        ).single().decode(Int64.self, at: 0)
    }

    static func anyStored(_ ids: [UUID], on connection: PostgresConnection) throws -> Bool {
        let literal = "{" + ids.map { $0.uuidString.lowercased() }.joined(separator: ",") + "}"
        return try connection.query("SELECT EXISTS (SELECT 1 FROM event_key_rows WHERE event_id = ANY(\(literal)::uuid[]))")
            .single().decode(Bool.self, at: 0)
    }
}
