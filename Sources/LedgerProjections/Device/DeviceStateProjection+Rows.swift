import Foundation
import LedgerDomain
import LedgerFolds
import LedgerPostgres
import Logging

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
    /// Encoding the states is most of a rebuild's final write for this process, and parsing them
    /// (jsonb) most of it for the server. So a long list is cut in two: a thread of its own encodes
    /// the back half while this one encodes the front half as `COPY` takes it. Given `pool`
    /// (a rebuild's shadow tables), that thread also writes the back half itself, on a session
    /// of its own (``PostgresPool/openSession()``) in a transaction of its own, so two server
    /// processes parse at once; otherwise (or when that session cannot be opened, which is
    /// logged) the back half follows on this connection in a second `COPY`. A short list (an
    /// incremental step) is encoded here alone.
    func copyMainRows(_ devices: [FoldedDevice], into table: String, on connection: PostgresConnection,
                      sessionsFrom pool: PostgresPool? = nil) throws -> [[PostgresValue]]
    {
        let cut = devices.count >= Self.parallelEncodingThreshold ? devices.count / 2 : devices.count
        let back = devices[cut...]
        let projection = self
        // On a session of its own, the thread writes the back half as it encodes it and returns
        // its detail rows (`written`); otherwise it returns the encoded rows, written here after
        // the front.
        let backRows = back.isEmpty ? nil : ThreadResult { () throws -> (rows: [DeviceRows], written: Bool) in
            if let session = try Self.secondSession(from: pool) {
                let detail = try session.transaction { try projection.copyEncoding(back, into: table, on: $0) }
                return ([DeviceRows(main: [], detail: detail)], true)
            }
            let encoder = LedgerJSON.makeEncoder()
            return (try back.map { try projection.rows(of: $0, encoder: encoder) }, false)
        }
        // However this ends, the thread has ended too.
        defer { _ = try? backRows?.wait() }
        var detail = try copyEncoding(devices[..<cut], into: table, on: connection)
        if let backRows {
            let (rows, written) = try backRows.wait()
            if !written { try connection.copyFrom(table: table, columns: mainColumns, rows: rows.lazy.map(\.main)) }
            detail += rows.flatMap(\.detail)
        }
        return detail
    }

    /// A session for the final write's second writer, or nil (logged) when `pool` is nil or none
    /// could be opened: the server full, say, which is no reason to fail a rebuild. A session that
    /// opens but refuses the pool's settings is an error, as it is for the pool.
    static func secondSession(from pool: PostgresPool?) throws -> PostgresConnection? {
        guard let pool else { return nil }
        do {
            return try pool.openSession()
        } catch let error as PostgresError where error.code == .connectionFailed {
            pool.logger.notice("a rebuild's second writer could not open a session; the final write runs on one",
                               metadata: ErrorLogMetadata.of(error))
            return nil
        }
    }

    /// The main table's columns, in the order of ``DeviceRows/main``.
    var mainColumns: [String] { ["device_stream_id", "state", "last_position", "updated_at"] + reducer.summaryColumns.map(\.name) }

    /// Encodes `devices` as `COPY` takes their main rows (the server storing some while the next
    /// are encoded), and returns their detail rows. An encoding error ends the rows; it is thrown
    /// after the `COPY`, and the caller's transaction rolls back what went in.
    func copyEncoding(_ devices: ArraySlice<FoldedDevice>, into table: String, on connection: PostgresConnection) throws
        -> [[PostgresValue]]
    {
        let encoder = LedgerJSON.makeEncoder()
        var detail: [[PostgresValue]] = []
        var encodingError: (any Error)?
        let mainRows = devices.lazy.compactMap { folded -> [PostgresValue]? in
            guard encodingError == nil else { return nil }
            do {
                let encoded = try rows(of: folded, encoder: encoder)
                detail += encoded.detail
                return encoded.main
            } catch {
                encodingError = error
                return nil
            }
        }
        try connection.copyFrom(table: table, columns: mainColumns, rows: mainRows)
        if let encodingError { throw encodingError }
        return detail
    }

    /// From how many devices a write encodes on two threads (a rebuild's, not an incremental step's).
    static var parallelEncodingThreshold: Int { 1_000 }
}
