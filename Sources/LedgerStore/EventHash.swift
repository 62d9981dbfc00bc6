import Crypto
import Foundation
import LedgerPostgres

/// An event's chain hash, computed by the store exactly as `ledger_event_hash` (schema/0001)
/// computes it in the database:
///
///     sha256(previous hash (or nothing) || UTF-8 of stream, version, event id, type,
///            schema version, data text, metadata text, occurred_at µs, recorded_at µs
///            joined by "\n")
///
/// where the data and metadata texts are `jsonb`'s printing, the event id is lowercase, and each
/// time is its whole microseconds since 1970: how an export's events are checked without the
/// database (``StoredExportVerifier``).
enum EventHash {
    /// The hash of one event chained after `previous` (nil for a stream's first event).
    static func compute(previous: Data?, stream: String, version: Int64, eventID: UUID, type: String,
                        schemaVersion: Int, data: [UInt8], metadata: [UInt8], occurredAtMicroseconds: Int64,
                        recordedAtMicroseconds: Int64) -> Data {
        // The canonical bytes in one buffer, hashed in one update: a dozen small updates cost
        // more than the copy.
        var bytes: [UInt8] = []
        bytes.reserveCapacity((previous?.count ?? 0) + stream.utf8.count + type.utf8.count + data.count + metadata.count + 128)
        if let previous { bytes.append(contentsOf: previous) }
        func line(_ text: some Sequence<UInt8>, last: Bool = false) {
            bytes.append(contentsOf: text)
            if !last { bytes.append(UInt8(ascii: "\n")) }
        }
        line(stream.utf8)
        line(String(version).utf8)
        line(eventID.lowercasedText.utf8)
        line(type.utf8)
        line(String(schemaVersion).utf8)
        line(data)
        line(metadata)
        line(String(occurredAtMicroseconds).utf8)
        line(String(recordedAtMicroseconds).utf8, last: true)
        var hasher = SHA256()
        bytes.withUnsafeBytes { hasher.update(bufferPointer: $0) }
        return Data(hasher.finalize())
    }
}
