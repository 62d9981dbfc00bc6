import Foundation

/// The worker is about to make one try of a send: appended before the call, so a crash during the
/// call leaves a trace (see ``SendOutcomeUnknown``).
///
/// Stream: `send-<send_id>`.
public struct SendAttempted: LedgerEvent {
    /// The stored type name (see ``LedgerEvent/eventType``).
    public static let eventType = "SendAttempted"
    /// The version of this JSON shape.
    public static let schemaVersion = 1
    /// What the event is about.
    public static let category = EventCategory.send
    /// The category of the streams it is appended to.
    public static let streamCategory = StreamCategory.send
    /// The fields the privacy layer encrypts per device (see ``LedgerEvent/personalFields``).
    public static let personalFields = FieldPath.prefixed("request", RecordedRequest.personalFields)

    /// The try's number, from 1.
    public var attempt: Int
    /// The request exactly as sent, credentials redacted.
    public var request: RecordedRequest

    /// Creates the event.
    public init(attempt: Int, request: RecordedRequest) {
        self.attempt = attempt
        self.request = request
    }

    /// Attempt 1 or more; an http(s) URL; header names and values that HTTP allows; no credential
    /// in clear (`dev_token`, `a`, `branch_key`, `branch_secret`, `Authorization` must read `REDACTED`).
    public func validate() throws(RuleViolation) {
        try Check.atLeast(attempt, 1, "attempt")
        try request.validate(at: "request")
    }
}

/// What a provider answered to one try, verbatim.
///
/// Stream: `send-<send_id>`.
public struct ResponseReceived: LedgerEvent {
    /// The stored type name (see ``LedgerEvent/eventType``).
    public static let eventType = "ResponseReceived"
    /// The version of this JSON shape.
    public static let schemaVersion = 1
    /// What the event is about.
    public static let category = EventCategory.provider
    /// The category of the streams it is appended to.
    public static let streamCategory = StreamCategory.send
    /// The fields the privacy layer encrypts per device (see ``LedgerEvent/personalFields``).
    public static let personalFields = ["body"]

    /// The try this answers.
    public var attempt: Int
    /// The HTTP status.
    public var status: Int
    /// The headers that matter for what happens next (`Content-Type`, `Retry-After`, request ids).
    /// Never `Set-Cookie` or other credentials.
    public var headers: [HTTPHeader]
    /// The body, byte for byte, if there was one. Personal: answers echo device identifiers
    /// (Branch's `randomized_bundle_token`, for one).
    public var body: RecordedBody?
    /// Milliseconds from sending the request to having the whole answer.
    public var latencyMilliseconds: Int64

    /// Creates the event.
    public init(attempt: Int, status: Int, headers: [HTTPHeader], body: RecordedBody?, latencyMilliseconds: Int64) {
        self.attempt = attempt
        self.status = status
        self.headers = headers
        self.body = body
        self.latencyMilliseconds = latencyMilliseconds
    }

    enum CodingKeys: String, CodingKey {
        case attempt, status, headers, body
        case latencyMilliseconds = "latency_ms"
    }

    /// Attempt 1 or more; status 100–599; valid headers; latency zero or more.
    public func validate() throws(RuleViolation) {
        try Check.atLeast(attempt, 1, "attempt")
        try Check.range(status, 100...599, "status")
        for (index, header) in headers.enumerated() {
            try header.validate(at: FieldPath.index("headers", index))
        }
        try body?.validate(at: "body")
        try Check.atLeast(latencyMilliseconds, 0, "latency_ms")
    }
}

/// A try did not settle the send; it will be tried again, not before a time. The rule that decided
/// it is named (`apple_404_too_soon`, `branch_429_back_off`, `server_5xx`, `timeout`).
///
/// Stream: `send-<send_id>`.
public struct RetryScheduled: LedgerEvent {
    /// The stored type name (see ``LedgerEvent/eventType``).
    public static let eventType = "RetryScheduled"
    /// The version of this JSON shape.
    public static let schemaVersion = 1
    /// What the event is about.
    public static let category = EventCategory.send
    /// The category of the streams it is appended to.
    public static let streamCategory = StreamCategory.send
    /// The fields the privacy layer encrypts per device (see ``LedgerEvent/personalFields``).
    public static let personalFields = ["detail"]

    /// The try that did not settle it.
    public var attempt: Int
    /// The retry rule's stable id.
    public var rule: String
    /// More words, if useful (may quote the provider's answer, hence personal).
    public var detail: String?
    /// The next try waits until then.
    public var notBefore: Date
    /// `false` when the try made no call (its request changed while it waited for a slot, its
    /// lease was too short for the call, the rules decided before any call, e.g. a Singular send
    /// waiting for its device's SKAN registration): such a try does not count against the
    /// provider's attempts. Absent (`nil`) when it called.
    public var called: Bool?

    /// Creates the event.
    public init(attempt: Int, rule: String, detail: String? = nil, notBefore: Date, called: Bool? = nil) {
        self.attempt = attempt
        self.rule = rule
        self.detail = detail
        self.notBefore = notBefore
        self.called = called
    }

    enum CodingKeys: String, CodingKey {
        case attempt, rule, detail, called
        case notBefore = "not_before"
    }

    /// Attempt 1 or more; a rule id; detail of at most 4,096 characters.
    public func validate() throws(RuleViolation) {
        try Check.atLeast(attempt, 1, "attempt")
        try Check.ruleID(rule, "rule")
        try Check.text(detail, "detail", max: 4_096)
    }
}
