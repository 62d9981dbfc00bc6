import Foundation
import LedgerPostgres
import LedgerStore

/// Reads long runs of the log fast, for rebuilds: `COPY (SELECT …) TO STDOUT` in chunks, in the
/// same gap-safe order and with the same horizon rule as ``EventStore/readAll(after:limit:filter:asOf:on:)``.
///
/// The events it yields carry what projections read (position, transaction id, stream, version,
/// id, type, schema version, data, both times); `metadata` and `hash` are left empty, since no
/// projection computes from them (the hash chain is `ledger verify`'s business).
public enum LogScan {
    /// Reads the next chunk of at most `limit` events of `types` after `checkpoint`.
    static func chunk(after checkpoint: GlobalCheckpoint, types: [String], limit: Int,
                      on connection: PostgresConnection) throws -> [RecordedEvent] {
        let sql = try scanSQL(after: checkpoint, types: types, limit: limit)
        var events: [RecordedEvent] = []
        events.reserveCapacity(limit)
        try connection.copyOut(sql) { line in
            events.append(try parse(line))
        }
        return events
    }

    /// The scan's `COPY (SELECT …) TO STDOUT` statement: the next `limit` events of `types` after
    /// `checkpoint`, gap-safely, in (transaction id, position) order; the lines ``parse(_:)`` reads.
    /// Public for the benchmark that times the scan's parts.
    public static func scanSQL(after checkpoint: GlobalCheckpoint, types: [String], limit: Int) throws -> String {
        // COPY takes no bound parameters: every value below is a number, and type names are
        // checked against the store's type-name rule before being quoted as literals.
        let typeList = try types.map { type -> String in
            guard type.utf8.allSatisfy({ $0 < 128 && ($0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".")
                || (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0)) }), !type.isEmpty
            else { throw ProjectionError.unknownProjection("event type \(type)") }
            return "'" + type + "'"
        }.joined(separator: ",")
        return """
            COPY (SELECT position, transaction_id, stream_id, stream_version, event_id, event_type, schema_version, data,
                (extract(epoch FROM occurred_at) * 1000000)::bigint, (extract(epoch FROM recorded_at) * 1000000)::bigint
            FROM events
            WHERE (transaction_id, position) > ('\(checkpoint.transactionID)'::xid8, \(checkpoint.position))
              AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
              AND event_type IN (\(typeList))
            ORDER BY events.transaction_id, events.position LIMIT \(limit)) TO STDOUT
            """
    }

    /// One line of the scan's `COPY` text (position, transaction id, stream, version, id, type,
    /// schema version, data, and both times in Unix microseconds; tab-separated, `\`-escaped) as
    /// an event. Public for the benchmark that times the scan's parts.
    public static func parse(_ line: UnsafeRawBufferPointer) throws -> RecordedEvent {
        var fields: [Range<Int>] = []
        fields.reserveCapacity(10)
        var start = 0
        for index in 0..<line.count where line[index] == UInt8(ascii: "\t") {
            fields.append(start..<index)
            start = index + 1
        }
        var end = line.count
        if end > start, line[end - 1] == UInt8(ascii: "\n") { end -= 1 }
        fields.append(start..<end)
        guard fields.count == 10 else { throw LogScanError(reason: "a COPY line has \(fields.count) fields, not 10") }
        func int(_ field: Int) throws -> Int64 {
            var value: Int64 = 0
            var negative = false
            for index in fields[field] {
                let byte = line[index]
                if byte == UInt8(ascii: "-") { negative = true; continue }
                guard (48...57).contains(byte) else { throw LogScanError(reason: "field \(field) is not a number") }
                value = value &* 10 &+ Int64(byte &- 48)
            }
            return negative ? -value : value
        }
        func text(_ field: Int) -> String { String(decoding: unescape(line, fields[field]), as: UTF8.self) }
        // A uuid's text needs no unescaping.
        guard let id = UUID(canonicalText: UnsafeRawBufferPointer(rebasing: line[fields[4]])) else {
            throw LogScanError(reason: "event_id is not a UUID")
        }
        return RecordedEvent(
            position: try int(0), transactionID: UInt64(try int(1)), streamID: text(2), streamVersion: try int(3),
            id: id, type: text(5), schemaVersion: Int(try int(6)), data: Data(unescape(line, fields[7])),
            metadata: Data(), occurredAt: Date(timeIntervalSince1970: Double(try int(8)) / 1_000_000),
            recordedAt: Date(timeIntervalSince1970: Double(try int(9)) / 1_000_000), hash: Data())
    }

    /// COPY's text escapes undone: `\\`, `\t`, `\n`, `\r`, `\b`, `\f`, `\v`.
    static func unescape(_ line: UnsafeRawBufferPointer, _ range: Range<Int>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(range.count)
        var index = range.lowerBound
        while index < range.upperBound {
            let byte = line[index]
            if byte == UInt8(ascii: "\\"), index + 1 < range.upperBound {
                index += 1
                switch line[index] {
                case UInt8(ascii: "t"): out.append(9)
                case UInt8(ascii: "n"): out.append(10)
                case UInt8(ascii: "r"): out.append(13)
                case UInt8(ascii: "b"): out.append(8)
                case UInt8(ascii: "f"): out.append(12)
                case UInt8(ascii: "v"): out.append(11)
                default: out.append(line[index])
                }
            } else {
                out.append(byte)
            }
            index += 1
        }
        return out
    }
}

/// A COPY line that could not be read (a bug, or a server that speaks another format).
struct LogScanError: Error, CustomStringConvertible {
    var reason: String
    var description: String { "log scan: \(reason)" }
}
