import Foundation
import LedgerDecisions
import LedgerDomain
import LedgerPostgres
import LedgerStore
import Logging

/// Envelope facts a caller may add to a recording: who records it and which flow it belongs to.
public struct RecordingOptions: Sendable, Hashable {
    /// Who records the fact: a service name (`checkout-backend`); the ledger's default actor when nil.
    /// 1–100 characters without control characters; never a person.
    public var actor: String?
    /// Groups the events of one flow (for instance an install and everything it led to).
    public var correlationID: UUID?
    /// The event that directly caused this one, if the caller knows it.
    public var causationID: UUID?
    /// The caller's W3C trace context (an HTTP request's valid `traceparent`), recorded in the
    /// metadata when no span of the ledger's own is current: with a tracer running, the span the
    /// fact is recorded in (a child of the caller's) is recorded instead.
    public var traceparent: TraceParent?

    /// Creates options.
    public init(actor: String? = nil, correlationID: UUID? = nil, causationID: UUID? = nil, traceparent: TraceParent? = nil) {
        self.actor = actor
        self.correlationID = correlationID
        self.causationID = causationID
        self.traceparent = traceparent
    }
}

/// What one recording did.
public struct Recorded: Sendable, Hashable, Codable {
    /// The fact's event id (the caller's id).
    public var eventID: UUID
    /// Its global position in the log (the first recording's position on an idempotent retry).
    public var position: Int64
    /// True when this id had already been recorded with the same content: nothing was written.
    public var wasDuplicate: Bool
    /// The provider sends the fact requested in the same transaction (empty on a duplicate).
    public var sendIDs: [UUID]

    /// Creates a result.
    public init(eventID: UUID, position: Int64, wasDuplicate: Bool, sendIDs: [UUID] = []) {
        self.eventID = eventID
        self.position = position
        self.wasDuplicate = wasDuplicate
        self.sendIDs = sendIDs
    }

    enum CodingKeys: String, CodingKey {
        case eventID = "id"
        case position
        case wasDuplicate = "duplicate"
        case sendIDs = "send_ids"
    }

    /// Encodes ids in lowercase, as the ledger writes UUIDs everywhere.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(eventID.uuidString.lowercased(), forKey: .eventID)
        try container.encode(position, forKey: .position)
        try container.encode(wasDuplicate, forKey: .wasDuplicate)
        try container.encode(sendIDs.map { $0.uuidString.lowercased() }, forKey: .sendIDs)
    }
}

/// A device fact checked and encoded, ready to record: the result of
/// ``AttributionLedger/prepare(_:for:id:occurredAt:options:)``. Preparing a whole batch before
/// recording any of it is how a batch is refused without writing anything.
public struct PreparedFact: Sendable {
    /// The typed fact.
    public let fact: any LedgerEvent
    /// The device it is about.
    public let device: DeviceRef
    /// The caller's id for it (the idempotency key).
    public let id: UUID
    /// When it happened, by the device's clock.
    public let occurredAt: Date
    /// Its envelope metadata.
    public let metadata: EventMetadata
    /// The event and the sends it causes, as the recorder checked and encoded them.
    let planned: DeviceFactRecorder.PlannedFact

    /// The fact's type name (`FirstOpen`).
    public var eventType: String { type(of: fact).eventType }
}

extension AttributionLedger {
    /// Checks a typed device fact and encodes it, writing nothing.
    ///
    /// Rules: the type is a device fact (stream `device-…`); the catalog's rules for it (every field
    /// checked, see `docs/events.md`); a `FirstOpen`'s `app_id` is the device's app; `occurred_at`
    /// lies in the years 0001–9999; the metadata's `actor` is 1–100 characters.
    /// - Throws: ``AttributionLedgerError`` (`invalid`) naming the field and the rule.
    public func prepare<Fact: LedgerEvent>(
        _ fact: Fact, for device: DeviceRef, id: UUID, occurredAt: Date, options: RecordingOptions = RecordingOptions()
    ) throws(AttributionLedgerError) -> PreparedFact {
        try prepare(fact, canonical: nil, for: device, id: id, occurredAt: occurredAt, options: options)
    }

