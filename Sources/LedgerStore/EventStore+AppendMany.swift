import Foundation
import LedgerPostgres

/// One stream's part of an append to several streams (``EventStore/append(_:on:)``).
public struct StreamAppend: Sendable {
    /// The stream.
    public var stream: String
    /// Its events, in order.
    public var events: [NewEvent]
    /// What the stream's version must be.
    public var expected: ExpectedVersion

    /// A stream's part.
    public init(_ events: [NewEvent], to stream: String, expected: ExpectedVersion = .any) {
        self.stream = stream
        self.events = events
        self.expected = expected
    }
}

extension EventStore {
    /// Appends to several streams in one statement and one transaction: the send worker records
    /// the tries of a whole claim, or a group of outcomes, this way — one round trip and one
    /// commit where one append per stream would take as many of each.
    ///
    /// Each stream's part follows the rules of ``append(_:to:expected:on:)``: its expected version,
    /// idempotency by event id (a part already stored answers `wasDuplicate`), its hash chain.
    /// The statement stores every part or none; when a rule stops it (a version moved, an id is
    /// already stored), each part is appended on its own instead, in order, and decides as a lone
    /// append would. Runs inside the caller's transaction if one is open, else in one of its own.
    ///
    /// - Returns: one result per part, in order.
    /// - Throws: ``EventStoreError`` for the first part that is refused (nothing of the call is
    ///   then stored, once the caller's transaction rolls back);
    ///   ``EventStoreError/wrongExpectedVersion(stream:expected:actual:)`` with stream `(several)`
    ///   and actual -1 when a concurrent append took versions the statement needed (the
    ///   transaction is then spoilt: retry it whole); ``PostgresError`` otherwise.
    @discardableResult
    public func append(_ appends: [StreamAppend], on connection: PostgresConnection) throws -> [AppendResult] {
        guard connection.isInTransaction else {
            return try connection.transaction { connection in try append(appends, on: connection) }
        }
        switch appends.count {
        case 0: return []
        case 1: return [try appendSealing(appends[0].events, to: appends[0].stream, expected: appends[0].expected, on: connection)]
        default: break
        }
        guard let stored = try appendAllOrNothing(appends, on: connection) else {
            return try appendEachPart(appends, on: connection)
        }
        return stored
    }

    /// Appends every part in one statement, or nothing: nil when a rule stopped the statement (a
    /// part's expected version, an id already stored) or a part names a stream or an id that
    /// another part names too. Nothing is then stored and the caller's transaction is intact, so
    /// it can decide each part its own way (``append(_:on:)`` appends them one by one; the
    /// facade, which answers each fact of a batch as a duplicate or not, records fact by fact).
    /// Runs inside the caller's transaction if one is open, else in one of its own.
    ///
    /// - Returns: one result per part, in order, none of them a duplicate; nil as above.
    /// - Throws: ``EventStoreError/wrongExpectedVersion(stream:expected:actual:)`` with stream
    ///   `(several)` and actual -1 when a concurrent append took versions the statement needed
    ///   (the transaction is then spoilt: retry it whole); ``EventStoreError`` for an invalid
    ///   part; ``PostgresError`` otherwise.
    public func appendAllOrNothing(_ appends: [StreamAppend], on connection: PostgresConnection) throws -> [AppendResult]? {
        guard connection.isInTransaction else {
            return try connection.transaction { connection in try appendAllOrNothing(appends, on: connection) }
        }
        guard !appends.isEmpty else { return [] }
        var streams = Set<String>()
        var ids = Set<UUID>()
        let distinct = appends.allSatisfy { part in
            streams.insert(part.stream).inserted && part.events.allSatisfy { ids.insert($0.id).inserted }
        }
        guard distinct else { return nil }
        let events = appends.reduce(0) { $0 + $1.events.count }
        return try traced(events: events, streams: appends.count) { () throws -> [AppendResult]? in
            let statement = try prepareMany(appends, condition: nil, on: connection)
            let sessionsOpened = PostgresConnection.sessionsOpened
            let rows = try executeMany(statement.query, appends, on: connection)
            // Nothing stored: a part's version or an id stopped the statement.
            guard try Self.storedRows(rows) == statement.total else { return nil }
            let placed = try manyAppended(appends, rows: rows, sessionsOpened: sessionsOpened, on: connection)
            return try appends.map { part in
                guard let result = placed[part.stream] else {
                    throw PostgresError(code: .unexpectedResponse, message: "the append returned no rows for stream \(part.stream)")
                }
                return result
            }
        }
    }

