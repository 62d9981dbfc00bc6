import Foundation

/// The send is parked: a try's outcome is unknown (its worker ended, or its lease ran out, after
/// its `SendAttempted`) and the provider does not tolerate a repeat, so no worker tries it again
/// until an operator settles it (`ledger sends retry` appends ``SendUnparked``, `ledger sends
/// cancel` a `SendCancelled` with reason `operator`). Not terminal. Appended right after the
/// ``SendOutcomeUnknown`` of the try, in the same transaction.
///
/// Stream: `send-<send_id>`.
public struct SendParked: LedgerEvent {
    /// The stored type name (see ``LedgerEvent/eventType``).
    public static let eventType = "SendParked"
    /// The version of this JSON shape.
    public static let schemaVersion = 1
    /// What the event is about.
    public static let category = EventCategory.send
    /// The category of the streams it is appended to.
    public static let streamCategory = StreamCategory.send
    /// The fields the privacy layer encrypts per device (see ``LedgerEvent/personalFields``).
    public static let personalFields = ["detail"]

    /// The try whose outcome is unknown.
    public var attempt: Int
    /// The stable id of the rule that parked it (`singular_outcome_unknown`), so an operator and
    /// `ledger explain` can say why.
    public var rule: String
    /// More words, if useful.
    public var detail: String?

    /// Creates the event.
    public init(attempt: Int, rule: String, detail: String? = nil) {
        self.attempt = attempt
        self.rule = rule
        self.detail = detail
    }

    /// Attempt 1 or more; a rule id; detail of at most 4,096 characters.
    public func validate() throws(RuleViolation) {
        try Check.atLeast(attempt, 1, "attempt")
        try Check.ruleID(rule, "rule")
        try Check.text(detail, "detail", max: 4_096)
    }
}

/// An operator let a parked send be tried again (`ledger sends retry`): it is pending from this
/// event's time on, and the next try may repeat a call that reached the provider. The log keeps
/// who decided and why, since a repeat may be counted twice by the provider.
///
/// Stream: `send-<send_id>`.
public struct SendUnparked: LedgerEvent {
    /// The stored type name (see ``LedgerEvent/eventType``).
    public static let eventType = "SendUnparked"
    /// The version of this JSON shape.
    public static let schemaVersion = 1
    /// What the event is about.
    public static let category = EventCategory.send
    /// The category of the streams it is appended to.
    public static let streamCategory = StreamCategory.send
    /// The fields the privacy layer encrypts per device (see ``LedgerEvent/personalFields``): the
    /// reason is free text, so personal like every free-text field.
    public static let personalFields = ["reason"]

    /// Who decided (an operator's name or account, never a secret).
    public var by: String
    /// Why the send may be repeated (e.g. "checked Singular's dashboard: the event is missing").
    /// Always written (`ledger sends retry` requires it); `nil` only once the device's personal
    /// data is erased.
    public var reason: String?

    /// Creates the event.
    public init(by: String, reason: String?) {
        self.by = by
        self.reason = reason
    }

    /// `by` of 1 to 200 characters; `reason`, when present, of 1 to 4,096.
    public func validate() throws(RuleViolation) {
        try Check.text(by, "by", max: 200)
        try Check.text(reason, "reason", max: 4_096)
    }
}
