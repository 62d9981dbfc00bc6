import Foundation
import LedgerFolds
import LedgerPostgres
import LedgerStore

/// How ``DeviceStateProjection`` stores a reducer's states: the columns its tables add for
/// queries, and the personal fields its reads open. The fold itself is the reducer's
/// (``LedgerFolds/DeviceStateReducer``).
public protocol DeviceStateStorage: DeviceStateReducer {
    /// The personal fields ``LedgerFolds/DeviceStateReducer/apply(_:to:)`` reads, by event type
    /// (see ``Projection/personalFieldsRead``).
    var personalFieldsRead: PersonalFieldSelection { get }
    /// Columns of the main table besides the device and its state, for queries.
    var summaryColumns: [ProjectionColumn] { get }
    /// The values of ``summaryColumns`` for a state, in order.
    func summary(of state: State) -> [PostgresValue]
    /// Columns of the detail table (one row per token, per obligation, …); empty for none.
    var detailColumns: [ProjectionColumn] { get }
    /// The detail rows of a state.
    func detailRows(of state: State) -> [ProjectionRow]
}

extension DeviceStateStorage {
    /// Every personal field.
    public var personalFieldsRead: PersonalFieldSelection { .all }
    /// No detail table.
    public var detailColumns: [ProjectionColumn] { [] }
    /// No detail rows.
    public func detailRows(of state: State) -> [ProjectionRow] { [] }
}

/// A column of a projection table.
public struct ProjectionColumn: Sendable, Hashable {
    /// Its name.
    public var name: String
    /// Its SQL type (`timestamptz`, `text`, `integer`, …).
    public var sqlType: String
    /// Whether to index it (for the queries that list by it).
    public var indexed: Bool

    /// A column.
    public init(_ name: String, _ sqlType: String, indexed: Bool = false) {
        self.name = name
        self.sqlType = sqlType
        self.indexed = indexed
    }
}

/// One detail row: its key within the device, and its values in the order of the columns.
public struct ProjectionRow: Sendable, Hashable {
    /// Unique within the device (a token digest, an `ad_event_id`).
    public var key: String
    /// The values of ``DeviceStateStorage/detailColumns``.
    public var values: [PostgresValue]

    /// A row.
    public init(key: String, values: [PostgresValue]) {
        self.key = key
        self.values = values
    }
}

extension LoggedEvent {
    /// What a fold reads of `event`.
    init(_ event: RecordedEvent) {
        self.init(position: event.position, streamID: event.streamID, id: event.id, type: event.type, data: event.data,
                  occurredAt: event.occurredAt, recordedAt: event.recordedAt)
    }
}
