import Foundation
import LedgerDomain
import LedgerProviders
import LedgerStore

/// An app's webhook endpoints (docs/webhooks.md): a delivery is a send like a provider call, built
/// here from its cause event and judged by ``WebhookClassifier``.
extension ProviderSendRules {
    /// The send parameter naming the endpoint a delivery goes to (its name, never its URL).
    public static let webhookEndpointParameter = "endpoint"
    /// The send parameter naming the delivered event's kind (``WebhookEventKind``).
    public static let webhookEventKindParameter = "event_kind"

    /// The delivery's request: the cause event, as the log recorded it, in the versioned payload,
    /// signed with the endpoint's secrets at this try's time.
    /// - Throws: ``DispatchError`` `webhook_endpoint_not_configured` when the app no longer has the
    ///   endpoint (a reload removed it), `cause_not_supported` for a cause its kind does not name.
    func webhookRequest(_ context: SendContext) throws(DispatchError) -> ProviderRequest {
        let endpoint = try webhookEndpoint(of: context)
        guard let kindText = context.send.parameters?[Self.webhookEventKindParameter],
            let kind = WebhookEventKind(rawValue: kindText)
        else {
            throw .unbuildable(rule: "webhook_event_kind_unknown", detail: "the delivery names no event kind this ledger knows")
        }
        switch (kind, try context.decodedCauses.cause(context.cause)) {
        case (.decision, .decision): break
        case (_, let cause): throw Self.notSupported(cause, context.send)
        }
        guard let tenant = context.send.deviceStreamID.tenant else {
            throw .unbuildable(rule: "device_stream_without_app", detail: "a delivery's device stream names its app")
        }
        let delivery = WebhookDelivery(
            deliveryID: context.send.sendID, kind: kind, app: tenant.app.rawValue, device: tenant.local,
            eventID: context.cause.id, position: context.cause.position, recordedAt: context.cause.recordedAt,
            event: context.cause.data)
        return delivery.request(to: endpoint, now: context.now)
    }

    /// A receiver's answer, by ``WebhookClassifier`` and the endpoint's retry budget (the default
    /// budget when the endpoint is gone: the next try's build then fails it).
    func classifyWebhook(_ answer: SendAnswer, context: SendContext) -> SendDisposition {
        let policy = (try? webhookEndpoint(of: context))?.policy ?? WebhookRetryPolicy()
        let webhookAnswer: WebhookClassifier.Answer
        switch answer {
        case .response(let response): webhookAnswer = .response(response.response)
        case .failure(let error) where error.code == .timeout: webhookAnswer = .timedOut
        case .failure: webhookAnswer = .transportFailed
        }
        return WebhookClassifier.classify(webhookAnswer, call: context.call, eventRecordedAt: context.cause.recordedAt,
                                          now: context.now, policy: policy)
    }

    private func webhookEndpoint(of context: SendContext) throws(DispatchError) -> WebhookEndpoint {
        guard let name = context.send.parameters?[Self.webhookEndpointParameter], let endpoint = webhooks[name] else {
            throw .unbuildable(rule: "webhook_endpoint_not_configured",
                detail: "the app has no webhook endpoint named \(context.send.parameters?[Self.webhookEndpointParameter] ?? "-") now")
        }
        return endpoint
    }
}
