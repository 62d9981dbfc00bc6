import Foundation
import LedgerDomain
import LedgerFolds
import LedgerProviders
import Testing

/// The SKAN 4 projection's rules (Singular SKAdNetwork 4 implementation guide and
/// `provider-rules.md`, "Singular SKAdNetwork 4"), checked by replaying histories through the
/// reducer.
@Suite("SKAN device state (Singular SKAdNetwork 4 implementation guide)")
struct SKANReducerTests {
    let reducer = SKANDeviceReducer()
    let start = History.epoch
    let hour: TimeInterval = 3_600
    let day: TimeInterval = 86_400

    func registered() throws -> History {
        var history = History()
        try history.add(SKANRegistered(skanVersion: "4.0"), at: start)
        return history
    }

    func revenue(_ amount: String, _ currency: String, _ kind: RevenueKind = .iap, transaction: String) throws -> RevenueRecorded {
        RevenueRecorded(device: iosDevice(), revenue: try Money(amount: amount, currency: try CurrencyCode(currency)),
                        kind: kind, transactionID: transaction)
    }

    // Singular SKAdNetwork 4 implementation guide, registerAppForAdNetworkAttribution: fine value
    // 0, first and last call set; registering again changes nothing.
    @Test func registrationSetsFineZeroAndTimestampsOnce() throws {
        var history = try registered()
        try history.add(SKANRegistered(), at: start.addingTimeInterval(hour))
        let state = try history.replay(reducer)
        #expect(state.skan.conversionValue == 0)
        #expect(state.skan.firstCallTimestamp == Int64(start.timeIntervalSince1970))
        #expect(state.skan.lastCallTimestamp == Int64(start.timeIntervalSince1970))
    }

    // Singular SKAdNetwork 4 implementation guide, getCurrentSkanWindow: p0 is [0, 48 h) with a
    // strict `<`: 47:59:59 is p0, 48:00:00 is p1.
    @Test func the48HourEdge() throws {
        var before = try registered()
        try before.add(SKANConversionValueUpdated(fineValue: 5, coarseValue: .medium), at: start.addingTimeInterval(48 * hour - 1))
        let p0 = try before.replay(reducer).skan
        #expect(p0.conversionValue == 5 && p0.p0Coarse == .medium && p0.p1Coarse == nil)
        #expect(p0.previousFineValue == 0)

        var at = try registered()
        try at.add(SKANConversionValueUpdated(fineValue: 5, coarseValue: .medium), at: start.addingTimeInterval(48 * hour))
        let p1 = try at.replay(reducer).skan
        // p1: only the coarse value counts; the fine value stays as registered.
        #expect(p1.conversionValue == 0 && p1.p0Coarse == nil && p1.p1Coarse == .medium)
    }

    // Singular SKAdNetwork 4 implementation guide: p1 is [48 h, 7 d), p2 is [7 d, 35 d).
    @Test func theSevenDayEdge() throws {
        var history = try registered()
        try history.add(SKANConversionValueUpdated(coarseValue: .low), at: start.addingTimeInterval(7 * day - 1))
        try history.add(SKANConversionValueUpdated(coarseValue: .high), at: start.addingTimeInterval(7 * day))
        let skan = try history.replay(reducer).skan
        #expect(skan.p1Coarse == .low)
        #expect(skan.p2Coarse == .high)
        #expect(skan.p2PreviousCoarse == nil)
    }

    // Singular SKAdNetwork 4 implementation guide: after 35 days the SKAN window is over and
    // nothing updates (isSkanWindowOver).
    @Test func theThirtyFiveDayEdge() throws {
        var history = try registered()
        try history.add(SKANConversionValueUpdated(coarseValue: .low), at: start.addingTimeInterval(35 * day - 1))
        try history.add(SKANConversionValueUpdated(coarseValue: .high), at: start.addingTimeInterval(35 * day))
        try history.add(try revenue("3.00", "USD", transaction: "t-late"), at: start.addingTimeInterval(35 * day))
        let state = try history.replay(reducer)
        #expect(state.skan.p2Coarse == .low)
        #expect(state.skan.lastCallTimestamp == Int64(start.addingTimeInterval(35 * day - 1).timeIntervalSince1970))
        #expect(state.updatesIgnored["ignored_window_over"] == 1)
        // Revenue after the window still counts in the overall total (snippet: `case -1`), in no window.
        #expect(state.skan.totalRevenueByCurrency["USD"] == 3)
        #expect(state.skan.p2TotalIAPRevenue.isEmpty)
    }