    /// Appends the parts whose streams `condition` allows, in one statement that also runs the
    /// condition (which may change other tables: the send worker settles its queue rows in it),
    /// so the condition's changes and the events commit together or not at all. Each part must
    /// name a stream of its own and new event ids: the statement fails (nothing of it stored)
    /// rather than store some of an allowed part, when a part's expected version does not hold,
    /// an id is already stored, or a concurrent append took a version. Outside a transaction it
    /// commits on its own, one round trip in all.
    ///
    /// - Returns: the results of the parts the condition allowed, by stream.
    /// - Throws: ``EventStoreError`` for a malformed part; for a statement stopped by a rule
    ///   ``EventStoreError/wrongExpectedVersion(stream:expected:actual:)`` with stream `(several)`
    ///   and actual -1, whichever rule it was (an allowed part's expected version, an id already
    ///   stored, a concurrent append): the statement stored nothing, the condition's changes
    ///   included; ``PostgresError`` otherwise.
    public func append(_ appends: [StreamAppend], where condition: AppendCondition, on connection: PostgresConnection) throws
        -> [String: AppendResult]
    {
        guard !appends.isEmpty else { return [:] }
        _ = try condition.call()
        var streams = Set<String>()
        var ids = Set<UUID>()
        for part in appends {
            guard streams.insert(part.stream).inserted else {
                throw EventStoreError.invalidStreamID(part.stream, rule: "once_per_conditional_append")
            }
            for (index, event) in part.events.enumerated() where !ids.insert(event.id).inserted {
                throw EventStoreError.invalidEvent(index: index, eventType: event.type, field: "id", rule: "unique_in_batch",
                                                   message: "the id appears twice in the append")
            }
        }
        return try traced(events: appends.reduce(0) { $0 + $1.events.count }, streams: appends.count) {
            let statement = try prepareMany(appends, condition: condition, on: connection)
            let sessionsOpened = PostgresConnection.sessionsOpened
            let rows = try executeMany(statement.query, appends, on: connection)
            let results = try manyAppended(appends, rows: rows, sessionsOpened: sessionsOpened, on: connection)
            // Keys made for this call are durable once events were stored with a durable commit (it
            // flushes the log past them); a statement that stored nothing flushed nothing.
            if !connection.isInTransaction, !results.isEmpty { statement.keys.appendCommitted() }
            return results
        }
    }

    /// Runs a multi-stream statement. A concurrent append that took versions the call needed is a
    /// typed conflict (the statement failed, and with it the transaction it ran in); a payload
    /// jsonb refused is the typed error naming it.
    private func executeMany(_ query: PostgresQuery, _ appends: [StreamAppend], on connection: PostgresConnection) throws
        -> PostgresRows
    {
        switch Result(catching: { () throws(PostgresError) -> PostgresRows in try connection.query(query, prepare: true) }) {
        case .success(let rows):
            return rows
        case .failure(let error) where Self.lostRace(error):
            throw EventStoreError.wrongExpectedVersion(stream: "(several)", expected: .any, actual: -1)
        case .failure(let error):
            throw Self.diagnosed(error, appends.flatMap(\.events))
        }
    }

    /// The statement for `appends` (sealed, validated), the number of events, and the keys it sealed with.
    private func prepareMany(_ appends: [StreamAppend], condition: AppendCondition?, on connection: PostgresConnection) throws
        -> (query: PostgresQuery, total: Int, keys: AcquiredKeys)
    {
        let keys = try privacy.acquireKeys(for: appends.map { ($0.stream, $0.events) }, on: connection)
        var prepared: [PreparedBatch] = []
        prepared.reserveCapacity(appends.count)
        for part in appends {
            let sealer = privacy.sealingNeed(stream: part.stream, events: part.events) == .none
                ? nil : privacy.sealer(stream: part.stream, events: part.events, on: connection, acquired: keys.keys)
            prepared.append(try Self.preparePayload(part.events, stream: part.stream, validator: validator, sealer: sealer))
        }
        let total = prepared.reduce(0) { $0 + $1.events.count }
        let json = PostgresValue.jsonb(Self.manyJSON(prepared, appends))
        guard let condition else {
            return (PostgresQuery(sql: try Self.appendManySQL(condition: nil), binds: [json, .int64(Int64(total))]), total, keys)
        }
        return (PostgresQuery(sql: try Self.appendManySQL(condition: condition), binds: [json] + condition.arguments), total, keys)
    }

