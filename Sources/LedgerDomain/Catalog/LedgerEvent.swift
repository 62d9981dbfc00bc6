import Foundation

/// One kind of fact in the ledger: a Swift value with a stable JSON encoding.
///
/// Each conforming type is one (``eventType``, ``schemaVersion``) pair of the ``EventCatalog``.
/// Its JSON is the event's `data` column; who appended it, when, and why live in the envelope
/// (``EventMetadata``, `occurred_at`, `recorded_at`).
///
/// A type's encoding never changes meaning once events of it are stored: a change is a new schema
/// version (a new type with the same ``eventType``), and the old type stays to read old events.
public protocol LedgerEvent: Codable, Sendable, Hashable {
    /// The stored type name, PascalCase (`FirstOpen`). Matches the store's
    /// `^[A-Za-z][A-Za-z0-9_.]{0,127}$`.
    static var eventType: String { get }
    /// The version of this type's JSON shape, from 1.
    static var schemaVersion: Int { get }
    /// What the event is about: a device fact, a send, a provider's answer, a decision, privacy, a
    /// SKAN postback.
    static var category: EventCategory { get }
    /// The category of the streams events of this type are appended to.
    static var streamCategory: StreamCategory { get }
    /// Dotted JSON key paths (relative to the event's data, no array indices) of the fields that
    /// hold personal data: advertising and vendor identifiers (IDFA, IDFV, GAID, ANDROID_ID, OAID),
    /// IP addresses, user agents, custom user ids, click identifiers and URLs that carry them,
    /// store transaction ids, app-defined free-form data, and recorded HTTP traffic that contains
    /// any of these. The whole value at a path is personal, whatever its JSON type.
    ///
    /// The privacy layer encrypts exactly these, per device. Every personal field is optional in
    /// the Swift type (an erased event still decodes); ``validate()`` requires the ones an append
    /// needs.
    static var personalFields: [String] { get }
    /// Whether an event of this type ends its stream: at most one such event per stream, a rule
    /// the database enforces too (a send's outcome: succeeded, failed or cancelled).
    static var endsStream: Bool { get }

    /// Checks the domain rules a decoded value must meet before it is appended (ranges, formats,
    /// fields required at append time, consistency between fields).
    /// - Throws: a ``RuleViolation`` whose `field` is the dotted path of the offending field.
    func validate() throws(RuleViolation)
}

extension LedgerEvent {
    /// Most events do not end their stream.
    public static var endsStream: Bool { false }
}

/// What an event is about. Used to group the catalog and to route reads; independent of the stream
/// an event goes to (see ``LedgerEvent/streamCategory``).
public enum EventCategory: String, LedgerEnum {
    /// A fact reported by (or about) one device: an install, a session, a purchase, a token.
    case device
    /// A step of the send lifecycle decided or done by the ledger: requested, attempted, retried,
    /// succeeded, failed, cancelled.
    case send
    /// What a provider answered, verbatim.
    case provider
    /// An attribution decision.
    case decision
    /// Privacy: erasure.
    case privacy
    /// A SKAdNetwork postback forwarded by an ad network.
    case skanPostback = "skan_postback"
}
