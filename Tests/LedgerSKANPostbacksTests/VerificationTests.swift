import Crypto
import Foundation
import LedgerDomain
import Testing
@testable import LedgerSKANPostbacks

// Apple: "Verifying an install-validation postback" — ECDSA P-256 over the version's signed fields
// joined with U+2063; conversion values and geo are not signed (docs/skan-postbacks.md).
@Suite("SKAN signature verification")
struct VerificationTests {
    let apple = SKANSignatureVerifier.apple

    func verify(_ text: String) throws -> (postback: SKANPostback, isValid: Bool) {
        try apple.verify(raw: Data(text.utf8))
    }

    @Test("Apple's 4.0, 3.0 and 2.2 documentation postbacks verify with Apple's key")
    func appleExamplesVerify() throws {
        for example in [AppleExamples.v4, AppleExamples.v3, AppleExamples.v22] {
            #expect(try verify(example).isValid)
        }
    }

    @Test("4.0 signed text: version, ad-network-id, source-identifier, app-id, transaction-id, redownload, source-domain, fidelity-type, did-win, sequence")
    func v4SignedTextOrder() throws {
        let postback = try verify(AppleExamples.v4).postback
        let expected = ["4.0", "com.example", "5239", "525463029", "6aafb7a5-0170-41b5-bbe4-fe71dedf1e30", "false",
                        "example.com", "1", "true", "0"].joined(separator: "\u{2063}")
        #expect(String(decoding: postback.signedMessage, as: UTF8.self) == expected)
        #expect(postback.source == "5239" && postback.conversionValue == 63 && postback.postbackSequenceIndex == 0)
    }

    @Test("changing any signed field of Apple's 4.0 example fails verification")
    func anySignedFieldChangeFails() throws {
        let changes: [(String, String, String)] = [
            ("ad-network-id", "\"com.example\"", "\"com.example2\""), ("source-identifier", "\"5239\"", "\"5240\""),
            ("app-id", "525463029", "525463030"),
            ("transaction-id", "\"6aafb7a5-0170-41b5-bbe4-fe71dedf1e30\"", "\"6aafb7a5-0170-41b5-bbe4-fe71dedf1e31\""),
            ("redownload", "false", "true"), ("source-domain", "\"example.com\"", "\"example.org\""),
            ("fidelity-type", "1", "0"), ("did-win", "true", "false"),
        ]
        for (field, old, new) in changes {
            let changed = AppleExamples.replacing(AppleExamples.v4, field, old, new)
            #expect(try verify(changed).isValid == false, "\(field) changed but still verifies")
        }
        // The sequence index is signed too (a fine value may only come with sequence 0, so drop it).
        let later = AppleExamples.replacing(AppleExamples.replacing(AppleExamples.v4, "postback-sequence-index", "0", "1"),
                                            "conversion-value", "63", "null")
        #expect(try verify(later).isValid == false)
        // Signed fields of the 3.0 example.
        #expect(try verify(AppleExamples.replacing(AppleExamples.v3, "campaign-id", "42", "43")).isValid == false)
        #expect(try verify(AppleExamples.replacing(AppleExamples.v3, "source-app-id", "1234567891", "1234567892")).isValid == false)
    }

    @Test("changing only conversion-value still verifies, and the unsigned value is flagged")
    func unsignedChangeStillVerifies() throws {
        let changed = AppleExamples.replacing(AppleExamples.v4, "conversion-value", "63", "20")
        let (postback, isValid) = try verify(changed)
        #expect(isValid)
        #expect(postback.conversionValue == 20)
        #expect(postback.unsignedFieldsPresent == ["conversion-value"])
        // No second source: unconfirmed. The network reports the 63 it received: a mismatch.
        #expect(SKANUnsignedCheck.compare(postback, with: nil).check == .unconfirmed)
        let reported = SKANPostbackReceived.ReportedValues(conversionValue: 63)
        #expect(SKANUnsignedCheck.compare(postback, with: reported) == (.mismatch, ["conversion-value"]))
        #expect(SKANUnsignedCheck.compare(try verify(AppleExamples.v4).postback, with: reported) == (.confirmed, []))
        // The 3.0 example's conversion value is unsigned too.
        #expect(try verify(AppleExamples.replacing(AppleExamples.v3, "conversion-value", "20", "21")).isValid)
    }

    @Test("a signature from another key does not verify; a key of one's own does")
    func otherKeys() throws {
        let signer = TestSigner()
        let raw = try signer.v4(transaction: "t-1", fine: 5)
        #expect(try apple.verify(raw: raw).isValid == false)
        #expect(try signer.verifier.verify(raw: raw).isValid)
        #expect(try signer.verifier.verify(raw: try signer.v3(transaction: "t-2")).isValid)
    }

    @Test("numbers forwarded as strings sign the same text")
    func numbersAsStrings() throws {
        let stringly = AppleExamples.replacing(AppleExamples.v4, "app-id", "525463029", "\"525463029\"")
        #expect(try verify(stringly).isValid)
    }

    @Test("Apple's key constant parses")
    func appleKey() {
        #expect(SKANSignatureVerifier.apple.publicKey.derRepresentation.base64EncodedString()
                == SKANSignatureVerifier.applePublicKeyBase64)
    }
}
