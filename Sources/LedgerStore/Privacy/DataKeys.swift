import Crypto
import Foundation
import LedgerPostgres

/// One data subject's data key, unwrapped.
struct DataKey: Sendable {
    let id: UUID
    /// `id` as the sealed envelope writes it (lowercase), made once per key.
    let idText: String
    var subject: String
    /// The key's bytes (`SymmetricKey` is not `Sendable`).
    var bytes: Data
    var key: SymmetricKey { SymmetricKey(data: bytes) }

    init(id: UUID, subject: String, key: SymmetricKey) {
        self.id = id
        self.idText = id.lowercasedText
        self.subject = subject
        self.bytes = key.withUnsafeBytes { Data($0) }
    }
}

/// Keys looked up (or made) for one append, by subject; nil for an erased subject.
struct AcquiredKeys: Sendable {
    let keys: [String: DataKey?]
    let protection: PersonalDataProtection?
    let generation: Int
    let now: Date

    static let none = AcquiredKeys(keys: [:], protection: nil, generation: 0, now: Date.distantPast)

    /// Caches the keys: the append they sealed has committed durably (unless an erasure in this
    /// process forgot keys meanwhile).
    func appendCommitted() {
        guard let protection else { return }
        for case let key? in keys.values {
            protection.cache(key, for: key.subject, now: now, unlessForgottenSince: generation)
        }
    }
}

/// The `privacy_keys` table: data keys wrapped (AES-256-GCM) by a master key. The wrapping
/// authenticates the key id and the subject, so a wrapped key copied to another row does not open.
enum DataKeys {
    /// What the wrapping authenticates besides the key.
    static func wrappingContext(id: UUID, subject: String) -> Data {
        Data("ledger-data-key:v1:\(id.uuidString.lowercased()):\(subject)".utf8)
    }

    static func wrap(_ key: SymmetricKey, id: UUID, subject: String, with master: SymmetricKey) throws -> Data {
        let sealed = try key.withUnsafeBytes { bytes in
            try AES.GCM.seal(Data(bytes), using: master, authenticating: wrappingContext(id: id, subject: subject))
        }
        guard let combined = sealed.combined else { throw PrivacyError.integrity(what: "a new data key") }
        return combined
    }

    static func unwrap(_ wrapped: Data, id: UUID, subject: String, with master: SymmetricKey) throws(PrivacyError)
        -> SymmetricKey
    {
        do {
            let box = try AES.GCM.SealedBox(combined: wrapped)
            return SymmetricKey(data: try AES.GCM.open(box, using: master,
                                                       authenticating: wrappingContext(id: id, subject: subject)))
        } catch {
            throw .integrity(what: "the data key \(id.uuidString.lowercased())")
        }
    }

    /// The subject's key for appending: a live key wrapped by the current master key, or a new one
    /// (one statement either way). Nil when the subject was erased (no key can be made for it).
    ///
    /// - Parameter beforeAppend: outside a transaction, the caller appends events sealed with the
    ///   key right after, on the same connection. A new key then commits without waiting for its
    ///   flush (`synchronous_commit` off for that statement alone): the append's durable commit
    ///   flushes the log past the key's commit record, so the key is durable whenever an event
    ///   sealed with it is. No key is cached here on that path (not even one found: another
    ///   session may have made it the same way a moment ago); the caller caches it once its own
    ///   append has committed. Two round trips and no transaction, instead of `BEGIN`, the key,
    ///   the append and `COMMIT`.
    static func acquire(subject: String, protection: PersonalDataProtection, on connection: PostgresConnection,
                        beforeAppend: Bool = false) throws -> DataKey?
    {
        let now = Date()
        if let cached = protection.cachedKey(for: subject, now: now) { return cached }
        let masters = try protection.masterKeys()
        let candidate = SymmetricKey(size: .bits256)
        let candidateID = UUID()
        let wrapped = try wrap(candidate, id: candidateID, subject: subject, with: masters.current)
        let deferred = beforeAppend && !connection.isInTransaction
        // The subquery runs once, before the insert's row is formed: `set_config(…, true)` then
        // holds for the rest of this statement's own transaction, its commit included.
        let flushWithTheAppend = deferred ? "FROM (SELECT set_config('synchronous_commit', 'off', true)) AS flush_later" : ""
        let rows = try connection.query("""
            WITH existing AS (
                SELECT key_id, wrapped_key FROM privacy_keys
                WHERE subject = \(subject) AND wrapped_key IS NOT NULL AND master_key_id = \(masters.currentID)
                ORDER BY created_at DESC LIMIT 1
            ), created AS (
                INSERT INTO privacy_keys (key_id, subject, wrapped_key, master_key_id)
                SELECT \(candidateID), \(subject), \(wrapped), \(masters.currentID) \(unescaped: flushWithTheAppend)
                WHERE NOT EXISTS (SELECT 1 FROM existing)
                RETURNING key_id, wrapped_key
            )
            SELECT key_id, wrapped_key FROM existing UNION ALL SELECT key_id, wrapped_key FROM created
            """, prepare: true)
        guard let row = rows.first else { return nil }
        let id = try row.decode(UUID.self, at: 0)
        let key = id == candidateID
            ? candidate
            : try unwrap(try row.decode(Data.self, at: 1), id: id, subject: subject, with: masters.current)
        let dataKey = DataKey(id: id, subject: subject, key: key)
        // Only a committed and durable key may be remembered: inside a transaction it could
        // still roll back; on the deferred path neither a new key nor one another session just
        // made (also without waiting for its flush) is known durable before the append commits.
        if deferred {
            // The caller caches it (``PersonalDataProtection/BatchSealer/appendCommitted()``).
        } else if !connection.isInTransaction {
            protection.cache(dataKey, for: subject, now: now)
        } else {
            connection.afterCommit { protection.cache(dataKey, for: subject, now: now) }
        }
        return dataKey
    }

