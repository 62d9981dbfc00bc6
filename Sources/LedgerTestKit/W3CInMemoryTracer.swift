import Foundation
import InMemoryTracing
import Instrumentation
import LedgerDomain
import Tracing

/// swift-distributed-tracing's `InMemoryTracer`, propagating as production tracers do: through a
/// W3C Trace Context `traceparent` (the in-memory tracer's own carriers use keys of their own).
///
/// Trace ids are 32 and span ids 16 random lowercase hex digits, so every span context it injects
/// is a valid `traceparent`, and a test sees exactly the trace ids and parent links an OTLP
/// exporter would send. Scope it to one test with `withTracer(_:_:)`: spans of other tests in the
/// same process go to their own tracers.
public struct W3CInMemoryTracer: Tracer {
    /// The tracer that keeps the spans.
    public let spans: InMemoryTracer

    /// A tracer with random W3C-shaped ids.
    public init() {
        spans = InMemoryTracer(idGenerator: InMemoryTracer.IDGenerator(
            nextTraceID: { Self.randomHex(bytes: 16) }, nextSpanID: { Self.randomHex(bytes: 8) }))
    }

    /// Every span ended so far.
    public var finishedSpans: [FinishedInMemorySpan] { spans.finishedSpans }

    /// Starts a span in the in-memory tracer.
    public func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> InstrumentationContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> InMemorySpan {
        spans.startSpan(operationName, context: context(), ofKind: kind, at: instant(), function: function, file: fileID, line: line)
    }

    /// Counts the flush, as the in-memory tracer does.
    public func forceFlush() { spans.forceFlush() }

    /// Writes the context's span as `traceparent` (sampled).
    public func inject<Carrier, Inject: Injector>(
        _ context: InstrumentationContext, into carrier: inout Carrier, using injector: Inject
    ) where Inject.Carrier == Carrier {
        guard let span = context.inMemorySpanContext else { return }
        injector.inject("00-\(span.traceID)-\(span.spanID)-01", forKey: "traceparent", into: &carrier)
    }

    /// Reads a valid `traceparent` (W3C Trace Context) into the context, as the remote parent of
    /// the next span; an invalid one is ignored, as a W3C propagator ignores it (the next span
    /// starts a trace of its own).
    public func extract<Carrier, Extract: Extractor>(
        _ carrier: Carrier, into context: inout InstrumentationContext, using extractor: Extract
    ) where Extract.Carrier == Carrier {
        guard let header = extractor.extract(key: "traceparent", from: carrier), let parent = TraceParent(header: header) else {
            return
        }
        context.inMemorySpanContext = InMemorySpanContext(
            traceID: String(parent.traceID), spanID: String(parent.parentID), parentSpanID: nil)
    }

    private static func randomHex(bytes: Int) -> String {
        (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }
}
