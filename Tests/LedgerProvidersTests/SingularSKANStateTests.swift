import Foundation
import Testing

@testable import LedgerProviders

@Suite("SKAN 4 windows and device state (Singular SKAdNetwork 4 implementation guide snippet)")
struct SingularSKANStateTests {
    static let first: Int64 = 1_700_000_000
    static func at(_ seconds: Int64) -> Date { Date(timeIntervalSince1970: TimeInterval(first + seconds)) }
    static let hour: Int64 = 3600
    static let day: Int64 = 86_400

    // Singular SKAdNetwork 4 implementation guide, getCurrentSkanWindow:
    // `timeDiff < 48h → 0; < 7d → 1; < 35d → 2; else -1` (strict <).
    @Test(arguments: [
        (47 * hour + 59 * 60 + 59, SKANWindow.p0), (48 * hour, .p1),
        (7 * day - 1, .p1), (7 * day, .p2),
        (35 * day - 1, .p2), (35 * day, .over),
        (0, .p0), (-1, .p0), (10_000 * day, .over),
    ])
    func windowEdges(elapsed: Int64, expected: SKANWindow) {
        #expect(SKANWindow(elapsedSeconds: elapsed) == expected)
        #expect(SKANWindow(firstCallTimestamp: Self.first, now: Self.at(elapsed)) == expected)
        #expect(SKANWindow(firstCall: Self.at(0), now: Self.at(elapsed)) == expected)
    }

    // The snippet stores whole seconds ((NSInteger)timeIntervalSince1970), so fractions are truncated first:
    // first call at +0.9 s and now at 47:59:59.95 are 47:59:59 apart → p0; a first call at 0.0 and now at
    // 48:00:00.0 → p1.
    @Test func windowUsesWholeSecondsLikeTheSnippet() {
        let firstCall = Date(timeIntervalSince1970: TimeInterval(Self.first) + 0.9)
        let justBefore = Date(timeIntervalSince1970: TimeInterval(Self.first + 48 * Self.hour) - 0.05)
        #expect(SKANWindow(firstCall: firstCall, now: justBefore) == .p0)
        #expect(SKANWindow(firstCall: firstCall, now: Self.at(48 * Self.hour)) == .p1)
        #expect(SKANWindow.p2.postbackSequenceIndex == 2)
        #expect(SKANWindow.over.postbackSequenceIndex == nil)
        // Absurd inputs saturate instead of trapping.
        #expect(SKANWindow(firstCallTimestamp: Int64.min, now: .distantFuture) == .over)
        #expect(SKANWindow(firstCallTimestamp: Int64.max, now: .distantPast) == .p0)
    }

    // Singular SKAdNetwork 4 implementation guide, registerAppForAdNetworkAttribution: fine = 0,
    // first and last timestamps set; idempotent.
    @Test func registerIsIdempotent() {
        var state = SKANDeviceState()
        #expect(!state.isRegistered)
        let step1 = state.register(at: Self.at(0))
        #expect(step1)
        #expect(state.conversionValue == 0)
        #expect(state.firstCallTimestamp == Self.first)
        #expect(state.lastCallTimestamp == Self.first)
        #expect(state.previousFineValue == nil)
        #expect(state.p0Coarse == nil)
        let registered = state
        let step2 = state.register(at: Self.at(500))
        #expect(!step2)
        #expect(state == registered)
    }

    // Singular SKAdNetwork 4 implementation guide, valuesHasBeenUpdated: p0 sets fine and coarse
    // keeping the previous ones; lockWindow records the lock timestamp; every update sets the
    // last-call timestamp.
    @Test func p0UpdateSetsFineAndCoarseWithPrevious() throws {
        var state = SKANDeviceState()
        state.register(at: Self.at(0))
        let step3 = try state.applyConversionUpdate(conversionValue: 5, coarseValue: 1, lockWindow: false, at: Self.at(10))
        #expect(step3 == .appliedP0)
        let step4 = try state.applyConversionUpdate(conversionValue: 9, coarseValue: 2, lockWindow: true, at: Self.at(20))
        #expect(step4 == .appliedP0)
        #expect(state.conversionValue == 9)
        #expect(state.previousFineValue == 5)
        #expect(state.p0Coarse == .high)
        #expect(state.p0PreviousCoarse == .medium)
        #expect(state.p0WindowLock == Self.first + 20)
        #expect(state.lastCallTimestamp == Self.first + 20)
        #expect(state.p1Coarse == nil)
    }

