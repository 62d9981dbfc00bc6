import Foundation
@testable import AttributionLedger
import LedgerDomain
import LedgerFakeProviders
import LedgerFolds
import LedgerProjections
import LedgerTestKit
import Testing

@testable import LedgerDecisions

/// Google App Conversion Tracking API: the answer's `attributed` says whether Google claims the
/// conversion, and only "when Google answers affirmatively" must a cross-network attribution
/// request follow. An answer with `attributed: false` may still list the ad events Google saw;
/// they are neither candidates for the decision nor obligations.
extension DecisionEndToEndTests {
    /// Google answers the install and a later purchase `attributed: false`, each with an ad event
    /// an hour before the conversion (later than Apple's click a day before). Apple wins the
    /// install; Google is offered no candidate, owes no report and gets no cross-network request
    /// (the fake Google refuses a report of an ad event it did not claim).
    @Test func anUnattributedGoogleAnswerClaimsNothing() async throws {
        try await Self.withRig { rig in
            rig.fakes.apple.register(token: Self.token, outcome: Self.appleClick(minutesBeforeInstall: 24 * 60, install: rig.start))
            rig.fakes.google.setDefaultAnswer(.unattributed())
            _ = try await rig.install()
            try await rig.drainAll()
            try await rig.decide(now: Date())
            try await rig.drainAll()
            let decision = try #require(try await rig.decisions().first)
            #expect(decision.winner?.source == .appleAdServices)
            #expect(!decision.candidates.contains { $0.touch.source == .google }, "\(decision.candidates)")

            let money = try Money(amount: "4.99", currency: try CurrencyCode("USD"))
            _ = try await rig.recorder.record(
                RevenueRecorded(device: Self.iosDevice(), revenue: money, kind: .iap, transactionID: "t-unattributed"),
                app: try AppID(Self.app), device: try DeviceID("dev1"), id: UUID(), occurredAt: rig.start.addingTimeInterval(600),
                metadata: EventMetadata(actor: "test"), now: Date())
            try await rig.drainAll()
            #expect(rig.fakes.google.conversionRequests.count == 2)
            let obligations = try await rig.decider.obligations.state(of: Self.device, store: rig.store)
            #expect(obligations.obligations.isEmpty, "\(obligations.obligations.keys)")
            #expect(obligations.affirmativeAnswers == 0)
            try await rig.decider.decidePending(now: Date())
            try await rig.drainAll()
            #expect(rig.crossNetworkCalls().isEmpty)
        }
    }
}