    // Singular SKAdNetwork 4 implementation guide valuesHasBeenUpdated: lockWindow records the
    // lock; Apple ignores later updates in that window.
    @Test func aLockedWindowIgnoresLaterUpdates() throws {
        var history = try registered()
        try history.add(SKANConversionValueUpdated(fineValue: 9, coarseValue: .low, lockWindow: true), at: start.addingTimeInterval(hour))
        try history.add(SKANConversionValueUpdated(fineValue: 12, coarseValue: .high), at: start.addingTimeInterval(2 * hour))
        try history.add(SKANConversionValueUpdated(coarseValue: .medium), at: start.addingTimeInterval(3 * day))
        let state = try history.replay(reducer)
        #expect(state.skan.conversionValue == 9)
        #expect(state.skan.p0Coarse == .low)
        #expect(state.skan.p0WindowLock == Int64(start.addingTimeInterval(hour).timeIntervalSince1970))
        #expect(state.updatesIgnored["ignored_window_locked"] == 1)
        // p1 is a new window: not locked.
        #expect(state.skan.p1Coarse == .medium)
    }

    // Singular SKAdNetwork 4 implementation guide: p0 keeps the previous fine and coarse values
    // (prev_fine_value, p0_prev_coarse_value).
    @Test func previousValuesAreKept() throws {
        var history = try registered()
        try history.add(SKANConversionValueUpdated(fineValue: 3, coarseValue: .low), at: start.addingTimeInterval(hour))
        try history.add(SKANConversionValueUpdated(fineValue: 8, coarseValue: .high), at: start.addingTimeInterval(2 * hour))
        let skan = try history.replay(reducer).skan
        #expect(skan.conversionValue == 8 && skan.previousFineValue == 3)
        #expect(skan.p0Coarse == .high && skan.p0PreviousCoarse == .low)
    }

    // Singular SKAdNetwork 4 implementation guide updateRevenue: totals by currency, IAP and ad
    // monetization apart, overall and per window; zero amounts ignored; a retried event (same store
    // transaction) never counts twice.
    @Test func revenueByCurrencyKindAndWindow() throws {
        var history = try registered()
        try history.add(try revenue("15.53", "KRW", transaction: "t1"), at: start.addingTimeInterval(hour))
        try history.add(try revenue("15.53", "KRW", transaction: "t1"), at: start.addingTimeInterval(hour + 5))
        try history.add(try revenue("0", "USD", transaction: "t0"), at: start.addingTimeInterval(hour))
        try history.add(try revenue("1.20", "USD", .adMonetization, transaction: "ad1"), at: start.addingTimeInterval(3 * day))
        try history.add(try revenue("9.99", "USD", transaction: "t2"), at: start.addingTimeInterval(8 * day))
        let state = try history.replay(reducer)
        let skan = state.skan
        #expect(skan.totalRevenueByCurrency == ["KRW": Decimal(string: "15.53")!, "USD": Decimal(string: "9.99")!])
        #expect(skan.totalAdMonRevenueByCurrency == ["USD": Decimal(string: "1.2")!])
        #expect(skan.p0TotalIAPRevenue == ["KRW": Decimal(string: "15.53")!])
        #expect(skan.p1TotalAdMonRevenue == ["USD": Decimal(string: "1.2")!])
        #expect(skan.p2TotalIAPRevenue == ["USD": Decimal(string: "9.99")!])
        #expect(state.revenueNotCounted["duplicate_transaction"] == 1)
        #expect(state.revenueNotCounted["ignored_zero_amount"] == 1)
    }

    // Singular SKAdNetwork 4 implementation guide: an update before registration is refused and
    // counted, not applied.
    @Test func updatesBeforeRegistrationAreRefused() throws {
        var history = History()
        try history.add(SKANConversionValueUpdated(fineValue: 4), at: start)
        let state = try history.replay(reducer)
        #expect(state.skan.conversionValue == nil)
        #expect(state.updatesIgnored["not_registered"] == 1)
    }

    // Singular SKAdNetwork 4 implementation guide: Singular's answer is applied as the snippet
    // applies it (valuesHasBeenUpdated:), "Illegal values" are refused, and the app echoing the
    // same values is a confirmation, not a second update.
    @Test func singularAnswersUpdateTheStateOnce() throws {
        var history = try registered()
        let session = try history.add(SessionStarted(device: iosDevice()), at: start.addingTimeInterval(hour))
        let send = try history.requestSend(.singular, .conversionValue, cause: session, at: start.addingTimeInterval(hour))
        try history.attempt(send, number: 1, status: 200,
                            body: #"{"conversion_value":7,"skan_updated_coarse_value":1,"postback_sequence_index":0,"skan_updated_lock_window_value":false,"status":"ok"}"#,
                            at: start.addingTimeInterval(hour + 1))
        try history.add(SKANConversionValueUpdated(fineValue: 7, coarseValue: .medium), at: start.addingTimeInterval(hour + 2))
        let bad = try history.requestSend(.singular, .conversionValue, cause: session, at: start.addingTimeInterval(hour + 3))
        try history.attempt(bad, number: 1, status: 200, body: #"{"conversion_value":70,"status":"ok"}"#,
                            at: start.addingTimeInterval(hour + 4))
        let state = try history.replay(reducer)
        #expect(state.skan.conversionValue == 7 && state.skan.previousFineValue == 0)
        #expect(state.skan.p0Coarse == .medium)
        #expect(state.lastSingularAnswer?.confirmedByDevice == true)
        #expect(state.updatesApplied == 1)
        #expect(state.singularErrors["unparseable_answer"] == 1)
    }

