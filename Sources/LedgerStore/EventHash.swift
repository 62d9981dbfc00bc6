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
/// where the data and metadata texts are `jsonb`'s printing (``JSONBText``), the event id is
/// lowercase, and each time is its whole microseconds since 1970. `ledger verify` recomputes
/// every hash from what is stored (over the text the database prints), so a hash computed here
/// is checked like any other.
enum EventHash {
    /// The hash of one event chained after `previous` (nil for a stream's first event).
    static func compute(previous: Data?, stream: String, version: Int64, eventID: UUID, type: String,
                        schemaVersion: Int, data: [UInt8], metadata: [UInt8], occurredAtMicroseconds: Int64,
                        recordedAtMicroseconds: Int64) -> Data {
        var hasher = SHA256()
        if let previous { hasher.update(data: previous) }
        let newline = [UInt8(ascii: "\n")]
        func field(_ text: String) {
            var text = text
            text.withUTF8 { hasher.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        }
        field(stream)
        hasher.update(data: newline)
        field(String(version))
        hasher.update(data: newline)
        field(eventID.lowercasedText)
        hasher.update(data: newline)
        field(type)
        hasher.update(data: newline)
        field(String(schemaVersion))
        hasher.update(data: newline)
        hasher.update(data: data)
        hasher.update(data: newline)
        hasher.update(data: metadata)
        hasher.update(data: newline)
        field(String(occurredAtMicroseconds))
        hasher.update(data: newline)
        field(String(recordedAtMicroseconds))
        return Data(hasher.finalize())
    }
}
