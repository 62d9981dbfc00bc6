import Foundation
import LedgerPostgres

/// The erasure records and data keys of data subjects (`privacy_erasures`, `privacy_keys`,
/// schema/0004), as typed calls: the store alone names these tables. Each runs on a connection the
/// caller holds, so that an erasure (its keys destroyed, its event appended, its record written)
/// commits as one transaction.
extension EventStore {
    /// A subject's recorded erasure.
    public struct Erasure: Sendable, Hashable {
        /// The `ErasureCompleted` event that records it in the log.
        public var eventID: UUID
        /// When the erasure was committed.
        public var erasedAt: Date
    }

    /// Takes `subject`'s erasure lock for the rest of the transaction (the lock a new key of the
    /// subject waits for, schema/0004, so none is made while it is being erased), then returns its
    /// erasure when it was erased before.
    public static func lockForErasure(of subject: String, on connection: PostgresConnection) throws -> Erasure? {
        try connection.execute("SELECT pg_advisory_xact_lock(hashtextextended('ledger.privacy.' || \(subject), 0))")
        return try connection.query("SELECT event_id, erased_at FROM privacy_erasures WHERE subject = \(subject)").first
            .map { Erasure(eventID: try $0.decode(UUID.self, at: 0), erasedAt: try $0.decode(Date.self, at: 1)) }
    }

    /// Destroys every data key of `subject` not yet destroyed: the personal fields they sealed
    /// can never be opened again. Returns how many were destroyed.
    public static func destroyKeys(of subject: String, on connection: PostgresConnection) throws -> Int {
        try connection.execute("""
            UPDATE privacy_keys SET wrapped_key = NULL, destroyed_at = clock_timestamp()
            WHERE subject = \(subject) AND wrapped_key IS NOT NULL
            """)
    }

    /// Records `subject`'s erasure (permanent: no key is made for it afterwards), with its
    /// `ErasureCompleted` event. Returns the erasure as recorded.
    public static func recordErasure(of subject: String, requestedBy: String, requestedAt: Date, eventID: UUID,
                                     on connection: PostgresConnection) throws -> Erasure {
        Erasure(eventID: eventID, erasedAt: try connection.query("""
            INSERT INTO privacy_erasures (subject, requested_by, requested_at, event_id)
            VALUES (\(subject), \(requestedBy), \(requestedAt), \(eventID)) RETURNING erased_at
            """).single().decode(Date.self, at: 0))
    }

    /// The subjects among `subjects` that have been erased.
    public static func erasedSubjects(among subjects: [String], on connection: PostgresConnection) throws -> Set<String> {
        guard !subjects.isEmpty else { return [] }
        return Set(try connection.query("""
            SELECT subject FROM privacy_erasures WHERE subject = ANY(\(PostgresQuery.textArrayLiteral(subjects))::text[])
            """).map { try $0.decode(String.self, at: 0) })
    }
}
