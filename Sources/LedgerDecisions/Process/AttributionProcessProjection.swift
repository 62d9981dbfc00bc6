import Foundation
import LedgerDomain
import LedgerFolds
import LedgerPostgres
import LedgerProjections

/// Where ``AttributionProcessReducer``'s states are stored: waiting triggers per device, one row per
/// trigger (`state` and `waiting_since` indexed, for the decider).
extension AttributionProcessReducer: DeviceStateStorage {
    public var summaryColumns: [ProjectionColumn] {
        [ProjectionColumn("waiting_triggers", "integer")]
    }

    public func summary(of state: State) -> [PostgresValue] {
        [.int64(Int64(state.triggers.filter { $0.state == "waiting" }.count))]
    }

    public var detailColumns: [ProjectionColumn] {
        [
            ProjectionColumn("state", "text", indexed: true),
            ProjectionColumn("trigger_kind", "text"),
            ProjectionColumn("waiting_since", "timestamptz", indexed: true),
            ProjectionColumn("awaited_sends", "integer"),
            ProjectionColumn("finished_sends", "integer"),
            ProjectionColumn("candidates", "integer"),
            ProjectionColumn("late_answers", "integer"),
            ProjectionColumn("decided_at", "timestamptz"),
        ]
    }

    public func detailRows(of state: State) -> [ProjectionRow] {
        state.triggers.map { trigger in
            ProjectionRow(key: trigger.eventID.uuidString.lowercased(), values: [
                .text(trigger.state), .text(trigger.kind.rawValue), .timestamptz(trigger.recordedAt),
                .int64(Int64(trigger.sends.count)), .int64(Int64(trigger.sends.filter { $0.terminal != nil }.count)),
                .int64(Int64(trigger.candidates.count)), .int64(Int64(trigger.lateAnswers.count)),
                trigger.decidedAt.map { .timestamptz($0) } ?? .null,
            ])
        }
    }
}

/// The attribution process projection: ``AttributionProcessReducer``'s states in
/// `attribution_process`, one row per trigger in `attribution_process_rows`.
public typealias AttributionProcessProjection = DeviceStateProjection<AttributionProcessReducer>

extension DeviceStateProjection where Reducer == AttributionProcessReducer {
    /// The devices with a waiting trigger that is ready (every awaited send finished) or has
    /// waited since `cutoff` or earlier, in device order: the ones the decider decides.
    public func devicesWithDueTriggers(waitingSince cutoff: Date, on connection: PostgresConnection) throws -> [String] {
        try connection.query("""
            SELECT DISTINCT device_stream_id FROM \(identifier: rowsTable)
            WHERE state = 'waiting' AND (finished_sends = awaited_sends OR waiting_since <= \(cutoff))
            ORDER BY device_stream_id
            """).map { try $0.decode(String.self, at: 0) }
    }

    /// The devices with a trigger decided at or after `since`, in device order: the ones a redo
    /// of the decisions since then examines.
    public func devicesDecided(since: Date, on connection: PostgresConnection) throws -> [String] {
        try connection.query("""
            SELECT DISTINCT device_stream_id FROM \(identifier: rowsTable)
            WHERE state = 'decided' AND decided_at >= \(since)
            ORDER BY device_stream_id
            """).map { try $0.decode(String.self, at: 0) }
    }
}
