import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerPostgres
import LedgerStore
import Logging

/// What recording a device fact did.
public struct RecordedFact: Sendable, Hashable {
    /// The fact's event id (the caller's id).
    public var eventID: UUID
    /// The fact's global position (the first time's position on an idempotent retry).
    public var position: Int64
    /// The device stream it went to.
    public var streamID: StreamID
    /// True when this id had been recorded before with the same content: nothing new was written.
    public var wasDuplicate: Bool
    /// The sends the fact requested, in the same transaction (empty on a duplicate).
    public var sends: [UUID]

    /// Creates a result.
    public init(eventID: UUID, position: Int64, streamID: StreamID, wasDuplicate: Bool, sends: [UUID]) {
        self.eventID = eventID
        self.position = position
        self.streamID = streamID
        self.wasDuplicate = wasDuplicate
        self.sends = sends
    }
}

/// The write path of a device fact: validates it, appends it to the device's stream and, in the
/// same transaction, the `SendRequested` events it causes (the transactional outbox), so a fact
/// and its sends commit together or not at all.
public struct DeviceFactRecorder: Sendable {
    /// The store facts are appended to.
    public let store: EventStore
    /// Which providers are enabled per app, and their windows.
    public let settings: AttributionSettings
    let logger: Logger

    /// Creates a recorder.
    public init(store: EventStore, settings: AttributionSettings = AttributionSettings(), logger: Logger = Logger(label: "ledger.attribution")) {
        self.store = store
        self.settings = settings
        self.logger = logger
    }

    /// Appends `fact` to `device-<app>-<device>` under the caller's `id` (idempotent: the same id
    /// with the same content answers as the first time), with the sends it causes.
    ///
    /// - Parameters:
    ///   - occurredAt: the device's time of the fact.
    ///   - now: the ledger's time (enqueue time of the sends it causes).
    /// - Throws: `RuleViolation` (invalid fact), `EventStoreError`, `PostgresError`.
    public func record<Fact: LedgerEvent>(
        _ fact: Fact, app: AppID, device: DeviceID, id: UUID, occurredAt: Date, metadata: EventMetadata, now: Date
    ) async throws -> RecordedFact {
        try fact.validate()
        let stream = try StreamID.device(app: app, device: device)
        let meta = try EventCatalog.standard.encode(metadata: metadata)
        let event = try NewEvent(fact, id: id, metadata: meta, occurredAt: occurredAt)
        let planned = SendPlanner(settings: settings.forApp(app.rawValue)).plan(fact, eventID: id)
        let requests = planned.map { send in
            SendRequested(
                sendID: Outbox.sendID(forKey: send.key), provider: send.provider, kind: send.kind, causeEventID: id,
                causeStreamID: stream, deviceStreamID: stream, idempotencyKey: send.key, parameters: send.parameters)
        }
        for request in requests { try request.validate() }
        return try await store.pool.withTransaction { [store] connection in
            let result = try store.append([event], to: stream.rawValue, expected: .any, on: connection)
            let position = result.events.first?.position ?? 0
            guard !result.wasDuplicate else {
                return RecordedFact(eventID: id, position: position, streamID: stream, wasDuplicate: true, sends: [])
            }
            var sends: [UUID] = []
            for request in requests {
                let enqueued = try Outbox.enqueue(request, store: store, now: now, on: connection)
                if !enqueued.wasDuplicate { sends.append(enqueued.sendID) }
            }
            return RecordedFact(eventID: id, position: position, streamID: stream, wasDuplicate: false, sends: sends)
        }
    }
}
