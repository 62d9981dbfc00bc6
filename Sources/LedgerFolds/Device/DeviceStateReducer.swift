import Foundation
import LedgerDomain

/// The pure core of a per-device projection: a state per device, evolved one event at a time.
///
/// A reducer never reads the clock, the database or the network: its state depends only on the
/// events it was given, in order. That is what makes a projection rebuildable, lets the same code
/// answer "as of" questions by replaying one device's history (``replay(_:device:)``), and lets
/// tests check it without PostgreSQL. LedgerProjections' `DeviceStateProjection` stores the
/// states and keeps them up to date.
///
/// A reducer should not throw for odd input the providers or devices may send (a body that does
/// not parse, a value out of range): it records such things in its state. A throw means a bug in
/// the reducer; the runner stops at that event until the fix is deployed and the projection
/// rebuilt.
public protocol DeviceStateReducer: Sendable {
    /// The state of one device.
    associatedtype State: Codable, Sendable, Equatable

    /// The projection's name: it names the checkpoint row and prefixes the projection's tables.
    var name: String { get }
    /// The projection's version: raise it with every change to what ``apply(_:to:)`` computes
    /// (the stored states are then stale until rebuilt).
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
    /// Applies one event.
    func apply(_ event: DeviceEvent, to state: inout State) throws
}

extension DeviceStateReducer {
    /// `encoder`'s text of `state`.
    public func jsonText(of state: State, encoder: JSONEncoder) throws -> String {
        String(decoding: try encoder.encode(state), as: UTF8.self)
    }

    /// Every type the reducer reads: ``deviceEventTypes``, plus the send lifecycle
    /// (``SendLifecycle/eventTypes``) when it follows sends; sorted, each once.
    public var eventTypes: [String] {
        var types = deviceEventTypes
        if !followedProviders.isEmpty { types += SendLifecycle.eventTypes }
        return Array(Set(types)).sorted()
    }

    /// Folds `events` (one device's history, in log order) from the initial state: the device's
    /// state after the last of them.
    /// - Throws: what ``apply(_:to:)`` throws, or a decoding error for a `SendRequested` or a
    ///   decision that cannot be read.
    public func replay(_ events: [LoggedEvent], device deviceStream: String) throws -> State {
        var fold = DeviceFold(reducer: self)
        for event in events { try fold.fold(event) }
        return fold.states[deviceStream] ?? initialState()
    }
}

/// An event as the log holds it, with what a fold reads of it (the store's record has more: its
/// transaction, stream version, metadata and hash).
public struct LoggedEvent: Sendable, Hashable {
    /// The global position (unique, increasing in order of assignment).
    public var position: Int64
    /// The stream it was appended to (`device-…`, `send-…`, `decision-…`).
    public var streamID: String
    /// The event's id.
    public var id: UUID
    /// The stored type name.
    public var type: String
    /// The payload as stored (jsonb's canonical text).
    public var data: Data
    /// The time the event states.
    public var occurredAt: Date
    /// When the ledger stored it.
    public var recordedAt: Date

    /// An event read from the log.
    public init(position: Int64, streamID: String, id: UUID, type: String, data: Data, occurredAt: Date, recordedAt: Date) {
        self.position = position
        self.streamID = streamID
        self.id = id
        self.type = type
        self.data = data
        self.occurredAt = occurredAt
        self.recordedAt = recordedAt
    }
}

/// One event as a per-device projection sees it.
public struct DeviceEvent: Sendable {
    /// The event as stored.
    public let record: LoggedEvent
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
        SendSucceeded.eventType, SendFailed.eventType, SendOutcomeUnknown.eventType, SendParked.eventType,
        SendUnparked.eventType, SendCancelled.eventType,
    ]
}