    /// The results of a multi-stream statement's rows, by stream: announces the append (after
    /// the commit, inside a transaction) and remembers each stream's new head once committed
    /// (`sessionsOpened` as in ``appended(_:rows:to:sessionsOpened:on:)``).
    private func manyAppended(_ appends: [StreamAppend], rows: PostgresRows, sessionsOpened: UInt64,
                              on connection: PostgresConnection) throws
        -> [String: AppendResult]
    {
        var placed: [UUID: AppendedEvent] = [:]
        var shardKeys: [UUID: String?] = [:]  // each event's shard_key, for the stream hints
        placed.reserveCapacity(rows.count)
        for row in rows {
            // The statement's one row when it stored nothing has no event.
            guard let id = try row.decode(UUID?.self, at: 0) else { continue }
            placed[id] = AppendedEvent(
                id: id, position: try row.decode(Int64.self, at: 1), streamVersion: try row.decode(Int64.self, at: 2),
                transactionID: try row.decode(UInt64.self, at: 3),
                recordedAt: try row.decode(Date.self, at: 4), hash: try row.decode(Data.self, at: 5))
            shardKeys[id] = try row.decode(String?.self, at: 6)
        }
        guard !placed.isEmpty else { return [:] }
        try announceAppend(on: connection)
        var results: [String: AppendResult] = [:]
        for part in appends {
            let events = part.events.compactMap { placed[$0.id] }
            guard !events.isEmpty else { continue }  // a part the condition left out
            guard events.count == part.events.count else {
                throw PostgresError(code: .unexpectedResponse, message: "the append stored part of stream \(part.stream)")
            }
            if let last = events.last {
                heads.rememberCommitted(part.stream, version: last.streamVersion, recordedAt: last.recordedAt,
                                        shardKey: shardKeys[last.id] ?? nil, sessionsOpened: sessionsOpened,
                                        on: connection)
            }
            results[part.stream] = AppendResult(events: events, wasDuplicate: false)
        }
        return results
    }

    /// How many of a multi-stream statement's rows are stored events (when it stored none, it
    /// returns one row without an event).
    private static func storedRows(_ rows: PostgresRows) throws -> Int {
        try rows.reduce(0) { count, row in try row.decode(UUID?.self, at: 0) == nil ? count : count + 1 }
    }

    /// Each part appended on its own, in order, on the caller's transaction.
    private func appendEachPart(_ appends: [StreamAppend], on connection: PostgresConnection) throws -> [AppendResult] {
        try appends.map { try appendSealing($0.events, to: $0.stream, expected: $0.expected, on: connection) }
    }

    /// The parts as the JSON array ``appendManySQL`` takes: each event's object also names its
    /// stream, its place in its stream's part (`k`, from 1) and the part's expected version.
    static func manyJSON(_ prepared: [PreparedBatch], _ appends: [StreamAppend]) -> String {
        var json: [UInt8] = []
        json.reserveCapacity(prepared.reduce(2) { $0 + $1.estimatedJSONBytes + 300 })
        json.append(UInt8(ascii: "["))
        for (batch, part) in zip(prepared, appends) {
            let expected = Array((part.expected.sqlValue.map { String($0) } ?? "null").utf8)
            for index in batch.events.indices {
                if json.count > 1 { json.append(UInt8(ascii: ",")) }
                json.append(contentsOf: streamKey)
                json.append(contentsOf: part.stream.utf8)
                json.append(contentsOf: placeKey)
                json.append(contentsOf: String(index + 1).utf8)
                json.append(contentsOf: expectedKey)
                json.append(contentsOf: expected)
                json.append(UInt8(ascii: ","))
                batch.writeMembers(of: index, into: &json)
                json.append(UInt8(ascii: "}"))
            }
        }
        json.append(UInt8(ascii: "]"))
        return String(decoding: json, as: UTF8.self)
    }