    /// ``prepare(_:for:id:occurredAt:options:)`` for a fact the catalog checked from JSON, with
    /// the canonical JSON that check made (nil: the fact is encoded here).
    func prepare<Fact: LedgerEvent>(
        _ fact: Fact, canonical: Data?, for device: DeviceRef, id: UUID, occurredAt: Date, options: RecordingOptions
    ) throws(AttributionLedgerError) -> PreparedFact {
        guard Fact.category == .device, Fact.streamCategory == .device else {
            throw .invalid(
                eventType: Fact.eventType, field: "type", rule: "device_fact",
                message: "Only device facts are recorded through this API (sends, decisions and postbacks are the ledger's own).")
        }
        if let open = fact as? FirstOpen, open.appID != device.app {
            throw .invalid(
                eventType: Fact.eventType, field: "app_id", rule: "matches_device_app",
                message: "A first open's app_id must be the app of the device it is recorded for.")
        }
        guard LedgerTimestamp.format(occurredAt) != nil, occurredAt.timeIntervalSince1970.isFinite else {
            throw .invalid(
                eventType: Fact.eventType, field: "occurred_at", rule: "timestamp_range",
                message: "The time must lie in the years 0001–9999.")
        }
        // The trace the fact is recorded in: the current span's (so the sends it causes continue
        // the trace from there), else the caller's own.
        let metadata = EventMetadata(
            correlationID: options.correlationID, causationID: options.causationID, actor: options.actor ?? defaultActor,
            appID: device.app, traceparent: TraceContext.traceParent() ?? options.traceparent)
        var item = FactToRecord(fact, app: device.app, device: device.device, id: id, occurredAt: occurredAt, metadata: metadata)
        item.canonical = canonical
        do {
            return PreparedFact(fact: fact, device: device, id: id, occurredAt: occurredAt, metadata: metadata,
                                planned: try recorder.plan(item))
        } catch let error as EventValidationError {
            throw AttributionLedgerError(error)
        } catch let error as RuleViolation {
            throw .invalid(eventType: Fact.eventType, field: error.field, rule: error.rule, message: error.message)
        } catch {
            throw .invalid(eventType: Fact.eventType, field: nil, rule: "encodable", message: "\(error)")
        }
    }

    /// Checks a device fact given as JSON (as the HTTP API and `ledger append` receive it) and
    /// decodes it, writing nothing.
    ///
    /// - Parameters:
    ///   - type: the catalog's type name (`FirstOpen`).
    ///   - schemaVersion: the version of its JSON shape; the newest when nil.
    ///   - data: the fact's JSON object (see `docs/events.md`).
    /// - Throws: ``AttributionLedgerError`` (`invalid`) naming the field (`device.idfa`) and the rule.
    public func prepare(
        type: String, schemaVersion: Int? = nil, data: Data, for device: DeviceRef, id: UUID, occurredAt: Date,
        options: RecordingOptions = RecordingOptions()
    ) throws(AttributionLedgerError) -> PreparedFact {
        try prepareChecked(type: type, schemaVersion: schemaVersion, for: device, id: id, occurredAt: occurredAt,
                           options: options) { entry throws(EventValidationError) in
            try EventCatalog.standard.validateEncoding(type: entry.eventType, schemaVersion: entry.schemaVersion, data: data)
        }
    }

    /// ``prepare(type:schemaVersion:data:for:id:occurredAt:options:)`` for a fact's JSON already
    /// parsed (an object with no key twice, as the HTTP API reads a request): the same rules,
    /// without writing it out as text and parsing it again.
    public func prepare(
        type: String, schemaVersion: Int? = nil, json: JSONValue, for device: DeviceRef, id: UUID, occurredAt: Date,
        options: RecordingOptions = RecordingOptions()
    ) throws(AttributionLedgerError) -> PreparedFact {
        try prepareChecked(type: type, schemaVersion: schemaVersion, for: device, id: id, occurredAt: occurredAt,
                           options: options) { entry throws(EventValidationError) in
            try EventCatalog.standard.validateEncoding(type: entry.eventType, schemaVersion: entry.schemaVersion, json: json)
        }
    }