    // provider-rules (Singular SKAN 4): "in p0, fine and coarse are set (previous values kept as
    // prev)". An app update with a coarse value only sets no fine value, so the previous fine value
    // stays the one before the last fine value.
    @Test func aCoarseOnlyUpdateInP0KeepsThePreviousFineValue() throws {
        var history = try registered()
        try history.add(SKANConversionValueUpdated(fineValue: 5, coarseValue: .low), at: start.addingTimeInterval(hour))
        try history.add(SKANConversionValueUpdated(fineValue: 9, coarseValue: .low), at: start.addingTimeInterval(2 * hour))
        try history.add(SKANConversionValueUpdated(coarseValue: .high), at: start.addingTimeInterval(3 * hour))
        let state = try history.replay(reducer)
        #expect(state.skan.conversionValue == 9 && state.skan.previousFineValue == 5)
        #expect(state.skan.p0Coarse == .high && state.updatesApplied == 3)
    }

    // The Singular SKAdNetwork 4 implementation guide's snippet reads `conversion_value` first and
    // looks at `status` only without one: the projection applies what the worker's classifier
    // counted as a success.
    @Test func aSingularValueCountsWhateverTheStatus() throws {
        var history = try registered()
        let session = try history.add(SessionStarted(device: iosDevice()), at: start.addingTimeInterval(hour))
        let send = try history.requestSend(.singular, .conversionValue, cause: session, at: start.addingTimeInterval(hour))
        try history.attempt(send, number: 1, status: 200, body: #"{"conversion_value":5,"skan_updated_coarse_value":2,"status":"warning"}"#,
                            at: start.addingTimeInterval(hour + 1))
        let refused = try history.requestSend(.singular, .conversionValue, cause: session, at: start.addingTimeInterval(hour + 2))
        try history.attempt(refused, number: 1, status: 200, body: #"{"status":"error","reason":"Conversion model not found"}"#,
                            at: start.addingTimeInterval(hour + 3))
        let state = try history.replay(reducer)
        #expect(state.skan.conversionValue == 5 && state.skan.p0Coarse == .high)
        #expect(state.singularErrors == ["Conversion model not found": 1])
    }

    // Singular SKAdNetwork 4 implementation guide, "Exemplos de pedidos": the projection's state
    // yields the conversion-value request. The example's own timestamps (first = last call) cannot
    // hold p1/p2 coarse values, so this history starts at the curl example's first call
    // (1510040127) and reaches the example's values.
    @Test func replayYieldsTheGuidesExampleQuery() throws {
        let first = Date(timeIntervalSince1970: 1_510_040_127)
        var history = History()
        try history.add(SKANRegistered(), at: first)
        try history.add(try revenue("9.99", "USD", transaction: "t1"), at: first.addingTimeInterval(60))
        try history.add(try revenue("1.2", "USD", .adMonetization, transaction: "a1"), at: first.addingTimeInterval(61))
        try history.add(SKANConversionValueUpdated(fineValue: 7), at: first.addingTimeInterval(62))
        try history.add(SKANConversionValueUpdated(coarseValue: .low), at: first.addingTimeInterval(3 * day))
        try history.add(SKANConversionValueUpdated(coarseValue: .medium), at: first.addingTimeInterval(8 * day))
        let state = try history.replay(reducer).skan
        let request = SingularConversionValueRequest(
            osVersion: "16.1", bundleID: "com.singular.app", appVersion: "1.2.3", event: .session,
            idfa: "DFC5A647-9043-4699-B2A5-76F03A97064B", idfv: "21DB6612-09B3-4ECC-84AC-B353B0AF1334", state: state)
        let built = try request.build(with: SingularConfiguration(sdkKey: "sdk_key_here"),
                                      at: first.addingTimeInterval(8 * day + 60))
        var items: [String: String] = [:]
        for item in built.query where items[item.name] == nil { items[item.name] = item.value }
        #expect(built.path == "/api/v2/conversion_value" && items["a"] == "sdk_key_here" && items["n"] == "__SESSION__")
        #expect(items["skan_current_conversion_value"] == "7")
        #expect(items["p1_coarse"] == "0")
        #expect(items["p2_coarse"] == "1")
        #expect(items["skan_total_revenue_by_currency"] == #"{"USD":9.99}"#)
        #expect(items["skan_total_admon_revenue_by_currency"] == #"{"USD":1.2}"#)
        #expect(items["skan_first_call_to_skadnetwork_timestamp"] == "1510040127")
        #expect(items["skan_last_call_to_skadnetwork_timestamp"] == String(Int(first.addingTimeInterval(8 * day).timeIntervalSince1970)))
    }
}
