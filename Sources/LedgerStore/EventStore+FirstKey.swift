import Crypto
import Foundation
import LedgerPostgres

extension EventStore {
    /// A device's first event with personal data, sealed with a key made here and stored with
    /// it in one statement (``appendWithKeySQL``): the key is inserted only if the device has no
    /// live key and was not erased, and the event only if the key was. Nil when that did not
    /// happen (a key existed, the device was erased, or the append itself was refused): the
    /// caller then takes the usual path — look the key up (or learn the erasure), seal, append —
    /// which also answers the refusals. When the statement returns the existing key, that
    /// path uses it without looking it up again.
    ///
    /// Before, the first event of every new device took two statements: the key (its commit
    /// not waiting for a flush), then the append.
    func appendWithNewKey(_ event: NewEvent, to stream: String, expected: ExpectedVersion,
                          on connection: PostgresConnection) throws -> AppendResult?
    {
        guard privacy.isEnabled, privacy.cachedKey(for: stream, now: Date()) == nil,
              let masters = try? privacy.masterKeys()
        else { return nil }
        let generation = privacy.forgetGeneration
        let candidate = DataKey(id: UUID.randomVersion4(), subject: stream, key: SymmetricKey(size: .bits256))
        let sealer = privacy.sealer(stream: stream, events: [event], on: connection, acquired: [stream: candidate])
        let batch = try Self.preparePayload([event], stream: stream, validator: validator, sealer: sealer)
        // Nothing personal held a value after all: no key is needed.
        guard let sealer, sealer.usedKey?.id == candidate.id, let text = batch.texts.first else { return nil }
        let wrapped = try DataKeys.wrap(candidate.key, id: candidate.id, subject: stream, with: masters.current)
        let version = expected.sqlValue.map(PostgresValue.int64) ?? .null
        var query = PostgresQuery(sql: Self.appendWithKeySQL, binds: [
            .text(stream), version, .uuid(event.id), .text(event.type), .int32(Int32(event.schemaVersion)),
            .jsonb(text.data), .jsonb(text.metadata), .timestamptz(event.occurredAt),
            .uuid(candidate.id), .text(masters.currentID), .bytea(wrapped),
        ])
        // A stream this store knows nothing of, most likely new: the hash and recorded_at of its
        // first event are worked out here (EventStore+AppendHashed), used if it has no event.
        var first: HashedInsert?
        if heads.head(of: stream) == nil,
            let hashed = batch.hashedInsert(stream: stream, expected: .noStream, hint: nil, on: connection)
        {
            query = PostgresQuery(sql: Self.appendFirstWithKeySQL,
                                  binds: query.binds + [.timestamptz(hashed.event.recordedAt), .bytea(hashed.event.hash)])
            first = hashed
        }
        let rows: PostgresRows
        let sessionsOpened = PostgresConnection.sessionsOpened
        switch Result(catching: { () throws(PostgresError) -> PostgresRows in try connection.query(query, prepare: true) }) {
        case .success(let returned): rows = returned
        case .failure(let error): throw Self.diagnosed(error, [event])
        }
        guard let row = rows.first else { return nil }
        if try row.decode(Int64?.self, at: 0) == nil {
            // The device has a key already: the usual path seals with it, without a lookup.
            let id = try row.decode(UUID.self, at: 5)
            let key = DataKey(id: id, subject: stream, key: try DataKeys.unwrap(try row.decode(Data.self, at: 6), id: id,
                                                                               subject: stream, with: masters.current))
            let resealer = privacy.sealer(stream: stream, events: [event], on: connection, acquired: [stream: key])
            let payload = try Self.preparePayload([event], stream: stream, validator: validator, sealer: resealer)
            let result = try appendPrepared(payload, to: stream, expected: expected, on: connection)
            if !result.wasDuplicate { privacy.cache(key, for: stream, now: Date(), unlessForgottenSince: generation) }
            return result
        }
        let result = try appended([event], rows: rows, to: stream, sessionsOpened: sessionsOpened, on: connection)
        if let first, result.events.first?.hash == first.event.hash { hashedAppends.increment() }
        privacy.cache(candidate, for: stream, now: Date(), unlessForgottenSince: generation)
        return result
    }

    /// A device's first sealed event and its new key, in one statement. `$1`–`$8` as in
    /// ``appendOneSQL``, `$9` the new key's id, `$10` the current master key's id, `$11` the
    /// new key wrapped by it. `existing` is the device's newest live key; `created` inserts the
    /// new one only when there is none (and `privacy_keys_guard` drops it if the device was
    /// erased); the event is inserted only when the key was. Rows: the event's (as
    /// ``appendOneSQL`` returns them), or the existing key's (`key_id`, `wrapped_key` in the last
    /// two columns), or none.
    static let appendWithKeySQL = withKeySQL(first: nil)

    /// ``appendWithKeySQL``'s statement, with ``insertOneSQL(alsoRequiring:first:)``'s `first`.
    static func withKeySQL(first: (recordedAt: String, hash: String)?) -> String {
        """
        WITH existing AS MATERIALIZED (
            SELECT key_id, wrapped_key FROM privacy_keys
            WHERE subject = $1::text AND wrapped_key IS NOT NULL AND master_key_id = $10::text
            ORDER BY created_at DESC LIMIT 1
        ), created AS (
            INSERT INTO privacy_keys (key_id, subject, wrapped_key, master_key_id)
            SELECT $9::uuid, $1::text, $11::bytea, $10::text WHERE NOT EXISTS (SELECT 1 FROM existing)
            RETURNING key_id
        ), ins AS (
        \(insertOneSQL(alsoRequiring: "EXISTS (SELECT 1 FROM created)", first: first))
        )
        SELECT position, stream_version, transaction_text, recorded_at, hash, NULL::uuid, NULL::bytea FROM ins
        UNION ALL
        SELECT NULL, NULL, NULL, NULL, NULL, key_id, wrapped_key FROM existing
        """
    }

    /// ``appendWithKeySQL`` with `$12` (`recorded_at`) and `$13` (hash) worked out by the store
    /// for the stream's first event, taken if the stream turns out to have none
    /// (``insertOneSQL(alsoRequiring:first:)``).
    static let appendFirstWithKeySQL = withKeySQL(first: (recordedAt: "$12::timestamptz", hash: "$13::bytea"))
}
