import Foundation

/// Why a postback was refused, naming the postback's field and the rule it broke.
///
/// The message never quotes the value. When the ingestor kept the refused input (it always does,
/// unless the caller's own arguments were at fault), ``rejectedEventID`` is the id of the
/// `SKANPostbackReceived` event that holds it.
public struct SKANPostbackError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What broke, broadly. Raw values are stable (HTTP answers, metrics, stored rejections).
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        /// Larger than ``SKANPostback/maximumBytes``.
        case tooLarge = "too_large"
        /// Not UTF-8.
        case invalidUTF8 = "invalid_utf8"
        /// Not JSON.
        case malformedJSON = "malformed_json"
        /// JSON, not an object.
        case notAnObject = "not_an_object"
        /// A key appears twice.
        case duplicateField = "duplicate_field"
        /// A field the version requires is absent.
        case missingField = "missing_field"
        /// A field has the wrong JSON type.
        case wrongType = "wrong_type"
        /// A field's value breaks a rule (range, format, a field its version does not have).
        case invalidValue = "invalid_value"
        /// A `version` the ledger does not know.
        case unknownVersion = "unknown_version"
        /// Versions 1.0 and 2.0: signed with a retired P-192 key, not supported.
        case unsupportedVersion = "unsupported_version"
        /// The caller's own arguments (the network name) are invalid: nothing was stored.
        case invalidArgument = "invalid_argument"
        /// The postback's `app-id` is not the app that sent it: nothing was stored.
        case otherApp = "other_app"
        /// The app's refused inputs of the last hour reached the ingestor's bound: nothing was stored.
        case refusedLimit = "refused_limit"
        /// An AdAttributionKit postback signed with one of Apple's development keys, for an app
        /// whose configuration does not allow them: nothing was stored.
        case developmentKey = "development_key"
    }

    /// What broke.
    public var kind: Kind
    /// The postback's field (`conversion-value`, `reported_values.country_code`), or nil when the
    /// whole input is at fault.
    public var field: String?
    /// A short stable rule id (`range_0_63`, `required`, `base64`, …).
    public var rule: String
    /// A sentence for a person.
    public var message: String
    /// The event that keeps the refused input, once stored.
    public var rejectedEventID: UUID?

    /// Creates an error.
    public init(_ kind: Kind, field: String? = nil, rule: String, message: String, rejectedEventID: UUID? = nil) {
        self.kind = kind
        self.field = field
        self.rule = rule
        self.message = message
        self.rejectedEventID = rejectedEventID
    }

    /// `conversion-value: The value must lie between 0 and 63. [range_0_63]`.
    public var description: String { "\(field.map { "\($0): " } ?? "")\(message) [\(rule)]" }

    static func missing(_ field: String, _ why: String = "The field is required in this version.") -> Self {
        Self(.missingField, field: field, rule: "required", message: why)
    }

    static func wrongType(_ field: String, expected: String) -> Self {
        Self(.wrongType, field: field, rule: "expected_\(expected)", message: "The field must be a JSON \(expected).")
    }

    static func invalid(_ field: String, _ rule: String, _ message: String) -> Self {
        Self(.invalidValue, field: field, rule: rule, message: message)
    }

    static func missing(_ key: SKANJSONObject.Key, _ why: String = "The field is required in this version.") -> Self {
        missing(key.name, why)
    }

    static func wrongType(_ key: SKANJSONObject.Key, expected: String) -> Self { wrongType(key.name, expected: expected) }

    static func invalid(_ key: SKANJSONObject.Key, _ rule: String, _ message: String) -> Self { invalid(key.name, rule, message) }
}
