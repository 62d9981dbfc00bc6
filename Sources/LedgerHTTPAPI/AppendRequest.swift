import AttributionLedger
import Foundation
import HTTPTypes
import LedgerDomain

/// The body of `POST /v1/apps/{app}/events`, checked field by field so every refusal names its
/// field (`events[2].occurred_at`) and rule, and turned into prepared facts before anything is
/// written.
///
/// ```json
/// {"events": [{"id": "…uuid…", "type": "FirstOpen", "schema_version": 1, "device_id": "install-7f3a",
///              "occurred_at": "2026-11-23T10:00:00.000000Z", "data": {…},
///              "actor": "checkout-backend", "correlation_id": "…uuid…", "causation_id": "…uuid…"}]}
/// ```
struct AppendRequest {
    /// The envelope keys an event may have.
    static let eventKeys: Set<String> = [
        "id", "type", "schema_version", "device_id", "occurred_at", "data", "actor", "correlation_id", "causation_id",
    ]

    /// Envelope refusals of the facade's `prepare`, by rule: they name the envelope field, not a
    /// field of `data`.
    static let envelopeRules: [String: String] = [
        "unknown_type": "type", "device_fact": "type", "unknown_schema_version": "schema_version", "timestamp_range": "occurred_at",
    ]

    /// Parses `body` (``JSONBody/parse(_:)``: strict, no key twice) and prepares every event for
    /// `app`, in the request's trace (`traceparent`, already validated; nil when absent or invalid).
    /// - Throws: ``APIError`` (400) naming the first offending field.
    static func prepare(_ body: Data, app: AppID, ledger: AttributionLedger, maxEvents: Int, traceparent: TraceParent? = nil)
        throws(APIError) -> [PreparedFact]
    {
        guard case .object(let object) = try JSONBody.parse(body) else {
            throw APIError.invalidRequest(field: "body", rule: "json_object", message: "The body must be a JSON object.")
        }
        if let unknown = object.keys.sorted().first(where: { $0 != "events" }) {
            throw APIError.invalidRequest(field: unknown, rule: "unknown_field", message: "The body has only 'events'.")
        }
        guard let eventsValue = object["events"] else {
            throw APIError.invalidRequest(field: "events", rule: "required", message: "The body needs an 'events' array.")
        }
        guard case .array(let events) = eventsValue else {
            throw APIError.invalidRequest(field: "events", rule: "expected_array", message: "'events' must be a JSON array.")
        }
        guard !events.isEmpty else {
            throw APIError.invalidRequest(field: "events", rule: "non_empty", message: "'events' holds at least one event.")
        }
        guard events.count <= maxEvents else {
            throw APIError.invalidRequest(field: "events", rule: "max_\(maxEvents)_events",
                                          message: "A batch holds at most \(maxEvents) events; split it.")
        }
        var prepared: [PreparedFact] = []
        prepared.reserveCapacity(events.count)
        for (index, event) in events.enumerated() {
            prepared.append(try prepareEvent(event, index: index, app: app, ledger: ledger, traceparent: traceparent))
        }
        return prepared
    }

    private static func prepareEvent(_ value: JSONValue, index: Int, app: AppID, ledger: AttributionLedger,
                                     traceparent: TraceParent?) throws(APIError) -> PreparedFact
    {
        let base = "events[\(index)]"
        func refuse(_ key: String, _ rule: String, _ message: String) -> APIError {
            APIError.invalidRequest(field: "\(base).\(key)", rule: rule, message: message, index: index)
        }
        guard case .object(let event) = value else {
            throw APIError.invalidRequest(field: base, rule: "json_object", message: "Each event is a JSON object.", index: index)
        }
        if let unknown = event.keys.sorted().first(where: { !eventKeys.contains($0) }) {
            throw refuse(unknown, "unknown_field", "An event has no such field (see docs/openapi.yaml).")
        }
        func string(_ key: String, required: Bool) throws(APIError) -> String? {
            switch event[key] {
            case nil, .null?:
                if required { throw refuse(key, "required", "The field is required.") }
                return nil
            case .string(let text)?:
                return text
            default:
                throw refuse(key, "expected_string", "The field must be a JSON string.")
            }
        }
        func uuid(_ key: String, required: Bool) throws(APIError) -> UUID? {
            guard let text = try string(key, required: required) else { return nil }
            guard text.utf8.count == 36, let id = UUID(uuidString: text) else {
                throw refuse(key, "uuid", "The field must be a UUID (8-4-4-4-12 hex digits).")
            }
            return id
        }
        let id = try uuid("id", required: true)!
        let type = try string("type", required: true)!
        var schemaVersion: Int?
        switch event["schema_version"] {
        case nil, .null?:
            break
        case .number(let number)?:
            let whole = NSDecimalNumber(decimal: number).intValue
            guard number >= 1, number <= 1000, Decimal(whole) == number else {
                throw refuse("schema_version", "integer_1_1000", "A schema version is a whole number from 1 to 1000.")
            }
            schemaVersion = whole
        default:
            throw refuse("schema_version", "expected_number", "The field must be a JSON number.")
        }
        let deviceText = try string("device_id", required: true)!
        let device: DeviceRef
        do {
            device = try DeviceRef(app: app, device: DeviceID(deviceText))
        } catch let error as AttributionLedgerError {
            throw refuse("device_id", error.rule, error.message)
        } catch let error as RuleViolation {
            throw refuse("device_id", error.rule, error.message)
        } catch {
            throw refuse("device_id", "device_id", "The device id is not valid.")
        }
        let occurredText = try string("occurred_at", required: true)!
        guard let occurredAt = LedgerTimestamp.parse(occurredText) else {
            throw refuse("occurred_at", "iso8601_timestamp", "The time must be an ISO 8601 timestamp such as 2026-11-23T10:00:00.000000Z.")
        }
        guard let dataValue = event["data"], dataValue != .null else { throw refuse("data", "required", "The field is required.") }
        guard case .object = dataValue else { throw refuse("data", "json_object", "The event's data must be a JSON object.") }
        let options = RecordingOptions(
            actor: try string("actor", required: false) ?? "http-api", correlationID: try uuid("correlation_id", required: false),
            causationID: try uuid("causation_id", required: false), traceparent: traceparent)
        do {
            return try ledger.prepare(type: type, schemaVersion: schemaVersion, json: dataValue, for: device, id: id,
                                      occurredAt: occurredAt, options: options)
        } catch {
            throw eventError(error, index: index)
        }
    }

    /// The facade's refusal of event `index`, with its field placed in the request's JSON.
    static func eventError(_ error: AttributionLedgerError, index: Int) -> APIError {
        let base = "events[\(index)]"
        var refusal = APIError.fromLedger(error, index: index, fieldPrefix: nil)
        if error.eventType == EventMetadata.typeName {
            refusal.field = "\(base).actor"
        } else if let envelope = envelopeRules[error.rule] ?? (error.field == "id" ? "id" : nil) {
            refusal.field = "\(base).\(envelope)"
        } else {
            refusal.field = error.field.map { "\(base).data.\($0)" } ?? "\(base).data"
        }
        if error.code == .invalid { refusal.code = .invalidEvent }
        return refusal
    }
}
