import Foundation
import LedgerDomain
import Tracing

/// Moving a trace between a process and the log: the W3C `traceparent` of the span current in a
/// task (what an append records in its events' metadata), and the trace context that continues
/// one read back from an event (what the worker's try of a send starts in).
///
/// Both go through the tracer in use (`InstrumentationSystem`): a tracer that propagates W3C
/// Trace Context (swift-otel's) writes and reads `traceparent`; with none (the `NoOpTracer`),
/// there is no current span to record and nothing to continue.
public enum TraceContext {
    /// The header and metadata key of a W3C trace context.
    public static let key = "traceparent"

    /// The `traceparent` of the span current in `context` (the task's by default), when the
    /// tracer in use propagates one and it is valid W3C Trace Context; nil otherwise.
    public static func traceParent(of context: InstrumentationContext? = InstrumentationContext.current) -> TraceParent? {
        guard let context else { return nil }
        var carrier: [String: String] = [:]
        InstrumentationSystem.instrument.inject(context, into: &carrier, using: DictionaryInjector())
        return carrier[key].flatMap(TraceParent.init(header:))
    }

    /// A context whose next span is a child of the span `traceparent` names (the top level when
    /// nil, or when the tracer in use does not read W3C trace contexts).
    public static func continuing(_ traceparent: TraceParent?) -> InstrumentationContext {
        var context = InstrumentationContext.topLevel
        if let traceparent {
            InstrumentationSystem.instrument.extract([key: traceparent.rawValue], into: &context, using: DictionaryExtractor())
        }
        return context
    }

    /// The `traceparent` an event's metadata holds, if any: the metadata is read leniently (the
    /// ledger's own send events carry `{}`), and a value that is not a valid trace context is
    /// treated as none.
    public static func traceParent(inMetadata metadata: Data) -> TraceParent? {
        struct TraceOnly: Decodable {
            var traceparent: String?
        }
        guard let text = (try? JSONDecoder().decode(TraceOnly.self, from: metadata))?.traceparent else { return nil }
        return try? TraceParent(text)
    }
}

/// Writes a trace context into a `[String: String]`.
struct DictionaryInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
}

/// Reads a trace context from a `[String: String]`.
struct DictionaryExtractor: Extractor {
    func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
}
