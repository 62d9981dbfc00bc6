import Foundation
import LedgerDomain
import LedgerStore

/// Why the ledger refused a call. Nothing of a refused recording is written.
///
/// `field` and `rule` say exactly what to fix (`device.idfa` / `uuid`); `message` is the sentence.
/// Messages never quote a field's value, which may be personal data.
public struct AttributionLedgerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, broadly. Raw values are stable (usable in HTTP answers and metrics).
    public enum Code: String, Sendable, Hashable, Codable, CaseIterable {
        /// The fact, its metadata or an argument breaks a rule (HTTP 400).
        case invalid
        /// The id was already recorded with other content, or for another device (HTTP 409).
        case idConflict = "id_conflict"
        /// The thing asked about does not exist (HTTP 404): erasing a device never seen.
        case notFound = "not_found"
        /// The input belongs to another app than the caller's (HTTP 403).
        case forbidden
        /// A bound on what the ledger keeps was reached; try again later (HTTP 429).
        case rateLimited = "rate_limited"
    }

    /// What went wrong.
    public var code: Code
    /// The event type concerned, when there is one (`FirstOpen`, `EventMetadata`).
    public var eventType: String?
    /// The dotted path of the offending field (`device.idfa`, `app_id`, `occurred_at`), or `nil`
    /// when the whole payload is at fault.
    public var field: String?
    /// A short stable identifier of the rule (`required`, `uuid`, `device_fact`, …).
    public var rule: String
    /// A sentence for a person.
    public var message: String
    /// The event id concerned (for ``Code/idConflict``).
    public var eventID: UUID?
    /// The offending fact's place in a batch (``AttributionLedger/recordBatch(_:)``), from 0.
    public var index: Int?

    /// Creates an error.
    public init(_ code: Code, eventType: String? = nil, field: String? = nil, rule: String, message: String, eventID: UUID? = nil) {
        self.code = code
        self.eventType = eventType
        self.field = field
        self.rule = rule
        self.message = message
        self.eventID = eventID
    }

    /// A rule broken by an argument or a fact.
    public static func invalid(eventType: String? = nil, field: String?, rule: String, message: String) -> Self {
        Self(.invalid, eventType: eventType, field: field, rule: rule, message: message)
    }

    /// The catalog's refusal of a fact, kept field for field.
    public init(_ error: EventValidationError) {
        self.init(.invalid, eventType: error.eventType, field: error.field, rule: error.rule, message: error.message)
    }

    /// A stream or event of another app was touched: `forbidden`, naming `device_id` (the part of
    /// the caller's input that led there) and never the other app.
    public static func otherApp(_ violation: TenancyViolation) -> Self {
        Self(.forbidden, field: "device_id", rule: "recorded_app_matches",
             message: "The log records this device's stream for another app; it can be neither read nor written with this app.")
    }

    /// `FirstOpen: device.idfa: The identifier must be a UUID … [uuid]`.
    public var description: String {
        "\(eventType.map { "\($0): " } ?? "")\(field.map { "\($0): " } ?? "")\(message) [\(rule)]"
    }

    /// Turns what the store or the recorder threw into the facade's error where it is a refusal
    /// of the caller's input; other errors (the database failing) pass through unchanged.
    static func mapping(_ error: any Error, eventType: String, eventID: UUID) -> any Error {
        switch error {
        case let error as AttributionLedgerError:
            return error
        case let error as EventValidationError:
            return AttributionLedgerError(error)
        case let violation as TenancyViolation:
            return AttributionLedgerError.otherApp(violation)
        case let error as RuleViolation:
            return AttributionLedgerError.invalid(eventType: eventType, field: error.field, rule: error.rule, message: error.message)
        case let error as EventStoreError:
            switch error {
            case .eventIDConflict(let id):
                return AttributionLedgerError(
                    .idConflict, eventType: eventType, field: "id", rule: "same_id_same_content",
                    message: "This id was already recorded with other content or for another device; use a new id for a new fact.",
                    eventID: id)
            case .invalidEvent(_, let type, let field, let rule, let message):
                return AttributionLedgerError.invalid(eventType: type, field: field, rule: rule, message: message)
            default:
                return error
            }
        default:
            return error
        }
    }
}
