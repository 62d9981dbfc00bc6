import Foundation

/// The send is settled: the provider took it (Google 200, Apple 200 with or without attribution,
/// Branch 200, Singular `ok`). Terminal.
///
/// Stream: `send-<send_id>`.
public struct SendSucceeded: LedgerEvent {
    /// The stored type name (see ``LedgerEvent/eventType``).
    public static let eventType = "SendSucceeded"
    public static let endsStream = true
    /// The version of this JSON shape.
    public static let schemaVersion = 1
    /// What the event is about.
    public static let category = EventCategory.send
    /// The category of the streams it is appended to.
    public static let streamCategory = StreamCategory.send
    /// The fields the privacy layer encrypts per device (see ``LedgerEvent/personalFields``).
    public static let personalFields: [String] = []

    /// The try that succeeded.
    public var attempt: Int

    /// Creates the event.
    public init(attempt: Int) { self.attempt = attempt }

    /// Attempt 1 or more.
    public func validate() throws(RuleViolation) { try Check.atLeast(attempt, 1, "attempt") }
}

/// The send failed for good (Apple 400, a token past its 24 h, an unknown Google error code,
/// retries exhausted). Terminal.
///
/// Stream: `send-<send_id>`.
public struct SendFailed: LedgerEvent {
    /// The stored type name (see ``LedgerEvent/eventType``).
    public static let eventType = "SendFailed"
    public static let endsStream = true
    /// The version of this JSON shape.
    public static let schemaVersion = 1
    /// What the event is about.
    public static let category = EventCategory.send
    /// The category of the streams it is appended to.
    public static let streamCategory = StreamCategory.send
    /// The fields the privacy layer encrypts per device (see ``LedgerEvent/personalFields``).
    public static let personalFields = ["detail"]

    /// The last try, or `nil` when the send failed before any (e.g. its token expired while waiting).
    public var attempt: Int?
    /// The stable id of the rule that made it terminal (`apple_400_invalid_token`,
    /// `retries_exhausted`, `google_error_unknown`).
    public var rule: String
    /// More words, e.g. the provider's error codes (may quote the answer, hence personal).
    public var detail: String?

    /// Creates the event.
    public init(attempt: Int?, rule: String, detail: String? = nil) {
        self.attempt = attempt
        self.rule = rule
        self.detail = detail
    }

    /// Attempt 1 or more when given; a rule id; detail of at most 4,096 characters.
    public func validate() throws(RuleViolation) {
        if let attempt { try Check.atLeast(attempt, 1, "attempt") }
        try Check.ruleID(rule, "rule")
        try Check.text(detail, "detail", max: 4_096)
    }
}

/// A try whose worker vanished (its lease expired) without recording an answer: the call may or
/// may not have reached the provider. Appended by the worker that takes the send up again, before
/// it decides to retry or give up.
///
/// Stream: `send-<send_id>`.
public struct SendOutcomeUnknown: LedgerEvent {
    /// The stored type name (see ``LedgerEvent/eventType``).
    public static let eventType = "SendOutcomeUnknown"
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
    /// When the lost worker's lease ran out.
    public var leaseExpiredAt: Date
    /// More words, if useful.
    public var detail: String?

    /// Creates the event.
    public init(attempt: Int, leaseExpiredAt: Date, detail: String? = nil) {
        self.attempt = attempt
        self.leaseExpiredAt = leaseExpiredAt
        self.detail = detail
    }

    enum CodingKeys: String, CodingKey {
        case attempt
        case leaseExpiredAt = "lease_expired_at"
        case detail
    }

    /// Attempt 1 or more; detail of at most 4,096 characters.
    public func validate() throws(RuleViolation) {
        try Check.atLeast(attempt, 1, "attempt")
        try Check.text(detail, "detail", max: 4_096)
    }
}

/// The send will not be made (or tried again): the device was erased, the request was superseded,
/// its deadline passed. Terminal.
///
/// Stream: `send-<send_id>`.
public struct SendCancelled: LedgerEvent {
    /// The stored type name (see ``LedgerEvent/eventType``).
    public static let eventType = "SendCancelled"
    public static let endsStream = true
    /// The version of this JSON shape.
    public static let schemaVersion = 1
    /// What the event is about.
    public static let category = EventCategory.send
    /// The category of the streams it is appended to.
    public static let streamCategory = StreamCategory.send
    /// The fields the privacy layer encrypts per device (see ``LedgerEvent/personalFields``).
    public static let personalFields = ["detail"]

    /// The reason's stable id: `erasure`, `superseded`, `deadline_passed`, `operator`.
    public var reason: String
    /// More words, if useful (free text, hence personal like every `detail`).
    public var detail: String?

    /// Creates the event.
    public init(reason: String, detail: String? = nil) {
        self.reason = reason
        self.detail = detail
    }

    /// A reason id; detail of at most 4,096 characters.
    public func validate() throws(RuleViolation) {
        try Check.ruleID(reason, "reason")
        try Check.text(detail, "detail", max: 4_096)
    }
}
