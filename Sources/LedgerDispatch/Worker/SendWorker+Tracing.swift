import LedgerDomain
import LedgerProviders
import LedgerStore
import Tracing

extension SendWorker {
    /// Runs one try of a send in a client span, `send try`, that continues the trace recorded on
    /// the send's cause (its metadata's `traceparent`): one trace runs from the request that
    /// recorded the fact, through the append, to each try of each send the fact caused. A cause
    /// recorded outside any trace (or missing) starts a trace of its own.
    ///
    /// Attributes: `ledger.send.provider`, `ledger.send.kind`, `ledger.send.attempt`, then
    /// (``noteOutcome(_:answer:disposition:)``) `ledger.send.outcome`, `ledger.send.rule` and
    /// `http.response.status_code`. Never a device, a request, an answer or a credential.
    func traced(_ claim: SendQueue.Claim, cause: RecordedEvent?, _ body: (any Span) async -> Void) async {
        let parent = TraceContext.continuing(cause.flatMap { TraceContext.traceParent(inMetadata: $0.metadata) })
        let span = startSpan("send try", context: parent, ofKind: .client)
        defer { span.end() }
        span.attributes["ledger.send.provider"] = claim.request.provider.rawValue
        span.attributes["ledger.send.kind"] = claim.request.kind.rawValue
        span.attributes["ledger.send.attempt"] = claim.attempt
        await InstrumentationContext.$current.withValue(span.context) { await body(span) }
    }

    /// Notes a try's outcome on its span: `succeeded`, `retry` or `failed` with the rule that
    /// decided; the span's status is an error when the send failed for good, when the call got no
    /// answer, or when the provider answered 5xx.
    static func noteOutcome(_ span: (any Span)?, answer: SendAnswer?, disposition: SendDisposition) {
        guard let span else { return }
        var failed = false
        switch disposition {
        case .succeeded:
            span.attributes["ledger.send.outcome"] = "succeeded"
        case .retry(_, let rule):
            span.attributes["ledger.send.outcome"] = "retry"
            span.attributes["ledger.send.rule"] = rule
        case .failed(let rule, _):
            span.attributes["ledger.send.outcome"] = "failed"
            span.attributes["ledger.send.rule"] = rule
            failed = true
        }
        switch answer {
        case .response(let response)?:
            span.attributes["http.response.status_code"] = response.response.status
            if response.response.status >= 500 { failed = true }
        case .failure(let error)?:
            span.attributes["error.type"] = error.code.description
            failed = true
        case nil:
            break
        }
        if failed { span.setStatus(SpanStatus(code: .error)) }
    }
}