    /// ``acquire(subject:protection:on:beforeAppend:)`` for several subjects in one statement:
    /// each subject's live key wrapped by the current master key, or a new one; nil for a subject
    /// that was erased. Inside a transaction the keys are cached once it commits. Outside one, the
    /// caller appends right after on this connection: new keys commit without waiting for their
    /// flush (the append's durable commit covers them), and the caller caches the keys once its
    /// append has committed (``AcquiredKeys/appendCommitted()``).
    static func acquire(subjects: [String], protection: PersonalDataProtection, on connection: PostgresConnection) throws
        -> AcquiredKeys
    {
        let now = Date()
        let generation = protection.forgetGeneration
        let deferred = !connection.isInTransaction
        let masters = try protection.masterKeys()
        var candidates: [String: (id: UUID, key: SymmetricKey)] = [:]
        var json: [UInt8] = [UInt8(ascii: "[")]
        for subject in subjects {
            let key = SymmetricKey(size: .bits256)
            let id = UUID.randomVersion4()
            candidates[subject] = (id, key)
            if json.count > 1 { json.append(UInt8(ascii: ",")) }
            json.append(contentsOf: #"{"subject":"#.utf8)
            json.append(contentsOf: jsonString(subject).utf8)
            json.append(contentsOf: #","candidate":""#.utf8)
            json.append(contentsOf: id.lowercasedText.utf8)
            json.append(contentsOf: #"","wrapped":""#.utf8)
            json.append(contentsOf: try wrap(key, id: id, subject: subject, with: masters.current).base64EncodedData())
            json.append(contentsOf: #""}"#.utf8)
        }
        json.append(UInt8(ascii: "]"))
        let rows = try connection.query(PostgresQuery(sql: """
            WITH wanted AS (
                SELECT w.subject COLLATE "C" AS subject, w.candidate, decode(w.wrapped, 'base64') AS wrapped
                FROM jsonb_to_recordset($1::jsonb) AS w(subject text, candidate uuid, wrapped text)
            ), existing AS (
                -- Each subject's newest live key, one index probe per subject (as the one-subject form).
                SELECT w.subject, k.key_id, k.wrapped_key FROM wanted AS w
                CROSS JOIN LATERAL (
                    SELECT key_id, wrapped_key FROM privacy_keys
                    WHERE subject = w.subject AND wrapped_key IS NOT NULL AND master_key_id = $2::text
                    ORDER BY created_at DESC LIMIT 1) AS k
            ), created AS (
                INSERT INTO privacy_keys (key_id, subject, wrapped_key, master_key_id)
                SELECT w.candidate, w.subject, w.wrapped, $2::text FROM wanted AS w \(deferred ? flushLater : "")
                WHERE NOT EXISTS (SELECT 1 FROM existing AS e WHERE e.subject = w.subject)
                RETURNING subject, key_id, wrapped_key
            )
            SELECT subject, key_id, wrapped_key FROM existing UNION ALL SELECT subject, key_id, wrapped_key FROM created
            """, binds: [.jsonb(String(decoding: json, as: UTF8.self)), .text(masters.currentID)]), prepare: true)
        var keys: [String: DataKey?] = [:]
        for subject in subjects { keys[subject] = .some(nil) }  // erased unless a row says otherwise
        for row in rows {
            let subject = try row.decode(String.self, at: 0)
            let id = try row.decode(UUID.self, at: 1)
            let key: SymmetricKey
            if let candidate = candidates[subject], candidate.id == id {
                key = candidate.key
            } else {
                key = try unwrap(try row.decode(Data.self, at: 2), id: id, subject: subject, with: masters.current)
            }
            keys[subject] = DataKey(id: id, subject: subject, key: key)
        }
        let acquired = AcquiredKeys(keys: keys, protection: protection, generation: generation, now: now)
        if !deferred { connection.afterCommit { acquired.appendCommitted() } }
        return acquired
    }

    /// In a statement that may insert a key outside a transaction: its commit need not wait for
    /// its flush (`set_config(…, true)` holds for that statement's own transaction).
    private static let flushLater = "CROSS JOIN (SELECT set_config('synchronous_commit', 'off', true)) AS flush_later"

    /// `text` as a JSON string.
    private static func jsonString(_ text: String) -> String {
        let plain = text.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
        if plain { return "\"" + text + "\"" }
        return String(decoding: (try? JSONEncoder().encode(text)) ?? Data("\"\"".utf8), as: UTF8.self)
    }

    /// The keys with these ids, unwrapped; a destroyed or missing key is absent from the result.
    /// The live keys found are also remembered for appending (the write cache), so a worker that
    /// reads a device's event and then records a send for it looks its key up once.
    static func fetch(_ ids: Set<UUID>, protection: PersonalDataProtection, on connection: PostgresConnection) throws
        -> [UUID: SymmetricKey]
    {
        guard !ids.isEmpty else { return [:] }
        let now = Date()
        let generation = protection.forgetGeneration
        let rows: PostgresRows
        if ids.count == 1, let id = ids.first {
            // One key (a read of one device's events): a plan PostgreSQL keeps, unlike `= ANY(array)`.
            rows = try connection.query("""
                SELECT key_id, subject, wrapped_key, master_key_id FROM privacy_keys
                WHERE key_id = \(id) AND wrapped_key IS NOT NULL
                """, prepare: true)
        } else {
            let literal = "{" + ids.map { $0.uuidString.lowercased() }.joined(separator: ",") + "}"
            rows = try connection.query("""
                SELECT key_id, subject, wrapped_key, master_key_id FROM privacy_keys
                WHERE key_id = ANY(\(literal)::uuid[]) AND wrapped_key IS NOT NULL
                """, prepare: true)
        }
        guard !rows.isEmpty else { return [:] }
        let masters = try protection.masterKeys()
        var keys: [UUID: SymmetricKey] = [:]
        for row in rows {
            let id = try row.decode(UUID.self, at: 0)
            let subject = try row.decode(String.self, at: 1)
            let masterID = try row.decode(String.self, at: 3)
            guard let master = masters.key(id: masterID) else { throw PrivacyError.masterKeyUnavailable(masterKeyID: masterID) }
            let key = try unwrap(try row.decode(Data.self, at: 2), id: id, subject: subject, with: master)
            keys[id] = key
            // A live key read just now, of a subject whose events are in the log, is one that
            // subject's next events may be sealed with: remember it for appending, as if looked up
            // there (its events' commits made it durable). Only keys wrapped by the current master
            // key, which is what an append would look up.
            // Inside a transaction the key may be its own, not yet committed: remembered only
            // once it commits.
            if masterID == masters.currentID, protection.cachedKey(for: subject, now: now) == nil {
                let found = DataKey(id: id, subject: subject, key: key)
                if connection.isInTransaction {
                    connection.afterCommit { protection.cache(found, for: subject, now: now, unlessForgottenSince: generation) }
                } else {
                    protection.cache(found, for: subject, now: now, unlessForgottenSince: generation)
                }
            }
        }
        return keys
    }

    /// Re-wraps every live data key not wrapped by the current master key with it, in one
    /// transaction. Returns how many keys were re-wrapped.
    static func rewrap(protection: PersonalDataProtection, on connection: PostgresConnection) throws -> Int {
        let masters = try protection.masterKeys()
        return try connection.transaction { connection in
            let rows = try connection.query("""
                SELECT key_id, subject, wrapped_key, master_key_id FROM privacy_keys
                WHERE wrapped_key IS NOT NULL AND master_key_id <> \(masters.currentID)
                FOR UPDATE
                """)
            for row in rows {
                let id = try row.decode(UUID.self, at: 0)
                let subject = try row.decode(String.self, at: 1)
                let masterID = try row.decode(String.self, at: 3)
                guard let old = masters.key(id: masterID) else { throw PrivacyError.masterKeyUnavailable(masterKeyID: masterID) }
                let key = try unwrap(try row.decode(Data.self, at: 2), id: id, subject: subject, with: old)
                let wrapped = try wrap(key, id: id, subject: subject, with: masters.current)
                try connection.execute("""
                    UPDATE privacy_keys SET wrapped_key = \(wrapped), master_key_id = \(masters.currentID)
                    WHERE key_id = \(id)
                    """)
            }
            return rows.count
        }
    }
}
