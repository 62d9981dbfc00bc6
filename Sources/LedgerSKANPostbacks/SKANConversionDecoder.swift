import Foundation
import LedgerDomain

/// Decodes a postback's conversion values with an app's conversion model.
///
/// The first postback (sequence 0) is decoded by its fine value when it has one; otherwise (and
/// always for sequences 1 and 2, which carry only coarse values) by its coarse value. A value the
/// model does not map decodes to no events and no revenue.
public enum SKANConversionDecoder {
    /// The meaning of the values, or nil when the postback carries none the model maps.
    public static func decode(fine: Int?, coarse: String?, sequenceIndex: Int, with model: SKANConversionModelConfigured)
        -> SKANConversionModelConfigured.Meaning?
    {
        if sequenceIndex == 0, let fine { return model.meaning(ofFine: fine) }
        if let coarse { return model.coarse[coarse] }
        return nil
    }
}