    // Stream ids need no escaping: they are checked against their character rule first.
    private static let streamKey = Array(#"{"stream_id":""#.utf8)
    private static let placeKey = Array(#"","k":"#.utf8)
    private static let expectedKey = Array(#","expected":"#.utf8)

    /// The append to several streams, as one statement. `$1` the events as a JSON array (each
    /// naming its stream, its place `k` in its stream's part, and the part's expected version);
    /// without a condition `$2` their number, with one the gate's arguments from `$2`.
    ///
    /// As ``appendSQL``, per stream: `head` is each stream's last event, `chain` numbers and
    /// stamps the versions, partitioned by stream; the database's check chains the hashes; each
    /// stream's rows get its `shard_key` (its head's, or the one its part's first event gives).
    /// Without a condition, the INSERT stores nothing when any part's expected version does not
    /// hold or any id is already stored (the caller then appends part by part, which tells the
    /// cases apart); a unique-key race with a concurrent append skips rows, and
    /// `ledger_batch_interrupted` then fails the whole statement. With a condition, only the
    /// streams its gate returns are appended, and anything short of all their events fails the
    /// statement, the gate's own changes with it. The count is checked on `checked`'s one
    /// row, outer-joined to the inserted rows, so it is checked even when nothing was inserted;
    /// that row then comes back without an event.
    static func appendManySQL(condition: AppendCondition?) throws -> String {
        var allowed = ""
        if let condition { allowed = "allowed AS MATERIALIZED (SELECT stream_id FROM " + (try condition.call()) + ")," }
        let onlyAllowed = condition == nil ? "" : "WHERE e->>'stream_id' IN (SELECT stream_id FROM allowed)"
        let wanted = condition == nil ? "$2::bigint" : "(SELECT count(*) FROM input)"
        let accepted = condition == nil ? "checked.inserted IN (0, \(wanted))" : "checked.inserted = \(wanted)"
        return """
            WITH
              \(allowed)
              clock AS MATERIALIZED (SELECT clock_timestamp() AS t),
              input AS MATERIALIZED (
                SELECT n, e->>'stream_id' AS stream, (e->>'k')::bigint AS k, (e->>'expected')::bigint AS expected,
                       (e->>'event_id')::uuid AS id, e->>'event_type' AS type, (e->>'schema_version')::integer AS sv,
                       e->'data' AS data, e->'metadata' AS md, (e->>'occurred_at')::timestamptz AS at
                FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS t(e, n)
                \(onlyAllowed)),
              head AS MATERIALIZED (
                SELECT s.stream, s.expected, h.v, h.h, h.r, h.k
                FROM (SELECT DISTINCT stream, expected FROM input) AS s
                LEFT JOIN LATERAL (SELECT stream_version AS v, hash AS h, recorded_at AS r, shard_key AS k FROM event_key_rows
                                   WHERE stream_id = s.stream ORDER BY stream_version DESC LIMIT 1) AS h ON true),
              chain AS (
                SELECT i.n, i.stream, i.id, i.type, i.sv, i.data, i.md, i.at, coalesce(h.v, 0) + i.k AS v,
                       greatest(c.t, h.r) AS recorded_at, h.k AS head_shard_key,
                       NULL::bytea AS hash  -- chained by the database's check (schema/0016)
                FROM input AS i CROSS JOIN clock AS c JOIN head AS h ON h.stream = i.stream),
              ins AS (
                INSERT INTO events (stream_id, stream_version, event_id, event_type, schema_version, data, metadata,
                                    occurred_at, recorded_at, hash, shard_key)
                SELECT stream, v, id, type, sv, data, md, at, recorded_at, hash,
                       ledger_shard_key(stream, (SELECT f.data FROM input AS f WHERE f.stream = chain.stream AND f.k = 1),
                                        head_shard_key)
                FROM chain
                WHERE NOT EXISTS (SELECT 1 FROM head WHERE expected IS NOT NULL AND coalesce(v, 0) <> expected)
                  AND NOT EXISTS (SELECT 1 FROM input AS x JOIN event_key_rows AS ev ON ev.event_id = x.id)
                  AND \(refuseSecondTerminal(stream: "stream", type: "type"))
                ORDER BY n
                ON CONFLICT DO NOTHING
                RETURNING event_id, position, stream_version, transaction_id, recorded_at, hash, shard_key
              ),
              checked AS (SELECT count(*) AS inserted FROM ins)
            SELECT ins.event_id, ins.position, ins.stream_version, ins.transaction_id::text, ins.recorded_at, ins.hash,
                   ins.shard_key
            FROM checked LEFT JOIN ins ON true
            WHERE \(accepted) OR ledger_batch_interrupted('(several)', checked.inserted, \(wanted))
            """
    }
}

/// What lets each part of a conditional multi-stream append go ahead
/// (``EventStore/append(_:where:on:)``): a gate, a database function that returns the streams
/// allowed to append (`SETOF text`), called in the append's own statement with bound arguments.
/// The gate may change its own tables (the send worker settles its queue rows in it): its changes
/// and the events commit together or not at all. The module that owns the gate's tables writes
/// its SQL (schema/); the store only names it.
public struct AppendCondition: Sendable {
    /// The gate function's name: a plain identifier (lower-case letters, digits, `_`), checked
    /// before it is written into the statement.
    public var function: String
    /// Its arguments, in order, bound as parameters (the store numbers them).
    public var arguments: [PostgresValue]

    /// A condition calling `function(arguments…)`.
    public init(function: String, arguments: [PostgresValue]) {
        self.function = function
        self.arguments = arguments
    }

    /// The gate as a `FROM` item of one column, `stream_id`; its arguments from `$2` on (`$1`
    /// is the append's). Throws for a name that is not a plain identifier.
    func call() throws(EventStoreError) -> String {
        guard let first = function.utf8.first, !(48...57).contains(first), function.utf8.count <= 63,
            function.utf8.allSatisfy({ $0 == UInt8(ascii: "_") || (48...57).contains($0) || (97...122).contains($0) })
        else { throw .invalidConditionFunction(function) }
        let parameters = arguments.indices.map { "$\($0 + 2)" }.joined(separator: ", ")
        return "\(function)(\(parameters)) AS gate(stream_id)"
    }
}
