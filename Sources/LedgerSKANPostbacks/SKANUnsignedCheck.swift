import LedgerDomain

/// The cross-check of the fields Apple does not sign (`conversion-value`,
/// `coarse-conversion-value`, geo) against what the forwarding network reports having received
/// (Singular SKAdNetwork 4 implementation guide: "a secure set-up with networks to verify the
/// parameters that are not signed").
public enum SKANUnsignedCheck {
    /// Compares `postback` with `reported`: without a report the values are unconfirmed; a
    /// reported value that differs from the postback's (or that the postback lacks) is a mismatch,
    /// and so is a value Apple never sends (a fine value in a later postback), report or not.
    /// - Returns: the outcome and the postback fields that differ.
    public static func compare(_ postback: SKANPostback, with reported: SKANPostbackReceived.ReportedValues?)
        -> (check: SKANPostbackReceived.UnsignedCheck, mismatches: [String])
    {
        var (check, mismatches) = compareReported(postback, with: reported)
        if postback.unexpectedConversionValue != nil {
            if !mismatches.contains("conversion-value") { mismatches.insert("conversion-value", at: 0) }
            check = .mismatch
        }
        return (check, mismatches)
    }

    /// The comparison with the network's report alone.
    private static func compareReported(_ postback: SKANPostback, with reported: SKANPostbackReceived.ReportedValues?)
        -> (check: SKANPostbackReceived.UnsignedCheck, mismatches: [String])
    {
        guard let reported, reported.conversionValue != nil || reported.coarseConversionValue != nil
            || reported.countryCode != nil
        else { return (.unconfirmed, []) }
        var mismatches: [String] = []
        if let value = reported.conversionValue, value != postback.conversionValue { mismatches.append("conversion-value") }
        if let value = reported.coarseConversionValue, value != postback.coarseConversionValue {
            mismatches.append("coarse-conversion-value")
        }
        if let value = reported.countryCode, value != postback.countryCode { mismatches.append("country-code") }
        return (mismatches.isEmpty ? .confirmed : .mismatch, mismatches)
    }
}
