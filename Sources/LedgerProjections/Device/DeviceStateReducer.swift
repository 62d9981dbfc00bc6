import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerStore

/// The pure core of a per-device projection: a state per device, evolved one event at a time.
///
/// A reducer never reads the clock, the database or the network: its state depends only on the
/// events it was given, in order. That is what makes a projection rebuildable, lets the same code
/// answer "as of" questions by replaying one device's history, and lets tests check it without
/// PostgreSQL. ``DeviceStateProjection`` stores the states and keeps them up to date.
///
/// A reducer should not throw for odd input the providers or devices may send (a body that does
/// not parse, a value out of range): it records such things in its state. A throw means a bug in
/// the reducer; the runner stops at that event until the fix is deployed and the projection
/// rebuilt.
public protocol DeviceStateReducer: Sendable {
    /// The state of one device.
    associatedtype State: Codable, Sendable, Equatable

    /// The projection's name (see ``Projection/name``).
    var name: String { get }
    /// The projection's version (see ``Projection/version``).
    var version: Int { get }
    /// Types read from device (`device-…`) and decision (`decision-…`) streams.
    var deviceEventTypes: [String] { get }
    /// The providers whose sends this projection follows: their `SendRequested` links a send to
    /// its device, and the events of that send's stream are then applied to the device.
    var followedProviders: Set<SendProvider> { get }

    /// The state of a device no event has touched.
    func initialState() -> State
    /// The JSON text a state is stored as; it must decode (with the ledger's decoder) to an equal
    /// state. By default `encoder`'s; a reducer may write it faster itself.
    func jsonText(of state: State, encoder: JSONEncoder) throws -> String
    /// The personal fields ``apply(_:to:)`` reads, by event type (see ``Projection/personalFieldsRead``).
    var personalFieldsRead: PersonalFieldSelection { get }
    /// Applies one event.
    func apply(_ event: DeviceEvent, to state: inout State) throws

    /// Columns of the main table besides the device and its state, for queries.
    var summaryColumns: [ProjectionColumn] { get }
    /// The values of ``summaryColumns`` for a state, in order.
    func summary(of state: State) -> [PostgresValue]
    /// Columns of the detail table (one row per token, per obligation, …); empty for none.
    var detailColumns: [ProjectionColumn] { get }
    /// The detail rows of a state.
    func detailRows(of state: State) -> [ProjectionRow]
}

extension DeviceStateReducer {
    public func jsonText(of state: State, encoder: JSONEncoder) throws -> String {
        String(decoding: try encoder.encode(state), as: UTF8.self)
    }
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
    /// The values of ``DeviceStateReducer/detailColumns``.
    public var values: [PostgresValue]

    /// A row.
    public init(key: String, values: [PostgresValue]) {
        self.key = key
        self.values = values
    }
}

/// One event as a per-device projection sees it.
public struct DeviceEvent: Sendable {
    /// The event as stored.
    public let record: RecordedEvent
    /// The device it is about.
    public let deviceStreamID: String
    /// For the events of a send's stream, the send's request; otherwise `nil`.
    public let send: SendRequested?
    let decoder: JSONDecoder

    /// The stored type name.
    public var type: String { record.type }
    /// The time the event states (the device's clock for device events, the worker's for sends).
    public var occurredAt: Date { record.occurredAt }

    /// Decodes the payload as `T` (a ``LedgerEvent`` or any shape of it).
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try decoder.decode(T.self, from: record.data)
    }
}

/// The event types of a send's stream.
public enum SendLifecycle {
    /// Every type that can appear in a `send-…` stream.
    public static let eventTypes = [
        SendRequested.eventType, SendAttempted.eventType, ResponseReceived.eventType, RetryScheduled.eventType,
        SendSucceeded.eventType, SendFailed.eventType, SendOutcomeUnknown.eventType, SendCancelled.eventType,
    ]
}
