import Foundation
import LedgerDomain
import LedgerFakeProviders
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import Testing

/// Apple AdServices attribution API, "Attribution payload descriptions": the document marks no
/// field of an `attribution: true` payload required. `keywordId` is absent with search match,
/// `adId` before iOS 15.2, the dates outside detailed payloads; Apple may leave out others too
/// (`orgId`, `conversionType`, `countryOrRegion`). Such a payload is accepted: the attribution
/// rule needs only `attribution` itself (and uses a date and the campaign when present).
extension DecisionEndToEndTests {
    @Test func anAppleAnswerWithoutOptionalFieldsStillWinsTheInstall() async throws {
        try await Self.withRig { rig in
            let clickDate = ISO8601DateFormatter().string(from: rig.start.addingTimeInterval(-10 * 60))
            rig.fakes.apple.register(token: Self.token, outcome: .custom("""
                {"attribution":true,"campaignId":542370539,"adGroupId":542317095,"claimType":"Click","clickDate":"\(clickDate)"}
                """))
            rig.fakes.google.setDefaultAnswer(.negative)
            _ = try await rig.install()
            try await rig.drainAll()
            let lookups = try await rig.store.pool.query("""
                SELECT event_type FROM events WHERE stream_id IN
                  (SELECT stream_id FROM events WHERE event_type = 'SendRequested' AND data->>'provider' = 'apple_adservices')
                ORDER BY position
                """).map { try $0.decode(String.self, at: 0) }
            #expect(lookups.last == SendSucceeded.eventType, "\(lookups)")
            try await rig.decide(now: Date())
            let decision = try #require(try await rig.decisions().first)
            #expect(decision.winner?.source == .appleAdServices, "\(decision.candidates)")
            #expect(decision.winner?.campaignID == "542370539")
            #expect(decision.winner?.interaction == .click)
        }
    }
}
