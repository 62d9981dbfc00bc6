import Foundation

/// The device's own user agent text, as its HTTP stack or web view sends it (e.g.
/// `Mozilla/5.0 (iPhone; CPU iPhone OS 17_4_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like
/// Gecko) Mobile/15E148`). Branch's `user_agent` is "the user agent of the device" (Branch v1/open
/// server-to-server guide), and the ledger cannot write that text from ``UserAgentParts`` (its
/// engine and browser versions are not among them), so the app records it as a fact of its own:
/// when it first knows it and again whenever it changes (an OS or app update). A Branch open is
/// sent with the latest one recorded up to its cause; without one, with the app user agent written
/// from the parts.
///
/// A fact apart from the launches rather than a field of ``DeviceContext``: an existing schema
/// version never changes shape (docs/events.md, "Changing an event"), and the text rarely changes
/// between launches.
///
/// Stream: `device-<app>/<device>`. JSON: `{"user_agent": …}`. Personal: `user_agent`.
public struct DeviceUserAgentRecorded: LedgerEvent {
    /// The stored type name (see ``LedgerEvent/eventType``).
    public static let eventType = "DeviceUserAgentRecorded"
    /// The version of this JSON shape.
    public static let schemaVersion = 1
    /// What the event is about.
    public static let category = EventCategory.device
    /// The category of the streams it is appended to.
    public static let streamCategory = StreamCategory.device
    /// The fields the privacy layer encrypts per device: a full user agent is a fingerprint.
    public static let personalFields = ["user_agent"]

    /// Longest user agent accepted, in characters: far above any device's (a few hundred), low
    /// enough that a runaway value is refused at append rather than sent.
    public static let maximumLength = 1_024

    /// The user agent text exactly as the device sends it. Personal; optional only so that an
    /// erased event still decodes (required at append).
    public var userAgent: String?

    /// Creates the event.
    public init(userAgent: String) { self.userAgent = userAgent }

    enum CodingKeys: String, CodingKey {
        case userAgent = "user_agent"
    }

    /// The text is required, 1–``maximumLength`` characters (`non_empty`, `max_1024_characters`),
    /// printable ASCII — an HTTP field value's visible characters and spaces, no control
    /// characters, no line breaks (`printable_ascii`) — and not only spaces (`non_blank`): what is
    /// accepted is exactly what Branch's `user_agent` can carry, so the open is never refused by
    /// its request builder after the fact was accepted.
    public func validate() throws(RuleViolation) {
        let field = CodingKeys.userAgent.stringValue
        let text = try Check.required(userAgent, field)
        if text.isEmpty {
            throw RuleViolation(field: field, rule: "non_empty", message: "The user agent must not be empty.")
        }
        if text.unicodeScalars.count > Self.maximumLength {
            throw RuleViolation(field: field, rule: "max_\(Self.maximumLength)_characters",
                                message: "The user agent is longer than \(Self.maximumLength) characters.")
        }
        guard text.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value < 0x7F }) else {
            throw RuleViolation(field: field, rule: "printable_ascii",
                                message: "A user agent is printable ASCII: letters, digits, punctuation and spaces, no control characters.")
        }
        guard text.unicodeScalars.contains(where: { $0 != " " }) else {
            throw RuleViolation(field: field, rule: "non_blank", message: "The user agent must not be only spaces.")
        }
    }
}