    /// A device fact of the type named, checked by `check` against the type's catalog entry.
    private func prepareChecked(
        type: String, schemaVersion: Int?, for device: DeviceRef, id: UUID, occurredAt: Date, options: RecordingOptions,
        check: (EventCatalog.Entry) throws(EventValidationError) -> (event: any LedgerEvent, canonical: Data)
    ) throws(AttributionLedgerError) -> PreparedFact {
        let entry = try deviceFactEntry(type: type, schemaVersion: schemaVersion)
        let checked: (event: any LedgerEvent, canonical: Data)
        do {
            checked = try check(entry)
        } catch {
            throw AttributionLedgerError(error)
        }
        return try prepare(checked.event, canonical: checked.canonical, for: device, id: id, occurredAt: occurredAt,
                           options: options)
    }

    /// The catalog's entry of a device fact type (its newest version when `schemaVersion` is nil).
    private func deviceFactEntry(type: String, schemaVersion: Int?) throws(AttributionLedgerError) -> EventCatalog.Entry {
        guard let entry = schemaVersion.map({ EventCatalog.standard.entry(named: type, schemaVersion: $0) })
            ?? EventCatalog.standard.entry(named: type)
        else {
            let known = EventCatalog.standard.entry(named: type) != nil
            throw .invalid(
                eventType: type, field: known ? "schema_version" : "type", rule: known ? "unknown_schema_version" : "unknown_type",
                message: known ? "The catalog has no such schema version of this type." : "The event type is not in the catalog.")
        }
        guard entry.category == .device, entry.streamCategory == .device else {
            throw .invalid(
                eventType: type, field: "type", rule: "device_fact",
                message: "Only device facts are recorded through this API (sends, decisions and postbacks are the ledger's own).")
        }
        return entry
    }

    /// Records a prepared fact through the attribution layer's recorder (the fact and the sends it
    /// causes in one transaction). Idempotent by the fact's id.
    /// - Throws: ``AttributionLedgerError`` (`id_conflict` when the id holds other content),
    ///   `PostgresError` when the database fails.
    public func record(_ prepared: PreparedFact) async throws -> Recorded {
        let type = prepared.eventType
        let started = ContinuousClock.now
        do {
            let fact = try await recorder.record(planned: [prepared.planned], now: clock.now())[0]
            metrics.recorded(type: type, duplicate: fact.wasDuplicate, duration: ContinuousClock.now - started)
            // The event id, not the stream: a device stream's id holds the app's install id.
            logger.debug("recorded a device fact", metadata: [
                "ledger.event_type": "\(type)", "ledger.position": "\(fact.position)", "ledger.duplicate": "\(fact.wasDuplicate)",
                "ledger.app": "\(prepared.device.app)", "ledger.event": "\(fact.eventID)",
            ])
            return Recorded(eventID: fact.eventID, position: fact.position, wasDuplicate: fact.wasDuplicate, sendIDs: fact.sends)
        } catch {
            let mapped = AttributionLedgerError.mapping(error, eventType: type, eventID: prepared.id)
            if let refusal = mapped as? AttributionLedgerError {
                metrics.refused(type: type, rule: refusal.rule)
            } else {
                metrics.failed(type: type)
                // By type and SQLSTATE only: an error's text may quote the stream id or row values.
                var metadata: Logger.Metadata = ["ledger.event_type": "\(type)", "ledger.app": "\(prepared.device.app)",
                                                 "error.type": "\(String(reflecting: Swift.type(of: error)))"]
                if let error = error as? PostgresError, let sqlState = error.sqlState { metadata["db.sqlstate"] = "\(sqlState)" }
                logger.error("recording failed", metadata: metadata)
            }
            throw mapped
        }
    }

    /// Checks and records any device fact: the generic form of the `record…` methods.
    /// - Returns: the fact's position (the first recording's on a retry with the same id and content).
    /// - Throws: ``AttributionLedgerError`` (`invalid`, `id_conflict`), `PostgresError`.
    @discardableResult
    public func record<Fact: LedgerEvent>(
        _ fact: Fact, for device: DeviceRef, id: UUID, occurredAt: Date, options: RecordingOptions = RecordingOptions()
    ) async throws -> Recorded {
        try await record(prepare(fact, for: device, id: id, occurredAt: occurredAt, options: options))
    }
}
