import Foundation
import LedgerPostgres

/// Reads long runs of the log fast, for projection rebuilds (the store's gap-safe scan): binary `COPY (SELECT …) TO STDOUT` in chunks, in
/// the same gap-safe order and with the same horizon rule as ``EventStore/readAll(after:limit:filter:asOf:on:)``.
///
/// Binary, because a rebuild reads every event once and text would make both sides work for each
/// field: the server printing numbers, uuids and times (the times through `extract(epoch …)`,
/// which is `numeric` arithmetic) and escaping the payload, this side parsing and unescaping
/// them. Measured on 200,000 events, the server's part of the scan fell from ≈ 600 to ≈ 390 ms.
///
/// The events it yields carry what projections read (position, transaction id, stream, version,
/// id, type, schema version, data, both times); `metadata` and `hash` are left empty, since no
/// projection computes from them (the hash chain is `ledger verify`'s business).
public enum LogScan {
    /// Reads the next chunk of at most `limit` events of `types` after `checkpoint`.
    ///
    /// - Parameter wholeSnapshot: read every event the transaction's snapshot sees, not only
    ///   those below the gap-safe horizon: for a reader that holds one snapshot (`REPEATABLE
    ///   READ`) over its whole scan, behind which nothing can commit, such as the send queue's
    ///   rebuild.
    public static func chunk(after checkpoint: GlobalCheckpoint, types: [String], limit: Int, wholeSnapshot: Bool = false,
                             on connection: PostgresConnection) throws -> [RecordedEvent] {
        let sql = try scanSQL(after: checkpoint, types: types, limit: limit, wholeSnapshot: wholeSnapshot)
        var events: [RecordedEvent] = []
        events.reserveCapacity(limit)
        _ = try connection.copyOutBinary(sql) { row in
            events.append(try event(from: &row))
        }
        return events
    }

    /// The scan's `COPY (SELECT …) TO STDOUT (FORMAT binary)` statement: the next `limit` events of
    /// `types` after `checkpoint`, gap-safely (or all the snapshot sees), in (transaction id,
    /// position) order; the rows ``event(from:)`` reads.
    static func scanSQL(after checkpoint: GlobalCheckpoint, types: [String], limit: Int, wholeSnapshot: Bool = false) throws
        -> String
    {
        // COPY takes no bound parameters: every value below is a number, and type names are
        // checked against the store's type-name rule before being quoted as literals.
        let typeList = try types.map { type -> String in
            guard type.utf8.allSatisfy({ $0 < 128 && ($0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".")
                || (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0)) }), !type.isEmpty
            else { throw EventStoreError.logScan(reason: "event type \(type) breaks the type-name rule") }
            return "'" + type + "'"
        }.joined(separator: ",")
        return """
            COPY (SELECT position, transaction_id, stream_id, stream_version, event_id, event_type, schema_version, data,
                occurred_at, recorded_at
            FROM events
            WHERE (transaction_id, position) > ('\(checkpoint.transactionID)'::xid8, \(checkpoint.position))
              \(wholeSnapshot ? "" : "AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())")
              AND event_type IN (\(typeList))
            ORDER BY events.transaction_id, events.position LIMIT \(limit)) TO STDOUT (FORMAT binary)
            """
    }

    /// One row of the scan (position, transaction id, stream, version, id, type, schema version,
    /// data, and both times) as an event.
    static func event(from row: inout PostgresBinaryCopyRow) throws -> RecordedEvent {
        guard row.fieldCount == 10 else { throw EventStoreError.logScan(reason: "a COPY row has \(row.fieldCount) fields, not 10") }
        let position = try row.int64()
        // xid8's bytes are an unsigned 64-bit number.
        let transactionID = UInt64(bitPattern: try row.int64())
        let streamID = try row.string()
        let streamVersion = try row.int64()
        let id = try row.uuid()
        let type = try row.string()
        let schemaVersion = Int(try row.int32())
        let data = Data(try row.jsonbText())
        return RecordedEvent(
            position: position, transactionID: transactionID, streamID: streamID, streamVersion: streamVersion,
            id: id, type: type, schemaVersion: schemaVersion, data: data, metadata: Data(),
            occurredAt: try row.timestamp(), recordedAt: try row.timestamp(), hash: Data())
    }
}
