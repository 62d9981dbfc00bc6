import Foundation
import LedgerProviders
import Synchronization

/// An app backend's webhook receiver, faked as docs/webhooks.md asks receivers to be:
/// `POST /webhooks/<anything>`, one path per endpoint a test registers with its app and secret
/// (``register(path:app:secret:)``).
///
/// Every delivery is checked first, and a bad one refused and noted (rule in parentheses):
/// method `POST` (`wrong_method`, `405`); a path no endpoint was registered at (`unknown_endpoint`,
/// `404`); `Content-Type: application/json`, a `Ledger-Delivery` UUID, a `Ledger-Timestamp`
/// (`missing_header`, `400`); a `Ledger-Signature` whose `t` is the timestamp and one of whose
/// `v1` values is the HMAC-SHA256 of `"<t>.<body>"` under the endpoint's secret
/// (`signature_mismatch`, `400`, as a receiver refuses a forged delivery); a body whose `app` is
/// the endpoint's app (`other_apps_delivery`, `400`: an app's endpoint must never see another
/// app's event).
///
/// A valid delivery is answered `200` (or by the script) and noted in ``deliveries``. A delivery id
/// accepted twice (`delivered_twice`) or one event accepted under two delivery ids at one endpoint
/// (`event_delivered_under_two_ids`) is an anomaly: each decision reaches a receiver once per
/// delivery id.
public final class FakeWebhookReceiver: FakeProvider {
    /// Which "provider" this fakes.
    public let provider = Provider.webhook
    /// Requests, script, anomalies, delay.
    public let recorder = FakeRecorder()
    /// The paths this fake serves start with this.
    public static let pathPrefix = "/webhooks/"

    /// One delivery the receiver accepted (answered 2xx, scripted or not).
    public struct Delivery: Sendable, Hashable {
        /// The endpoint's path.
        public var path: String
        /// `Ledger-Delivery`.
        public var deliveryID: String
        /// The body's `event_id`.
        public var eventID: String
        /// The body as received.
        public var body: Data
        /// The status the fake answered.
        public var status: Int
    }

    private struct Endpoint {
        var app: String
        var secret: String
    }

    private struct Model {
        var endpoints: [String: Endpoint] = [:]
        var deliveries: [Delivery] = []
    }

    private let model = Mutex(Model())

    init() {}

    /// Serves `path` (under ``pathPrefix``) as `app`'s endpoint whose deliveries are signed with `secret`.
    public func register(path: String, app: String, secret: String) {
        precondition(path.hasPrefix(Self.pathPrefix), "webhook paths start with \(Self.pathPrefix)")
        model.withLock { $0.endpoints[path] = Endpoint(app: app, secret: secret) }
    }

    /// Every delivery accepted, in order (answered 2xx).
    public var deliveries: [Delivery] { model.withLock { $0.deliveries.filter { (200...299).contains($0.status) } } }

    /// Every valid delivery, whatever it was answered (500, 429 … included), in order.
    public var validDeliveries: [Delivery] { model.withLock { $0.deliveries } }

    /// Forgets deliveries; keeps the registered endpoints.
    public func resetModel() { model.withLock { $0.deliveries = [] } }

    func handle(_ request: RecordedRequest) -> FakeReply {
        let refused = check(request) != nil
        let reply = answer(request, check: check, model: { _ in .respond(200, json: #"{"received":true}"#) })
        // Only valid deliveries are noted (a refused one is an anomaly already), dropped connections not at all.
        guard !refused, !reply.drop else { return reply }
        let object = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any]
        let delivery = Delivery(path: request.path, deliveryID: request.headerValue("Ledger-Delivery") ?? "",
                                eventID: object?["event_id"] as? String ?? "", body: request.body, status: reply.status)
        let accepted = (200...299).contains(reply.status)
        let earlier = model.withLock { model -> [Delivery] in
            defer { model.deliveries.append(delivery) }
            return model.deliveries.filter { $0.path == delivery.path && (200...299).contains($0.status) }
        }
        if accepted, earlier.contains(where: { $0.deliveryID == delivery.deliveryID }) {
            note(request, "delivered_twice", "delivery \(delivery.deliveryID) was accepted before")
        }
        if accepted, earlier.contains(where: { $0.eventID == delivery.eventID && $0.deliveryID != delivery.deliveryID }) {
            note(request, "event_delivered_under_two_ids", "event \(delivery.eventID) was accepted under another delivery id")
        }
        return reply
    }

    private func check(_ request: RecordedRequest) -> FakeRefusal? {
        guard request.method == "POST" else { return .wrongMethod(request, expected: "POST", document: "docs/webhooks.md") }
        guard let endpoint = model.withLock({ $0.endpoints[request.path] }) else {
            return FakeRefusal(rule: "unknown_endpoint", detail: "no endpoint registered at \(request.path)",
                               reply: .text(404, "no webhook endpoint here"))
        }
        func refuse(_ rule: String, _ detail: String) -> FakeRefusal {
            FakeRefusal(rule: rule, detail: detail, reply: .respond(400, json: #"{"error":\#(jsonString(rule))}"#))
        }
        guard request.headerValue("Content-Type")?.lowercased().hasPrefix("application/json") == true else {
            return refuse("missing_header", "Content-Type is not application/json")
        }
        guard let delivery = request.headerValue("Ledger-Delivery"), UUID(uuidString: delivery) != nil else {
            return refuse("missing_header", "Ledger-Delivery is not a UUID")
        }
        guard let timestamp = request.headerValue("Ledger-Timestamp").flatMap({ Int64($0) }) else {
            return refuse("missing_header", "Ledger-Timestamp is not a Unix time")
        }
        guard let signature = request.headerValue(WebhookSignature.headerName),
            WebhookSignature.verify(header: signature, body: request.body, secret: endpoint.secret) == timestamp
        else {
            return refuse("signature_mismatch", "no v1 signature of t.body under the endpoint's secret (or t is not Ledger-Timestamp)")
        }
        let object = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any]
        guard let app = object?["app"] as? String, app == endpoint.app else {
            return refuse("other_apps_delivery", "the body's app is \(object?["app"] as? String ?? "-"), the endpoint's \(endpoint.app)")
        }
        return nil
    }
}
