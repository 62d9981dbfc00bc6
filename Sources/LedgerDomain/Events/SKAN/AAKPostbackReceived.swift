import Foundation

/// An AdAttributionKit postback reached the ledger, forwarded by an ad network or sent by Apple's
/// device to the app's own domain (a developer copy). Kept as the exact text received, because
/// the signature covers the JWS as written, together with what the ledger concluded when it took
/// it in: Apple's signature checked with the key the JWS header names (``verification``,
/// ``keyID``), a repeat of an earlier postback (``duplicateOf``), and the unsigned fields
/// cross-checked against the forwarding network's own report (``unsignedCheck``). Postbacks carry
/// no device identifiers, so nothing here is personal.
///
/// A peer of ``SKANPostbackReceived``: the same category and stream category, its own type and
/// streams, `skan-<app-id>/aak/<postback-identifier>` (Apple's `advertised-item-identifier` as
/// the app): the second `/` keeps them apart from every SKAN transaction's stream.
public struct AAKPostbackReceived: LedgerEvent {
    /// The stored type name (see ``LedgerEvent/eventType``).
    public static let eventType = "AAKPostbackReceived"
    /// The version of this JSON shape.
    public static let schemaVersion = 1
    /// What the event is about: Apple's ad-attribution postbacks, both systems.
    public static let category = EventCategory.skanPostback
    /// The category of the streams it is appended to.
    public static let streamCategory = StreamCategory.skan
    /// The fields the privacy layer encrypts per device (see ``LedgerEvent/personalFields``).
    public static let personalFields: [String] = []

    /// What the ledger found when it checked the JWS signature.
    public enum Verification: String, LedgerEnum {
        /// The signature verifies with the public key the header's `kid` names.
        case valid
        /// The signature does not verify (or the `kid` names no key the ledger knows): kept and
        /// flagged, never counted.
        case invalid
    }

    /// The postback's JSON stanza, byte for byte as received.
    public var raw: String
    /// Who delivered it: the forwarding network's name, or `apple-developer-copy` for a copy
    /// Apple's device sent to the app's well-known path.
    public var forwardingNetwork: String
    /// When the ledger received it (server time).
    public var receivedAt: Date
    /// The signature check's outcome.
    public var verification: Verification
    /// The JWS header's `kid`, as received (`apple-cas-identifier/0`, …).
    public var keyID: String
    /// True when `kid` names one of Apple's development keys: such postbacks are stored only for
    /// apps whose configuration allows them, and are never counted with production ones.
    public var development: Bool
    /// The earlier verified postback with the same (`postback-identifier`,
    /// `postback-sequence-index`): this one is a repeat, counted once.
    public var duplicateOf: UUID?
    /// What the forwarding network reported receiving, when it did (the same shape as SKAN's).
    public var reportedValues: SKANPostbackReceived.ReportedValues?
    /// The cross-check of the unsigned fields.
    public var unsignedCheck: SKANPostbackReceived.UnsignedCheck
    /// The postback fields whose value differs from the network's report.
    public var unsignedMismatches: [String]?

    /// Creates the event.
    public init(raw: String, forwardingNetwork: String, receivedAt: Date, verification: Verification, keyID: String,
                development: Bool, duplicateOf: UUID? = nil, reportedValues: SKANPostbackReceived.ReportedValues? = nil,
                unsignedCheck: SKANPostbackReceived.UnsignedCheck = .unconfirmed, unsignedMismatches: [String]? = nil) {
        self.raw = raw
        self.forwardingNetwork = forwardingNetwork
        self.receivedAt = receivedAt
        self.verification = verification
        self.keyID = keyID
        self.development = development
        self.duplicateOf = duplicateOf
        self.reportedValues = reportedValues
        self.unsignedCheck = unsignedCheck
        self.unsignedMismatches = unsignedMismatches
    }

    enum CodingKeys: String, CodingKey {
        case raw
        case forwardingNetwork = "forwarding_network"
        case receivedAt = "received_at"
        case verification
        case keyID = "key_id"
        case development
        case duplicateOf = "duplicate_of"
        case reportedValues = "reported_values"
        case unsignedCheck = "unsigned_check"
        case unsignedMismatches = "unsigned_mismatches"
    }

    /// A raw text that parses as a JSON object, a network name of 1–200 characters, a key id of
    /// 1–200 characters, reported values in their ranges.
    public func validate() throws(RuleViolation) {
        guard !raw.isEmpty, (try? JSONSerialization.jsonObject(with: Data(raw.utf8))) is [String: Any] else {
            throw RuleViolation(field: "raw", rule: "json_object", message: "The postback text must be a JSON object.")
        }
        try Check.text(forwardingNetwork, "forwarding_network", max: 200)
        try Check.text(keyID, "key_id", max: 200)
        try SKANPostbackReceived(raw: "{}", forwardingNetwork: forwardingNetwork, receivedAt: receivedAt,
                                 reportedValues: reportedValues).validate()
    }
}
