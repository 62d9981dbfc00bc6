import Foundation

/// The decision to make one server-to-server call. The only thing that ever causes a send: it is
/// appended once, in the transaction of the fact that caused it, so replaying history (which never
/// appends) never sends again.
///
/// Stream: `send-<send_id>` (its first event).
public struct SendRequested: LedgerEvent {
    /// The stored type name (see ``LedgerEvent/eventType``).
    public static let eventType = "SendRequested"
    /// The version of this JSON shape.
    public static let schemaVersion = 1
    /// What the event is about.
    public static let category = EventCategory.send
    /// The category of the streams it is appended to.
    public static let streamCategory = StreamCategory.send
    /// The fields the privacy layer encrypts per device (see ``LedgerEvent/personalFields``).
    public static let personalFields: [String] = []

    /// The send's id; its stream is `send-<send_id>`.
    public var sendID: UUID
    /// Who is called.
    public var provider: SendProvider
    /// Which call (must be one the provider offers, see ``SendKind/providers``).
    public var kind: SendKind
    /// The event that caused the send (a `FirstOpen`, an `AttributionDecided`, …): the request is
    /// built from it.
    public var causeEventID: UUID
    /// The stream of the causing event.
    public var causeStreamID: StreamID
    /// The device the send is about (`device-…`): for per-device ordering (Branch opens wait for
    /// the previous open's answer) and for cancelling a device's sends on erasure.
    public var deviceStreamID: StreamID
    /// A key that is the same for the same intended call, so the same send is never requested
    /// twice (for example `google:first_open:<cause event id>`). Never holds personal data.
    public var idempotencyKey: String
    /// Not to be sent before this time (Apple's AdServices token is often not ready right away).
    public var notBefore: Date?
    /// Inputs the request builder needs beyond the cause event, by name: Google cross-network's
    /// `ad_event_id` and `attributed`, Google's `app_event_type`, Singular's event name `n`.
    /// Keys are lowercase `[a-z0-9_]`, values at most 1,024 characters; never personal data.
    public var parameters: [String: String]?

    /// Creates the event.
    public init(
        sendID: UUID, provider: SendProvider, kind: SendKind, causeEventID: UUID, causeStreamID: StreamID,
        deviceStreamID: StreamID, idempotencyKey: String, notBefore: Date? = nil, parameters: [String: String]? = nil
    ) {
        self.sendID = sendID
        self.provider = provider
        self.kind = kind
        self.causeEventID = causeEventID
        self.causeStreamID = causeStreamID
        self.deviceStreamID = deviceStreamID
        self.idempotencyKey = idempotencyKey
        self.notBefore = notBefore
        self.parameters = parameters
    }

    enum CodingKeys: String, CodingKey {
        case sendID = "send_id"
        case provider, kind
        case causeEventID = "cause_event_id"
        case causeStreamID = "cause_stream_id"
        case deviceStreamID = "device_stream_id"
        case idempotencyKey = "idempotency_key"
        case notBefore = "not_before"
        case parameters
    }

    /// The kind is one the provider offers; the device stream is a `device-…` stream; the key is
    /// 1–256 characters; parameter names are `[a-z0-9_]{1,64}`.
    public func validate() throws(RuleViolation) {
        guard kind.providers.contains(provider) else {
            throw RuleViolation(
                field: "kind", rule: "kind_offered_by_provider",
                message: "The provider '\(provider.rawValue)' has no '\(kind.rawValue)' call.")
        }
        try Check.streamCategory(deviceStreamID, .device, "device_stream_id")
        try Check.text(idempotencyKey, "idempotency_key")
        for (name, value) in parameters ?? [:] {
            let field = FieldPath.key("parameters", name)
            let validName = !name.isEmpty && name.count <= 64 && name.unicodeScalars.allSatisfy { scalar in
                ("a"..."z").contains(scalar) || ("0"..."9").contains(scalar) || scalar == "_"
            }
            guard validName else {
                throw RuleViolation(field: field, rule: "parameter_name", message: "A parameter name is 1–64 characters of a–z, 0–9 and '_'.")
            }
            try Check.text(value, field, max: 1_024)
        }
    }
}

/// The providers the ledger sends to.
public enum SendProvider: String, LedgerEnum {
    /// Google Ads app conversion tracking.
    case google
    /// Apple AdServices attribution API.
    case appleAdServices = "apple_adservices"
    /// Branch server-to-server API.
    case branch
    /// Singular's SKAN conversion-value API.
    case singular
    /// An app's own webhook endpoints (docs/webhooks.md): the ledger pushes its decisions to the
    /// app's backend through the same queue, retries and log as a provider call.
    case webhook
}

/// Which call of a provider a send makes.
public enum SendKind: String, LedgerEnum {
    /// Google conversion (`first_open`, `session_start`, in-app events).
    case conversion
    /// Google cross-network attribution report (`attributed` 0/1 for an ad event).
    case crossNetwork = "cross_network"
    /// Apple AdServices token lookup.
    case tokenLookup = "token_lookup"
    /// Branch `v1/open`.
    case open
    /// Singular conversion-value request.
    case conversionValue = "conversion_value"
    /// One signed webhook delivery to one of the app's endpoints.
    case delivery

    /// The providers that offer this call.
    public var providers: Set<SendProvider> {
        switch self {
        case .conversion, .crossNetwork: [.google]
        case .tokenLookup: [.appleAdServices]
        case .open: [.branch]
        case .conversionValue: [.singular]
        case .delivery: [.webhook]
        }
    }
}
