import Foundation

/// Why the catalog refused an event (or its metadata).
///
/// `kind` says what broke broadly; `field` and `rule` say exactly where and which rule, so a
/// backend can be told what to fix; `message` is the sentence. Messages name fields and rules but
/// never quote a field's value, which may be personal data.
public struct EventValidationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What broke, broadly. Raw values are stable (usable in HTTP answers and metrics).
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        /// The type name is not in the catalog.
        case unknownType = "unknown_type"
        /// The type is known, not with this schema version.
        case unknownSchemaVersion = "unknown_schema_version"
        /// The JSON is larger than ``EventCatalog/maximumDataSize``.
        case tooLarge = "too_large"
        /// The bytes are not UTF-8.
        case invalidUTF8 = "invalid_utf8"
        /// The text is not JSON.
        case malformedJSON = "malformed_json"
        /// The JSON is not an object.
        case notAnObject = "not_an_object"
        /// A required field is absent or `null`.
        case missingField = "missing_field"
        /// A field has the wrong JSON type.
        case wrongType = "wrong_type"
        /// A field's value breaks a rule (range, format, enumeration, consistency).
        case invalidValue = "invalid_value"
        /// A field the type does not have. Refused rather than dropped: an unknown field would
        /// be stored unencrypted even if it held personal data, or silently lost.
        case unknownField = "unknown_field"
    }

    /// What broke.
    public var kind: Kind
    /// The event type as given by the caller (`"EventMetadata"` for envelope metadata).
    public var eventType: String
    /// The dotted path of the field (`device.idfa`, `candidates[2].time`), or `nil` when the
    /// whole payload is at fault.
    public var field: String?
    /// A short stable identifier of the rule (`required`, `expected_string`, `range_0_63`,
    /// `max_1048576_bytes`, …).
    public var rule: String
    /// A sentence for a person.
    public var message: String

    /// Creates an error.
    public init(_ kind: Kind, eventType: String, field: String? = nil, rule: String, message: String) {
        self.kind = kind
        self.eventType = eventType
        self.field = field
        self.rule = rule
        self.message = message
    }

    /// `FirstOpen: device.idfa: The identifier must be a UUID … [uuid]`.
    public var description: String {
        "\(eventType): \(field.map { "\($0): " } ?? "")\(message) [\(rule)]"
    }
}
