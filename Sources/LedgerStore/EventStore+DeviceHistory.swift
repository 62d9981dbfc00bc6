import Foundation
import LedgerPostgres

extension EventStore {
    /// Everything the ledger holds about one device, in the log's order: its own stream
    /// (`device-<app>/<device>`), its decisions (`decision-<app>/<device>`), and the streams of
    /// every send requested for it (found through `SendRequested.device_stream_id`).
    ///
    /// This is the auditor's replay and the projections' "as of": with `asOf`, only what the
    /// ledger held at that position or time. Events come in (transaction id, position) order, the
    /// order every projection applies them in.
    ///
    /// - Parameters:
    ///   - deviceStream: the device's stream id (`device-…`).
    ///   - types: only these event types (all when empty).
    ///   - asOf: what the ledger held then.
    public func readDeviceHistory(_ deviceStream: String, types: [String] = [], asOf: AsOf? = nil) async throws
        -> [RecordedEvent]
    {
        try await pool.withConnection { [privacy] connection in
            try Self.readDeviceHistory(deviceStream, types: types, asOf: asOf, privacy: privacy, on: connection)
        }
    }

    /// ``readDeviceHistory(_:types:asOf:)`` on a connection the caller holds; personal fields are
    /// opened with `privacy` (by default ``PersonalDataProtection/processDefault``).
    public static func readDeviceHistory(_ deviceStream: String, types: [String] = [], asOf: AsOf? = nil,
                                         privacy: PersonalDataProtection = .processDefault,
                                         on connection: PostgresConnection) throws -> [RecordedEvent] {
        let decisionStream = deviceStream.hasPrefix("device-")
            ? "decision-" + deviceStream.dropFirst("device-".count) : deviceStream
        var query = PostgresQuery(sql: """
            SELECT \(columns) FROM events WHERE (stream_id = 
            """)
        query.append(bind: deviceStream)
        query.append(sql: " OR stream_id = ")
        query.append(bind: decisionStream)
        query.append(sql: """
             OR stream_id IN (SELECT stream_id FROM events WHERE event_type = 'SendRequested' AND data ->> 'device_stream_id' = 
            """)
        query.append(bind: deviceStream)
        query.append(sql: "))")
        if !types.isEmpty {
            query.append(sql: " AND event_type = ANY(")
            query.append(bind: PostgresQuery.textArrayLiteral(types))
            query.append(sql: "::text[])")
        }
        appendAsOf(asOf, to: &query)
        query.append(sql: " ORDER BY events.transaction_id, events.position")
        var events = try connection.query(query).map(record)
        try privacy.reveal(&events, on: connection)
        return events
    }
}
