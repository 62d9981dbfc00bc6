import Foundation
import LedgerFolds
import LedgerPostgres

/// Where ``GoogleObligationReducer``'s states are stored: open obligations per device, one row per
/// `ad_event_id` (`opened_at` indexed, for the overdue ones).
extension GoogleObligationReducer: DeviceStateStorage {
    public var summaryColumns: [ProjectionColumn] {
        [ProjectionColumn("open_obligations", "integer")]
    }

    public func summary(of state: State) -> [PostgresValue] {
        [.int64(Int64(state.obligations.values.filter { $0.state != .closed }.count))]
    }

    public var detailColumns: [ProjectionColumn] {
        [
            ProjectionColumn("state", "text"),
            ProjectionColumn("opened_at", "timestamptz", indexed: true),
            ProjectionColumn("ad_event_at", "timestamptz"),
            ProjectionColumn("conversion_send_stream_id", "text"),
            ProjectionColumn("cross_network_sends", "integer"),
            ProjectionColumn("closed_at", "timestamptz"),
        ]
    }

    public func detailRows(of state: State) -> [ProjectionRow] {
        state.obligations.values.sorted { $0.adEventID < $1.adEventID }.map { obligation in
            ProjectionRow(key: obligation.adEventID, values: [
                .text(obligation.state.rawValue), .timestamptz(obligation.openedAt), .timestamptz(obligation.adEventAt),
                .text(obligation.conversionSendStreamID), .int64(Int64(obligation.crossNetworkSends.count)),
                obligation.closedAt.map { .timestamptz($0) } ?? .null,
            ])
        }
    }
}

/// The Google obligation projection: ``GoogleObligationReducer``'s states in `google_obligations`,
/// one row per `ad_event_id` in `google_obligations_rows`.
public typealias GoogleObligationProjection = DeviceStateProjection<GoogleObligationReducer>

extension DeviceStateProjection where Reducer == GoogleObligationReducer {
    /// An obligation not closed in time.
    public struct OverdueObligation: Sendable, Hashable {
        /// The device.
        public var deviceStreamID: String
        /// Google's `ad_event_id`.
        public var adEventID: String
        /// `open` or `requested`.
        public var state: String
        /// When Google's answer opened it.
        public var openedAt: Date
    }

    /// Obligations still open or requested that were opened before `now - age`.
    public func overdueObligations(olderThan age: TimeInterval, now: Date, on connection: PostgresConnection) throws
        -> [OverdueObligation]
    {
        try connection.query("""
            SELECT device_stream_id, row_key, state, opened_at FROM \(identifier: rowsTable)
            WHERE state <> 'closed' AND opened_at < \(now.addingTimeInterval(-age))
            ORDER BY opened_at, device_stream_id, row_key
            """).map { row in
            OverdueObligation(deviceStreamID: try row.decode(String.self, at: 0), adEventID: try row.decode(String.self, at: 1),
                              state: try row.decode(String.self, at: 2), openedAt: try row.decode(Date.self, at: 3))
        }
    }

    /// The devices with an open obligation, in device order: with `reportRequested` false, those
    /// no cross-network report was requested for (owed now); with it true, those whose reports
    /// were requested and the obligation is still open (failed for good, or not yet answered).
    public func devicesWithOpenObligations(reportRequested: Bool, on connection: PostgresConnection) throws -> [String] {
        try connection.query("""
            SELECT DISTINCT device_stream_id FROM \(identifier: rowsTable)
            WHERE state = 'open' AND \(unescaped: reportRequested ? "cross_network_sends > 0" : "cross_network_sends = 0")
            ORDER BY device_stream_id
            """).map { try $0.decode(String.self, at: 0) }
    }
}
