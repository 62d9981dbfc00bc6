import Crypto
import Foundation
import LedgerPostgres

/// One line of a stored-form export (`ledger export`): an event exactly as the log stores it, or a
/// seal. An auditor re-checks every hash, chain and seal from these lines alone
/// (``StoredExportVerifier``), with no database: `data` and `metadata` are the texts the hashes
/// cover (ciphertext where personal data is sealed), times are whole microseconds.
public enum StoredExportLine: Sendable, Hashable {
    /// An event, as stored.
    case event(Event)
    /// A seal, as stored.
    case seal(SealLine)

    /// An event line: `{"kind":"event", …}`.
    public struct Event: Codable, Sendable, Hashable {
        /// Always `event`.
        public var kind = "event"
        /// Its global position.
        public var position: Int64
        /// Its writing transaction's id.
        public var transactionID: String
        /// Its stream.
        public var streamID: String
        /// Its version in the stream.
        public var streamVersion: Int64
        /// Its id (lowercase).
        public var eventID: String
        /// Its type.
        public var eventType: String
        /// Its schema version.
        public var schemaVersion: Int
        /// The stored `data`, as PostgreSQL prints the jsonb (the text the hash covers).
        public var data: String
        /// The stored `metadata`, likewise.
        public var metadata: String
        /// `occurred_at` in whole microseconds since 1970.
        public var occurredAtMicroseconds: Int64
        /// `recorded_at` in whole microseconds since 1970.
        public var recordedAtMicroseconds: Int64
        /// Its hash, lowercase hex.
        public var hash: String

        enum CodingKeys: String, CodingKey {
            case kind, position
            case transactionID = "transaction_id"
            case streamID = "stream_id"
            case streamVersion = "stream_version"
            case eventID = "event_id"
            case eventType = "event_type"
            case schemaVersion = "schema_version"
            case data, metadata
            case occurredAtMicroseconds = "occurred_at_us"
            case recordedAtMicroseconds = "recorded_at_us"
            case hash
        }
    }

    /// A seal line: `{"kind":"seal", …}`, the seal's fields as in a ``SealCheckpoint``.
    public struct SealLine: Codable, Sendable, Hashable {
        /// Always `seal`.
        public var kind = "seal"
        /// The seal, in the checkpoint's form.
        public var seal: SealCheckpoint
    }
}

extension EventStore {
    /// Writes the whole readable log in its stored form, events in global order then every seal,
    /// one JSON line each, from one repeatable-read snapshot (so the events and the seals agree).
    /// - Parameters:
    ///   - progress: called after each chunk with (events written, events in the snapshot); when
    ///     given, the snapshot's events are counted first (one more scan of `events`).
    ///   - write: called with each line (no newline) in order.
    /// - Returns: how many events and seals were written.
    public func exportStored(progress: (@Sendable (Int, Int) -> Void)? = nil,
                             write: @escaping @Sendable (String) throws -> Void) async throws -> (events: Int, seals: Int) {
        try await pool.withConnection { connection in
            try connection.transaction(isolation: .repeatableRead) { connection in
                let total = try progress.map { _ in
                    try connection.query("SELECT count(*) FROM events WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())")
                        .single().decode(Int.self, at: 0)
                } ?? 0
                progress?(0, total)
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                encoder.dateEncodingStrategy = .iso8601
                var cursor = GlobalCheckpoint.start
                var events = 0
                while true {
                    let rows = try connection.query("""
                        SELECT position, transaction_id::text, stream_id, stream_version, event_id, event_type, schema_version,
                               data::text, metadata::text, (extract(epoch FROM occurred_at) * 1000000)::bigint,
                               (extract(epoch FROM recorded_at) * 1000000)::bigint, encode(hash, 'hex')
                        FROM events
                        WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())
                          AND (transaction_id, position) > (\(String(cursor.transactionID))::xid8, \(cursor.position))
                        ORDER BY events.transaction_id, events.position LIMIT 5000
                        """)
                    if rows.isEmpty { break }
                    for row in rows {
                        let line = StoredExportLine.Event(
                            position: try row.decode(Int64.self, at: 0), transactionID: try row.decode(String.self, at: 1),
                            streamID: try row.decode(String.self, at: 2), streamVersion: try row.decode(Int64.self, at: 3),
                            eventID: try row.decode(UUID.self, at: 4).uuidString.lowercased(), eventType: try row.decode(String.self, at: 5),
                            schemaVersion: try row.decode(Int.self, at: 6), data: try row.decode(String.self, at: 7),
                            metadata: try row.decode(String.self, at: 8), occurredAtMicroseconds: try row.decode(Int64.self, at: 9),
                            recordedAtMicroseconds: try row.decode(Int64.self, at: 10), hash: try row.decode(String.self, at: 11))
                        try write(String(decoding: try encoder.encode(line), as: UTF8.self))
                        events += 1
                        cursor = GlobalCheckpoint(transactionID: UInt64(line.transactionID) ?? 0, position: line.position)
                    }
                    progress?(events, total)
                }
                let seals = try Self.storedSeals(on: connection)
                for seal in seals {
                    try write(String(decoding: try encoder.encode(StoredExportLine.SealLine(seal: SealCheckpoint(seal: seal))), as: UTF8.self))
                }
                return (events, seals.count)
            }
        }
    }
}
