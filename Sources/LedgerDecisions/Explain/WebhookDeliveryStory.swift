import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerStore

/// One webhook delivery of a decision as its send's stream tells it (docs/webhooks.md): which
/// endpoint, how many calls, and where it stands. `ledger explain` shows it under its decision,
/// so a support engineer sees whether the app's backend got the decision without reading the log.
public struct WebhookDeliveryStory: Sendable, Codable, Hashable {
    /// Where a delivery stands.
    public enum State: String, Sendable, Codable, Hashable {
        /// Requested, not tried yet.
        case requested
        /// A call failed and another is due (``WebhookDeliveryStory/rule`` says why, ``WebhookDeliveryStory/at`` when).
        case retrying
        /// The receiver answered 2xx.
        case delivered
        /// Dead: refused, or its budget spent (``WebhookDeliveryStory/rule``).
        case failed
        /// Cancelled (the device was erased, or an operator cancelled it).
        case cancelled
    }

    /// The delivery's id (the send's id, the `Ledger-Delivery` header).
    public var deliveryID: UUID
    /// The endpoint's name.
    public var endpoint: String
    /// The decision delivered.
    public var decisionID: UUID
    /// Calls recorded (`SendAttempted`).
    public var calls: Int
    /// Where it stands.
    public var state: State
    /// The rule of the latest retry or of the failure.
    public var rule: String?
    /// When the next call is due (retrying) or when it ended.
    public var at: Date?

    /// The event types ``fold(_:)`` reads from a device's history.
    public static let eventTypes = [
        SendRequested.eventType, SendAttempted.eventType, RetryScheduled.eventType,
        SendSucceeded.eventType, SendFailed.eventType, SendCancelled.eventType,
    ]

    /// The device's webhook deliveries, oldest first, from its history (``eventTypes`` in log
    /// order, as `readHistory(of: .deviceHistory(…))` returns it; other events are skipped).
    public static func fold(_ events: [RecordedEvent]) -> [WebhookDeliveryStory] {
        let decoder = LedgerJSON.makeDecoder()
        var stories: [String: WebhookDeliveryStory] = [:]
        var order: [String] = []
        for event in events where event.streamID.hasPrefix(StreamCategory.send.rawValue + "-") {
            let stream = event.streamID
            if event.type == SendRequested.eventType {
                guard let request = try? decoder.decode(SendRequested.self, from: event.data), request.provider == .webhook else { continue }
                stories[stream] = WebhookDeliveryStory(
                    deliveryID: request.sendID, endpoint: request.parameters?[ProviderSendRules.webhookEndpointParameter] ?? "-",
                    decisionID: request.causeEventID, calls: 0, state: .requested)
                order.append(stream)
                continue
            }
            guard var story = stories[stream] else { continue }
            switch event.type {
            case SendAttempted.eventType:
                story.calls += 1
            case RetryScheduled.eventType:
                let retry = try? decoder.decode(RetryScheduled.self, from: event.data)
                if retry?.called == false { story.calls = max(0, story.calls - 1) }
                story.state = .retrying
                story.rule = retry?.rule
                story.at = retry?.notBefore
            case SendSucceeded.eventType:
                story.state = .delivered
                story.rule = nil
                story.at = event.occurredAt
            case SendFailed.eventType:
                story.state = .failed
                story.rule = (try? decoder.decode(SendFailed.self, from: event.data))?.rule
                story.at = event.occurredAt
            case SendCancelled.eventType:
                story.state = .cancelled
                story.at = event.occurredAt
            default:
                break
            }
            stories[stream] = story
        }
        return order.compactMap { stories[$0] }
    }

    /// `webhook backend: delivered after 2 calls at …`, for `ledger explain`.
    public var line: String {
        let calls = "\(calls) call\(calls == 1 ? "" : "s")"
        let when = at.map { $0.formatted(.iso8601) } ?? "-"
        let id = deliveryID.uuidString.lowercased()
        switch state {
        case .requested: return "webhook \(endpoint): requested, not called yet (delivery \(id))"
        case .retrying: return "webhook \(endpoint): \(calls), next due \(when) (\(rule ?? "-")) (delivery \(id))"
        case .delivered: return "webhook \(endpoint): delivered after \(calls) at \(when) (delivery \(id))"
        case .failed: return "webhook \(endpoint): failed for good after \(calls) at \(when) (\(rule ?? "-")) (delivery \(id))"
        case .cancelled: return "webhook \(endpoint): cancelled at \(when) after \(calls) (delivery \(id))"
        }
    }
}
