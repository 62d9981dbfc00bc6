import Foundation
import InMemoryTracing
import LedgerDomain
import LedgerFakeProviders
import LedgerStore
import LedgerTestKit
import Testing
import Tracing

extension DecisionEndToEndTests {
    /// A decision is one span; its `AttributionDecided` records that span's trace, and the Google
    /// cross-network report it requests ("the consumer MUST send a cross-network attribution
    /// request after deciding", Google App Conversion Tracking API) is tried as a child of it.
    @Test func theDecisionAndTheCrossNetworkReportItCausedShareOneTrace() async throws {
        let tracer = W3CInMemoryTracer()
        try await withTracer(tracer) {
            try await Self.withRig { rig in
                rig.fakes.apple.register(token: Self.token, outcome: Self.appleClick(minutesBeforeInstall: 24 * 60, install: rig.start))
                _ = try await rig.install()
                try await rig.drainAll()
                #expect(try await rig.decide(now: Date()).count == 1)
                try await rig.drainAll()

                let decisionSpan = try #require(tracer.finishedSpans.first { $0.operationName == "attribution decision" })
                #expect(decisionSpan.attributes.get("ledger.decision.trigger") == "install")
                #expect(decisionSpan.attributes.get("ledger.decision.winner") == "google")
                let stored = try #require(try await rig.store.readStream("decision-app1/dev1").first)
                #expect(TraceContext.traceParent(inMetadata: stored.metadata)?.rawValue
                    == "00-\(decisionSpan.spanContext.traceID)-\(decisionSpan.spanContext.spanID)-01")
                let report = try #require(tracer.finishedSpans.first {
                    $0.operationName == "send try" && $0.attributes.get("ledger.send.kind") == "cross_network"
                })
                #expect(report.spanContext.traceID == decisionSpan.spanContext.traceID)
                #expect(report.spanContext.parentSpanID == decisionSpan.spanContext.spanID)
                #expect(report.attributes.get("ledger.send.outcome") == "succeeded")
            }
        }
    }
}
