import Foundation

/// An ad network forwarded a SKAdNetwork postback. Kept as the exact text received, because the
/// signature covers the original values, together with what the ledger concluded when it took it
/// in: Apple's signature checked (``verification``), a repeat of an earlier postback
/// (``duplicateOf``), the unsigned fields cross-checked against the network's own report
/// (``unsignedCheck``), or the input refused (``rejection``) — a refused input is kept too, so
/// nothing a network sent is lost. Postbacks carry no device identifiers, so nothing here is
/// personal.
///
/// Stream: `skan-<app-id>/<transaction-id>` (Apple's numeric `app-id`); refused inputs go to
/// `skan-rejected-<digest>`, named by a digest of the bytes received.
///
/// The fields after the first three came with the SKAN postback module; events written before
/// them decode with those fields `nil`.
public struct SKANPostbackReceived: LedgerEvent {
    /// The stored type name (see ``LedgerEvent/eventType``).
    public static let eventType = "SKANPostbackReceived"
    /// The version of this JSON shape.
    public static let schemaVersion = 1
    /// What the event is about.
    public static let category = EventCategory.skanPostback
    /// The category of the streams it is appended to.
    public static let streamCategory = StreamCategory.skan
    /// The fields the privacy layer encrypts per device (see ``LedgerEvent/personalFields``).
    public static let personalFields: [String] = []

    /// What the ledger found when it checked Apple's `attribution-signature`.
    public enum Verification: String, LedgerEnum {
        /// The signature verifies with Apple's key over the version's signed fields.
        case valid
        /// The signature does not verify: kept and flagged, never counted.
        case invalid
        /// Versions 1.0 and 2.0 (signed with a retired P-192 key): refused, kept, never counted.
        case unsupportedVersion = "unsupported_version"
        /// The input broke the postback schema before a signature could be checked (see ``rejection``).
        case rejected
    }

    /// How the fields Apple does not sign compare with the forwarding network's own report.
    public enum UnsignedCheck: String, LedgerEnum {
        /// No second source: the unsigned values are only as trustworthy as the network.
        case unconfirmed
        /// The network's report agrees with every unsigned value it names.
        case confirmed
        /// At least one unsigned value differs from the network's report, or is one Apple never
        /// sends (a fine value in a later postback): see ``unsignedMismatches``.
        case mismatch
    }

    /// Why an input was refused: the field and the rule it broke.
    public struct Rejection: Codable, Sendable, Hashable {
        /// A stable kind (`malformed_json`, `missing_field`, `invalid_value`, …).
        public var kind: String
        /// The postback's field at fault (`conversion-value`), or nil when the whole input is.
        public var field: String?
        /// A stable rule id (`range_0_63`, `required`, …).
        public var rule: String
        /// A sentence for a person (never quotes the value).
        public var message: String

        /// Creates a rejection.
        public init(kind: String, field: String?, rule: String, message: String) {
            self.kind = kind
            self.field = field
            self.rule = rule
            self.message = message
        }
    }

    /// The unsigned values a network reports having received (the second source of the Singular
    /// SKAdNetwork 4 implementation guide's "secure set-up with networks"). Only the values present
    /// are compared.
    public struct ReportedValues: Codable, Sendable, Hashable {
        /// The fine `conversion-value` (0–63) the network received.
        public var conversionValue: Int?
        /// The `coarse-conversion-value` (`low`, `medium`, `high`) the network received.
        public var coarseConversionValue: String?
        /// The country (geo) the network attributes the postback to, ISO 3166-1 alpha-2.
        public var countryCode: String?

        /// Creates a report.
        public init(conversionValue: Int? = nil, coarseConversionValue: String? = nil, countryCode: String? = nil) {
            self.conversionValue = conversionValue
            self.coarseConversionValue = coarseConversionValue
            self.countryCode = countryCode
        }

        enum CodingKeys: String, CodingKey {
            case conversionValue = "conversion_value"
            case coarseConversionValue = "coarse_conversion_value"
            case countryCode = "country_code"
        }
    }

