import Foundation

extension SKANDeviceState {
    /// `registerAppForAdNetworkAttribution` (Singular SKAdNetwork 4 implementation guide): on the
    /// app's first launch, set the fine value to 0 and the first and last call timestamps to `now`.
    /// Idempotent: a registered device is left alone
    /// (`if (getFirstSkanCallTimestamp != 0) return;`). Returns whether it registered.
    ///
    /// Like the snippet (`valuesHasBeenUpdated:@(0) coarseValue:nil`), the p0 update keeps the
    /// previous values: `prev_fine_value` and `p0_prev_coarse_value` take what was there (nothing,
    /// for a new device), and `p0_coarse` is cleared.
    @discardableResult
    public mutating func register(at now: Date) -> Bool {
        guard !isRegistered else { return false }
        let seconds = BranchSingularHTTP.unixSeconds(now)
        firstCallTimestamp = seconds
        lastCallTimestamp = seconds
        previousFineValue = conversionValue
        conversionValue = 0
        p0PreviousCoarse = p0Coarse
        p0Coarse = nil
        return true
    }

    /// `updateRevenue:andCurrency:isAdMonetization:` (Singular SKAdNetwork 4 implementation guide):
    /// adds `amount` to the device's total by currency — IAP and ad monetization apart — and to the
    /// total of the window open at `now`. Call it *before* ``applyConversionUpdate(_:at:)`` for the
    /// same revenue event ("revenue tracking must precede conversion value updates").
    ///
    /// A zero amount or a missing (or blank) currency is ignored, as the snippet's
    /// `if (amount == 0 || !currency) return;`. Negative amounts (refunds) are added, as the
    /// snippet adds them. Currencies are kept exactly as given (no case folding).
    ///
    /// Not done here, on purpose: a retried event must not count its revenue twice ("In case of
    /// retrying an event, avoid calling this method"); the event store deduplicates by event id
    /// before the projection calls this.
    public mutating func addRevenue(
        _ amount: Decimal, currency: String?, isAdMonetization: Bool, at now: Date
    ) throws(ProviderError) -> SKANRevenueOutcome {
        guard !amount.isNaN else {
            throw SingularRules.fail(.invalidRequest, "revenue", "not_a_number", "A revenue amount must be a number.")
        }
        if amount == 0 { return .ignoredZeroAmount }
        guard let currency, !BranchSingularHTTP.isBlank(currency) else { return .ignoredMissingCurrency }
        if isAdMonetization {
            totalAdMonRevenueByCurrency[currency, default: 0] += amount
        } else {
            totalRevenueByCurrency[currency, default: 0] += amount
        }
        switch (window(at: now), isAdMonetization) {
        case (.p0, false): p0TotalIAPRevenue[currency, default: 0] += amount
        case (.p1, false): p1TotalIAPRevenue[currency, default: 0] += amount
        case (.p2, false): p2TotalIAPRevenue[currency, default: 0] += amount
        case (.p0, true): p0TotalAdMonRevenue[currency, default: 0] += amount
        case (.p1, true): p1TotalAdMonRevenue[currency, default: 0] += amount
        case (.p2, true): p2TotalAdMonRevenue[currency, default: 0] += amount
        case (.over, _): return .addedToTotalOnly
        }
        switch window(at: now) {
        case .p0: return .addedInP0
        case .p1: return .addedInP1
        default: return .addedInP2
        }
    }

    /// `valuesHasBeenUpdated:coarseValue:lockWindow:` (Singular SKAdNetwork 4 implementation
    /// guide): records Singular's new values in the window open at `now`.
    ///
    /// - p0: fine and coarse are set; the old ones become `prev_fine_value` / `p0_prev_coarse_value`
    ///   (a missing coarse clears `p0_coarse`, as `setValue:nil` does).
    /// - p1 / p2: only that window's coarse is set, with its previous kept; the fine value only
    ///   counts in the first window and is not recorded.
    /// - `lockWindow` records that window's lock timestamp.
    /// - Every recorded update sets `skan_last_call_to_skadnetwork_timestamp`.
    /// - Over (35 d or more): nothing changes, as the snippet never asks Singular then.
    /// - A window already locked: Apple ignores further updates for it, so the values stay and only
    ///   the last-call timestamp moves (the snippet would overwrite them; see the report).
    ///
    /// Throws `not_registered` when ``register(at:)`` never ran (events must come in order, a
    /// session first), and "Illegal values" (`range_0_63` / `range_0_2`) for a decoded update out
    /// of range.
    public mutating func applyConversionUpdate(
        _ update: SKANConversionUpdate, at now: Date
    ) throws(ProviderError) -> SKANUpdateOutcome {
        let checked = try SKANConversionUpdate(
            conversionValue: update.conversionValue, coarseValue: update.coarseValue?.rawValue,
            lockWindow: update.lockWindow, postbackSequenceIndex: update.postbackSequenceIndex)
        guard isRegistered else {
            throw SingularRules.fail(
                .invalidRequest, "skan_first_call_to_skadnetwork_timestamp", "not_registered",
                "The device never registered for SKAdNetwork (registerAppForAdNetworkAttribution comes first).")
        }
        let window = window(at: now)
        let seconds = BranchSingularHTTP.unixSeconds(now)
        if window == .over { return .ignoredWindowOver }
        if windowLock(window) != nil {
            lastCallTimestamp = seconds
            return .ignoredWindowLocked
        }
        let lock: Int64? = checked.lockWindow ? seconds : nil
        let outcome: SKANUpdateOutcome
        switch window {
        case .p0:
            previousFineValue = conversionValue
            conversionValue = checked.conversionValue
            p0PreviousCoarse = p0Coarse
            p0Coarse = checked.coarseValue
            p0WindowLock = lock ?? p0WindowLock
            outcome = .appliedP0
        case .p1:
            p1PreviousCoarse = p1Coarse
            p1Coarse = checked.coarseValue
            p1WindowLock = lock ?? p1WindowLock
            outcome = .appliedP1
        default:
            p2PreviousCoarse = p2Coarse
            p2Coarse = checked.coarseValue
            p2WindowLock = lock ?? p2WindowLock
            outcome = .appliedP2
        }
        lastCallTimestamp = seconds
        return outcome
    }

    /// The same, from raw numbers: refuses values outside 0...63 (fine) and 0...2 (coarse).
    public mutating func applyConversionUpdate(
        conversionValue: Int, coarseValue: Int?, lockWindow: Bool, at now: Date
    ) throws(ProviderError) -> SKANUpdateOutcome {
        let update = try SKANConversionUpdate(
            conversionValue: conversionValue, coarseValue: coarseValue, lockWindow: lockWindow)
        return try applyConversionUpdate(update, at: now)
    }
}
