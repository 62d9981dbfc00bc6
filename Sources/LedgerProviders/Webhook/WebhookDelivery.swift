import Foundation

/// One webhook delivery's request (docs/webhooks.md, "Payload" and "Headers"): `POST` of a
/// versioned JSON body to the endpoint, signed with ``WebhookSignature``. Pure: the time and the
/// ids come from the caller.
///
/// The body is the same on every try of a delivery (it is built from the recorded event alone); the
/// `Ledger-Delivery` header is the delivery's id, the same on every retry, so a receiver that saw
/// it already answers 2xx and ignores it. The `Ledger-Timestamp` is the try's, and the signature
/// covers it.
public struct WebhookDelivery: Sendable, Hashable {
    /// The payload's version: `version` in the body. A change that removes or retypes a field
    /// takes a new version; new fields may appear within one.
    public static let payloadVersion = 1
    /// The header carrying the delivery's id.
    public static let deliveryHeader = "Ledger-Delivery"
    /// The header carrying the try's Unix time in seconds (also signed as `t`).
    public static let timestampHeader = "Ledger-Timestamp"
    /// The header carrying the event kind (`decision`).
    public static let eventKindHeader = "Ledger-Event-Kind"

    /// The delivery's id (the send's id): the same on every retry.
    public var deliveryID: UUID
    /// What kind of event is delivered.
    public var kind: WebhookEventKind
    /// The app the event was recorded for.
    public var app: String
    /// The app's own device id.
    public var device: String
    /// The delivered event's id.
    public var eventID: UUID
    /// The delivered event's position in the log.
    public var position: Int64
    /// When the ledger recorded the event.
    public var recordedAt: Date
    /// The event as the log stores it (a JSON object): for a decision, every field of
    /// `AttributionDecided`.
    public var event: Data

    /// A delivery of one recorded event.
    public init(deliveryID: UUID, kind: WebhookEventKind, app: String, device: String, eventID: UUID, position: Int64,
                recordedAt: Date, event: Data) {
        self.deliveryID = deliveryID
        self.kind = kind
        self.app = app
        self.device = device
        self.eventID = eventID
        self.position = position
        self.recordedAt = recordedAt
        self.event = event
    }

    /// The body: `{"version":1,"delivery_id":…,"event_kind":…,"app":…,"device":…,"event_id":…,
    /// "position":…,"recorded_at":…,"<kind>":<the event>}`, keys in that order.
    public var body: Data {
        let recorded = recordedAt.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        var text = "{\"version\":\(Self.payloadVersion)"
        text += ",\"delivery_id\":" + ProviderJSON.string(deliveryID.uuidString.lowercased()).serialized
        text += ",\"event_kind\":" + ProviderJSON.string(kind.rawValue).serialized
        text += ",\"app\":" + ProviderJSON.string(app).serialized
        text += ",\"device\":" + ProviderJSON.string(device).serialized
        text += ",\"event_id\":" + ProviderJSON.string(eventID.uuidString.lowercased()).serialized
        text += ",\"position\":\(position)"
        text += ",\"recorded_at\":" + ProviderJSON.string(recorded).serialized
        text += ",\"\(kind.rawValue)\":"
        var body = Data(text.utf8)
        body.append(event)
        body.append(contentsOf: Array("}".utf8))
        return body
    }

    /// The request to `endpoint` for a try at `now`, signed with each of its secrets. The stored
    /// form (``ProviderRequest/redacted()``) keeps the body and replaces the signature.
    public func request(to endpoint: WebhookEndpoint, now: Date) -> ProviderRequest {
        let body = body
        let timestamp = Int64(now.timeIntervalSince1970.rounded(.down))
        let pathAndQuery = endpoint.path.split(separator: "?", maxSplits: 1).map(String.init)
        var query: [QueryItem] = []
        if pathAndQuery.count == 2 {
            for item in pathAndQuery[1].split(separator: "&") {
                let pair = item.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
                query.append(QueryItem(pair[0], pair.count == 2 ? pair[1] : ""))
            }
        }
        return ProviderRequest(
            provider: .webhook, method: .post, scheme: endpoint.scheme, host: endpoint.host, port: endpoint.port,
            path: pathAndQuery[0], query: query,
            headers: [
                Header("Content-Type", "application/json"),
                Header("User-Agent", "AttributionLedger-Webhooks/\(Self.payloadVersion)"),
                Header(Self.deliveryHeader, deliveryID.uuidString.lowercased()),
                Header(Self.eventKindHeader, kind.rawValue),
                Header(Self.timestampHeader, String(timestamp)),
                Header(WebhookSignature.headerName, WebhookSignature.header(secrets: endpoint.secrets, timestamp: timestamp, body: body)),
            ],
            body: body, sensitiveFields: [.header(WebhookSignature.headerName)])
    }
}