    // Singular SKAdNetwork 4 implementation guide, valuesHasBeenUpdated cases 1 and 2: only that
    // window's coarse (with its previous); the fine value is not recorded outside p0.
    @Test func p1AndP2UpdateOnlyCoarse() throws {
        var state = SKANDeviceState()
        state.register(at: Self.at(0))
        _ = try state.applyConversionUpdate(conversionValue: 4, coarseValue: 0, lockWindow: false, at: Self.at(1))
        let step5 = try state.applyConversionUpdate(conversionValue: 60, coarseValue: 1, lockWindow: false, at: Self.at(48 * Self.hour))
        #expect(step5 == .appliedP1)
        let step6 = try state.applyConversionUpdate(conversionValue: 61, coarseValue: 2, lockWindow: true, at: Self.at(3 * Self.day))
        #expect(step6 == .appliedP1)
        #expect(state.conversionValue == 4)
        #expect(state.p0Coarse == .low)
        #expect(state.p1Coarse == .high)
        #expect(state.p1PreviousCoarse == .medium)
        #expect(state.p1WindowLock == Self.first + 3 * Self.day)
        let step7 = try state.applyConversionUpdate(conversionValue: 62, coarseValue: 1, lockWindow: false, at: Self.at(7 * Self.day))
        #expect(step7 == .appliedP2)
        #expect(state.p2Coarse == .medium)
        #expect(state.p2PreviousCoarse == nil)
        #expect(state.lastCallTimestamp == Self.first + 7 * Self.day)
    }

    // Facts beyond the providers' documents: after lockWindow Apple ignores further updates in that
    // window → recorded as ignored (values unchanged; the call itself still moves the last-call
    // timestamp).
    @Test func updatesAfterLockAreIgnored() throws {
        var state = SKANDeviceState()
        state.register(at: Self.at(0))
        _ = try state.applyConversionUpdate(conversionValue: 8, coarseValue: 1, lockWindow: true, at: Self.at(5))
        let step8 = try state.applyConversionUpdate(conversionValue: 9, coarseValue: 2, lockWindow: false, at: Self.at(6))
        #expect(step8 == .ignoredWindowLocked)
        #expect(state.conversionValue == 8)
        #expect(state.p0Coarse == .medium)
        #expect(state.p0WindowLock == Self.first + 5)
        #expect(state.lastCallTimestamp == Self.first + 6)
        // A new window is not locked.
        let step9 = try state.applyConversionUpdate(conversionValue: 9, coarseValue: 2, lockWindow: false, at: Self.at(2 * Self.day))
        #expect(step9 == .appliedP1)
    }

    // Singular SKAdNetwork 4 implementation guide: isSkanWindowOver → nothing updates after 35
    // days; and registration comes first.
    @Test func windowOverAndUnregistered() throws {
        var state = SKANDeviceState()
        expectProviderError(field: "skan_first_call_to_skadnetwork_timestamp", rule: "not_registered") {
            _ = try state.applyConversionUpdate(conversionValue: 1, coarseValue: nil, lockWindow: false, at: Self.at(0))
        }
        state.register(at: Self.at(0))
        let before = state
        let step10 = try state.applyConversionUpdate(conversionValue: 1, coarseValue: 1, lockWindow: true, at: Self.at(35 * Self.day))
        #expect(step10 == .ignoredWindowOver)
        #expect(state == before)
    }

    // Singular SKAdNetwork 4 implementation guide, validateValues: "Illegal values" outside 0..63
    // (fine) and 0..2 (coarse).
    @Test func illegalValuesAreRejected() {
        var state = SKANDeviceState()
        state.register(at: Self.at(0))
        for fine in [-1, 64, Int.max] {
            expectProviderError(field: "conversion_value", rule: "range_0_63") {
                _ = try state.applyConversionUpdate(conversionValue: fine, coarseValue: nil, lockWindow: false, at: Self.at(1))
            }
        }
        for coarse in [-1, 3] {
            expectProviderError(field: "skan_updated_coarse_value", rule: "range_0_2") {
                _ = try state.applyConversionUpdate(conversionValue: 1, coarseValue: coarse, lockWindow: false, at: Self.at(1))
            }
        }
        expectProviderError(field: "postback_sequence_index", rule: "range_0_2") {
            _ = try SKANConversionUpdate(conversionValue: 1, postbackSequenceIndex: 3)
        }
        #expect(state.conversionValue == 0)
    }

