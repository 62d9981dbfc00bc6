import Foundation
import LedgerDomain
import LedgerPostgres

extension DeviceStateProjection {
    /// A device's stored rows: its main row and its detail rows.
    struct DeviceRows: Sendable {
        var main: [PostgresValue]
        var detail: [[PostgresValue]]
    }

    /// One folded device: its stream id, state and last applied event.
    typealias FoldedDevice = (device: String, state: Reducer.State, last: (position: Int64, recordedAt: Date))

    /// The rows that store `folded`.
    func rows(of folded: FoldedDevice, encoder: JSONEncoder) throws -> DeviceRows {
        let json = try reducer.jsonText(of: folded.state, encoder: encoder)
        let detail = hasDetail
            ? reducer.detailRows(of: folded.state).map { [.text(folded.device), .text($0.key)] + $0.values } : []
        return DeviceRows(
            main: [.text(folded.device), .jsonb(json), .int64(folded.last.position), .timestamptz(folded.last.recordedAt)]
                + reducer.summary(of: folded.state),
            detail: detail)
    }

    /// Writes the main rows of `devices` (in order) with `COPY`, and returns their detail rows.
    ///
    /// Encoding the states is most of a rebuild's final write, and the server stores the rows
    /// meanwhile on the other core. So a long list is cut in two: a thread of its own encodes the
    /// back half while this one encodes the front half as `COPY` takes it (the server storing one
    /// chunk while the next is encoded); the back half follows in a second `COPY`. A short list
    /// (an incremental step) is encoded here alone.
    func copyMainRows(_ devices: [FoldedDevice], into table: String, on connection: PostgresConnection) throws
        -> [[PostgresValue]]
    {
        let columns = ["device_stream_id", "state", "last_position", "updated_at"] + reducer.summaryColumns.map(\.name)
        let cut = devices.count >= Self.parallelEncodingThreshold ? devices.count / 2 : devices.count
        let back = Array(devices[cut...])
        let projection = self
        let backRows = back.isEmpty ? nil : ThreadResult { () throws -> [DeviceRows] in
            let encoder = LedgerJSON.makeEncoder()
            return try back.map { try projection.rows(of: $0, encoder: encoder) }
        }
        // However this ends, the thread has ended too.
        defer { _ = try? backRows?.wait() }
        let encoder = LedgerJSON.makeEncoder()
        var detail: [[PostgresValue]] = []
        var encodingError: (any Error)?
        // An encoding error ends the rows; it is thrown after the COPY, and the caller's
        // transaction rolls back what went in.
        let front = devices[..<cut].lazy.compactMap { folded -> [PostgresValue]? in
            guard encodingError == nil else { return nil }
            do {
                let rows = try projection.rows(of: folded, encoder: encoder)
                detail += rows.detail
                return rows.main
            } catch {
                encodingError = error
                return nil
            }
        }
        try connection.copyFrom(table: table, columns: columns, rows: front)
        if let encodingError { throw encodingError }
        if let backRows {
            let rows = try backRows.wait()
            try connection.copyFrom(table: table, columns: columns, rows: rows.lazy.map(\.main))
            detail += rows.flatMap(\.detail)
        }
        return detail
    }

    /// From how many devices a write encodes on two threads (a rebuild's, not an incremental step's).
    static var parallelEncodingThreshold: Int { 1_000 }
}
