import Foundation

/// An ad network forwarded a SKAdNetwork postback. Kept as the exact text received, because the
/// signature covers the original values; verification, deduplication on (`transaction-id`,
/// `postback-sequence-index`) and decoding happen in the SKAN projection. Postbacks carry no
/// device identifiers, so nothing here is personal.
///
/// Stream: `skan-<app>-<transaction-id>`.
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

    /// The postback's JSON text, byte for byte as received (a JSON object).
    public var raw: String
    /// The network that forwarded it (for the network-side cross-check of unsigned fields).
    public var forwardingNetwork: String
    /// When the ledger received it (server time; Apple delays postbacks 24–144 h after the fact).
    public var receivedAt: Date

    /// Creates the event.
    public init(raw: String, forwardingNetwork: String, receivedAt: Date) {
        self.raw = raw
        self.forwardingNetwork = forwardingNetwork
        self.receivedAt = receivedAt
    }

    enum CodingKeys: String, CodingKey {
        case raw
        case forwardingNetwork = "forwarding_network"
        case receivedAt = "received_at"
    }

    /// A raw text that parses as a JSON object; a network name of 1–200 characters.
    public func validate() throws(RuleViolation) {
        guard !raw.isEmpty, (try? JSONSerialization.jsonObject(with: Data(raw.utf8))) is [String: Any] else {
            throw RuleViolation(field: "raw", rule: "json_object", message: "The postback text must be a JSON object.")
        }
        try Check.text(forwardingNetwork, "forwarding_network", max: 200)
    }
}