    // Singular SKAdNetwork 4 implementation guide, updateRevenue: zero amounts and missing currency
    // ignored; IAP and ad monetization apart; per window too; after 35 d (or before registration)
    // the total only (the snippet's `case -1`).
    @Test func revenueRules() throws {
        var state = SKANDeviceState()
        let step11 = try state.addRevenue(Decimal(string: "0.5")!, currency: "USD", isAdMonetization: false, at: Self.at(0))
        #expect(step11 == .addedToTotalOnly)
        state.register(at: Self.at(0))
        let step12 = try state.addRevenue(0, currency: "USD", isAdMonetization: false, at: Self.at(1))
        #expect(step12 == .ignoredZeroAmount)
        let step13 = try state.addRevenue(1, currency: nil, isAdMonetization: false, at: Self.at(1))
        #expect(step13 == .ignoredMissingCurrency)
        let step14 = try state.addRevenue(1, currency: " ", isAdMonetization: false, at: Self.at(1))
        #expect(step14 == .ignoredMissingCurrency)
        let step15 = try state.addRevenue(Decimal(string: "9.99")!, currency: "USD", isAdMonetization: false, at: Self.at(1))
        #expect(step15 == .addedInP0)
        let step16 = try state.addRevenue(Decimal(string: "0.01")!, currency: "USD", isAdMonetization: false, at: Self.at(2))
        #expect(step16 == .addedInP0)
        let step17 = try state.addRevenue(Decimal(string: "15.53")!, currency: "KRW", isAdMonetization: true, at: Self.at(2 * Self.day))
        #expect(step17 == .addedInP1)
        let step18 = try state.addRevenue(Decimal(string: "1.2")!, currency: "USD", isAdMonetization: true, at: Self.at(8 * Self.day))
        #expect(step18 == .addedInP2)
        let step19 = try state.addRevenue(3, currency: "USD", isAdMonetization: false, at: Self.at(40 * Self.day))
        #expect(step19 == .addedToTotalOnly)
        #expect(state.totalRevenueByCurrency == ["USD": Decimal(string: "13.5")!])
        #expect(state.totalAdMonRevenueByCurrency == ["KRW": Decimal(string: "15.53")!, "USD": Decimal(string: "1.2")!])
        #expect(state.p0TotalIAPRevenue == ["USD": 10])  // exact: 9.99 + 0.01, no float drift
        #expect(state.p1TotalAdMonRevenue == ["KRW": Decimal(string: "15.53")!])
        #expect(state.p2TotalAdMonRevenue == ["USD": Decimal(string: "1.2")!])
        #expect(state.p1TotalIAPRevenue.isEmpty && state.p2TotalIAPRevenue.isEmpty && state.p0TotalAdMonRevenue.isEmpty)
        expectProviderError(field: "revenue", rule: "not_a_number") {
            _ = try state.addRevenue(Decimal.nan, currency: "USD", isAdMonetization: false, at: Self.at(3))
        }
        // Event-id deduplication is the event store's job (a retried event must not call this twice).
    }

    // Singular SKAdNetwork 4 implementation guide, getSkanDetails example. It is internally
    // inconsistent: the last call (167831134) is 59,808 s *before* the first (167890942), and
    // revenue totals exist with no per-window revenue. Our functions reach exactly its values only
    // this way: revenue before registration (totals only, the snippet's `case -1`), p0 updates
    // ending in a lock, two p1 updates, then a call whose clock is behind the first call (p0 by the
    // snippet's rule, ignored because p0 is locked, but moving the last-call timestamp).
    @Test func getSkanDetailsExampleReplays() throws {
        let first: Int64 = 167_890_942
        func at(_ t: Int64) -> Date { Date(timeIntervalSince1970: TimeInterval(t)) }
        var state = SKANDeviceState()
        let step20 = try state.addRevenue(Decimal(string: "1.2")!, currency: "USD", isAdMonetization: false, at: at(first - 100))
        #expect(step20 == .addedToTotalOnly)
        let step21 = try state.addRevenue(Decimal(string: "0.8")!, currency: "USD", isAdMonetization: true, at: at(first - 100))
        #expect(step21 == .addedToTotalOnly)
        let step22 = state.register(at: at(first))
        #expect(step22)
        let step23 = try state.applyConversionUpdate(conversionValue: 2, coarseValue: 0, lockWindow: false, at: at(first))
        #expect(step23 == .appliedP0)
        let step24 = try state.applyConversionUpdate(conversionValue: 3, coarseValue: 0, lockWindow: true, at: at(first))
        #expect(step24 == .appliedP0)
        let step25 = try state.applyConversionUpdate(conversionValue: 3, coarseValue: 0, lockWindow: false, at: at(first + 48 * 3600))
        #expect(step25 == .appliedP1)
        let step26 = try state.applyConversionUpdate(conversionValue: 3, coarseValue: 1, lockWindow: false, at: at(first + 48 * 3600 + 1))
        #expect(step26 == .appliedP1)
        let step27 = try state.applyConversionUpdate(conversionValue: 3, coarseValue: 0, lockWindow: false, at: at(167_831_134))
        #expect(step27 == .ignoredWindowLocked)

        // The example, with its `nil` entries as absent keys (setValue:nil removes a key).
        let example = """
            {
            "skan_current_conversion_value": 3,
            "prev_fine_value": 2,
            "skan_first_call_to_skadnetwork_timestamp": 167890942,
            "skan_last_call_to_skadnetwork_timestamp": 167831134,
            "skan_total_revenue_by_currency": { "USD": 1.2 },
            "skan_total_admon_revenue_by_currency": { "USD": 0.8 },
            "p0_coarse": 0,
            "p1_coarse": 1,
            "p0_window_lock": 167890942,
            "p0_prev_coarse_value": 0,
            "p1_prev_coarse_value": 0
            }
            """
        #expect(json(try JSONEncoder().encode(state)) == json(example))
        #expect(try JSONDecoder().decode(SKANDeviceState.self, from: Data(example.utf8)) == state)
    }
}
