import Foundation

/// Who appended an event and why: the envelope's `metadata` column.
///
/// The event's own data says what happened; metadata ties it into the flow — which request or
/// install it belongs to (`correlation_id`), which event caused it (`causation_id`), and which part
/// of the system wrote it (`actor`), and the trace it was appended in (`traceparent`). It holds no
/// personal data and is never encrypted.
public struct EventMetadata: Codable, Sendable, Hashable {
    /// The name used for metadata in ``EventValidationError/eventType``.
    public static let typeName = "EventMetadata"

    /// Groups every event of one flow (for instance, one install and all the sends and decisions
    /// it led to), so an auditor can pull the whole story. Usually the id of the first event of the
    /// flow.
    public var correlationID: UUID?
    /// The id of the event that directly caused this one (a `SendRequested` caused by a
    /// `FirstOpen`, a `SendAttempted` caused by its `SendRequested`). `nil` for facts from outside.
    public var causationID: UUID?
    /// Who appended the event: a service name (`checkout-backend`), `worker`, `cli`,
    /// `decision-rules`, `http-api`. 1–100 characters, no control characters; never a person.
    public var actor: String
    /// The app the event belongs to; set for every app-scoped event, which is all of them today.
    /// Kept here because send streams (`send-<uuid>`) do not name the app.
    public var appID: AppID?
    /// The W3C trace the event was appended in (the request's, or the span current at the
    /// append), so that a trace and the log can be joined, and so that the worker's try of a send
    /// this event caused continues the same trace. Absent when the append ran outside any trace.
    public var traceparent: TraceParent?

    /// Creates metadata.
    public init(correlationID: UUID? = nil, causationID: UUID? = nil, actor: String, appID: AppID? = nil,
                traceparent: TraceParent? = nil) {
        self.correlationID = correlationID
        self.causationID = causationID
        self.actor = actor
        self.appID = appID
        self.traceparent = traceparent
    }

    enum CodingKeys: String, CodingKey {
        case correlationID = "correlation_id"
        case causationID = "causation_id"
        case actor
        case appID = "app_id"
        case traceparent
    }

    /// The envelope's rules: `actor` is 1–100 characters without control characters.
    public func validate() throws(RuleViolation) {
        try Check.text(actor, "actor", max: 100)
    }
}
