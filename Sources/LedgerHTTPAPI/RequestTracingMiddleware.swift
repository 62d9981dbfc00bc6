import HTTPTypes
import Hummingbird
import LedgerDomain
import LedgerStore
import Tracing

/// A server span per request (swift-distributed-tracing), continuing the caller's trace from its
/// W3C `traceparent` header when the tracer in use reads one.
///
/// Named and described as OpenTelemetry's HTTP server conventions ask: `{method} {http.route}`
/// (`POST /v1/apps/{app}/events`), `http.request.method`, `http.route`, `url.scheme` and
/// `http.response.status_code`; the status is an error for a 5xx answer only (a 4xx is the
/// caller's). Hummingbird's own `TracingMiddleware` is not used: it records the request's path,
/// query and user agent, and a path here names a device.
struct RequestTracingMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext

    /// The header of a W3C trace context.
    static let traceparentField = HTTPField.Name(TraceContext.key)!

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var trace = InstrumentationContext.current ?? .topLevel
        InstrumentationSystem.instrument.extract(request.headers, into: &trace, using: HTTPFieldsExtractor())
        let method = request.method.rawValue
        let span = startSpan(method, context: trace, ofKind: .server)
        defer { span.end() }
        span.attributes["http.request.method"] = method
        span.attributes["url.scheme"] = "http"
        do {
            let response = try await InstrumentationContext.$current.withValue(span.context) { try await next(request, context) }
            Self.finish(span, method: method, route: context.endpointPath, status: Int(response.status.code))
            return response
        } catch {
            let status = Int((error as? any HTTPResponseError)?.status.code ?? 500)
            Self.finish(span, method: method, route: context.endpointPath, status: status)
            if status >= 500 { span.recordError(error) }
            throw error
        }
    }

    /// Names the span after its route, once routing found one, and records the answer's status.
    static func finish(_ span: any Span, method: String, route: String?, status: Int) {
        if let route {
            span.operationName = "\(method) \(route)"
            span.attributes["http.route"] = route
        }
        span.attributes["http.response.status_code"] = status
        if status >= 500 { span.setStatus(SpanStatus(code: .error)) }
    }

    /// The request's `traceparent`, when it carries exactly one and it is valid W3C Trace Context;
    /// nil otherwise (an invalid header is ignored, never stored, and never fails the request).
    static func traceParent(of request: Request) -> TraceParent? {
        let values = request.headers[values: traceparentField]
        guard values.count == 1 else { return nil }
        return TraceParent(header: values[0])
    }
}

/// Reads a trace context from a request's header fields: a field given more than once is none
/// (W3C Trace Context: a request with several `traceparent` headers carries no valid one).
struct HTTPFieldsExtractor: Extractor {
    func extract(key: String, from carrier: HTTPFields) -> String? {
        guard let name = HTTPField.Name(key) else { return nil }
        let values = carrier[values: name]
        return values.count == 1 ? values[0] : nil
    }
}