    /// The postback's JSON text, byte for byte as received (a JSON object unless refused; empty
    /// when the bytes were not UTF-8, see ``rawBase64``).
    public var raw: String
    /// The network that forwarded it (for the network-side cross-check of unsigned fields).
    public var forwardingNetwork: String
    /// When the ledger received it (server time; Apple delays postbacks 24–144 h after the fact).
    public var receivedAt: Date
    /// The bytes received, Base64, when they were not UTF-8 (refused inputs only).
    public var rawBase64: String?
    /// The signature check's outcome.
    public var verification: Verification?
    /// For a refused input: why.
    public var rejection: Rejection?
    /// The event id of the earlier postback with the same (`transaction-id`,
    /// `postback-sequence-index`) whose signature verified: this one is a repeat, counted once.
    public var duplicateOf: UUID?
    /// What the forwarding network reported receiving, when it did.
    public var reportedValues: ReportedValues?
    /// The cross-check of the unsigned fields.
    public var unsignedCheck: UnsignedCheck?
    /// The postback fields whose value differs from the network's report (`conversion-value`, …).
    public var unsignedMismatches: [String]?

    /// Creates the event.
    public init(raw: String, forwardingNetwork: String, receivedAt: Date, rawBase64: String? = nil,
                verification: Verification? = nil, rejection: Rejection? = nil, duplicateOf: UUID? = nil,
                reportedValues: ReportedValues? = nil, unsignedCheck: UnsignedCheck? = nil,
                unsignedMismatches: [String]? = nil) {
        self.raw = raw
        self.forwardingNetwork = forwardingNetwork
        self.receivedAt = receivedAt
        self.rawBase64 = rawBase64
        self.verification = verification
        self.rejection = rejection
        self.duplicateOf = duplicateOf
        self.reportedValues = reportedValues
        self.unsignedCheck = unsignedCheck
        self.unsignedMismatches = unsignedMismatches
    }

    enum CodingKeys: String, CodingKey {
        case raw
        case forwardingNetwork = "forwarding_network"
        case receivedAt = "received_at"
        case rawBase64 = "raw_base64"
        case verification, rejection
        case duplicateOf = "duplicate_of"
        case reportedValues = "reported_values"
        case unsignedCheck = "unsigned_check"
        case unsignedMismatches = "unsigned_mismatches"
    }

    /// Whether the input was refused (and so never verified, decoded or counted).
    public var isRefused: Bool { verification == .rejected || verification == .unsupportedVersion }

    /// A raw text that parses as a JSON object (for refused inputs: any text, or Base64 bytes, and
    /// a rejection); a network name of 1–200 characters; reported values in their ranges.
    public func validate() throws(RuleViolation) {
        if isRefused {
            guard rejection != nil else {
                throw RuleViolation(field: "rejection", rule: RuleViolation.requiredRule, message: "A refused postback names why.")
            }
            guard !raw.isEmpty || rawBase64 != nil else {
                throw RuleViolation(field: "raw", rule: "non_empty", message: "A refused postback keeps what was received.")
            }
        } else {
            guard !raw.isEmpty, (try? JSONSerialization.jsonObject(with: Data(raw.utf8))) is [String: Any] else {
                throw RuleViolation(field: "raw", rule: "json_object", message: "The postback text must be a JSON object.")
            }
            if rejection != nil || rawBase64 != nil {
                throw RuleViolation(field: "rejection", rule: "refused_only", message: "Only a refused postback has a rejection.")
            }
        }
        try Check.text(forwardingNetwork, "forwarding_network", max: 200)
        if let value = reportedValues?.conversionValue { try Check.range(value, 0...63, "reported_values.conversion_value") }
        if let coarse = reportedValues?.coarseConversionValue, !["low", "medium", "high"].contains(coarse) {
            throw RuleViolation(field: "reported_values.coarse_conversion_value", rule: "one_of",
                                message: "The coarse value is one of low, medium, high.")
        }
        if let country = reportedValues?.countryCode,
            country.utf8.count != 2 || !country.utf8.allSatisfy({ (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }) {
            throw RuleViolation(field: "reported_values.country_code", rule: "iso3166_alpha2",
                                message: "A country is two uppercase letters (ISO 3166-1 alpha-2).")
        }
    }
}
