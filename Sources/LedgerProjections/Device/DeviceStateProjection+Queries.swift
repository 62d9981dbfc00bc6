import Foundation
import LedgerDomain
import LedgerFolds
import LedgerPostgres
import LedgerStore

extension DeviceStateProjection {
    /// The device's state as the live table holds it (nil when no event has touched it yet).
    public func storedState(of deviceStream: String, on connection: PostgresConnection) throws -> Reducer.State? {
        let rows = try connection.query(
            "SELECT state::text FROM \(identifier: name) WHERE device_stream_id = \(deviceStream)")
        guard let row = rows.first else { return nil }
        return try LedgerJSON.makeDecoder().decode(Reducer.State.self, from: Data(try row.decode(String.self, at: 0).utf8))
    }

    /// The device's state as the live table holds it.
    public func storedState(of deviceStream: String, pool: PostgresPool) async throws -> Reducer.State? {
        try await pool.withConnection { try storedState(of: deviceStream, on: $0) }
    }

    /// The device's state computed by replaying its history from the log, as the ledger held it
    /// at `asOf` (now when nil): the auditor's "what did we believe then". Independent of the
    /// live tables, so it also checks them.
    public func state(of deviceStream: String, asOf: AsOf? = nil, store: EventStore) async throws -> Reducer.State {
        let events = try await store.readHistory(of: .deviceHistory(deviceStream), types: eventTypes, asOf: asOf)
        return try replay(events, device: deviceStream)
    }

    /// Folds `events` (one device's history, in log order) from the initial state.
    public func replay(_ events: [RecordedEvent], device deviceStream: String) throws -> Reducer.State {
        try reducer.replay(events.map(LoggedEvent.init), device: deviceStream)
    }
}
