import Crypto
import Foundation
import LedgerDomain
import Testing
@testable import LedgerSKANPostbacks

@Suite("AdAttributionKit postback verification")
struct AAKVerificationTests {
    @Test("Apple AdAttributionKit: the stanza in 'Identifying the parameters in a postback' verifies with the developer-settings key 'Verifying a postback' publishes")
    func applesExampleVerifies() throws {
        let (postback, valid) = try AAKSignatureVerifier.apple.verify(raw: Data(AppleAAKExamples.developerSettingsStanza.utf8))
        #expect(valid)
        #expect(postback.keyID == "apple-development-identifier/1")
        #expect(AAKSignatureVerifier.apple.environment(of: postback.keyID) == .development)
        #expect(postback.postbackIdentifier == "85546EB7-FD39-44BC-8990-C98A4AC36A49")
        #expect(postback.advertisedItemIdentifier == "10738027756")
        #expect(postback.adNetworkIdentifier == "development.adattributionkit")
        #expect(postback.sourceIdentifier == "1234")
        #expect(postback.conversionType == .reEngagement && postback.isReEngagement)
        #expect(postback.didWin && postback.postbackSequenceIndex == 0)
        #expect(postback.marketplaceIdentifier == "com.apple.AppStore" && postback.publisherItemIdentifier == "0")
        #expect(postback.conversionValue == 24 && postback.adInteractionType == "click" && postback.countryCode == "US")
        #expect(postback.signature.count == 64)
    }

    @Test("Apple AdAttributionKit: the earlier edition's production-key example does not verify with any published key")
    func earlierExampleDoesNotVerify() throws {
        let (postback, valid) = try AAKSignatureVerifier.apple.verify(raw: Data(AppleAAKExamples.earlierProductionStanza.utf8))
        #expect(postback.keyID == "apple-cas-identifier/0")
        #expect(postback.conversionValue == nil && postback.coarseConversionValue == "medium")
        #expect(!valid)
    }

    @Test("Apple AdAttributionKit: changing any signed payload field of Apple's example fails verification")
    func changedSignedFieldFails() throws {
        let parts = AppleAAKExamples.developerSettingsParts
        var standard = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.count % 4 != 0 { standard += "=" }
        let payload = String(decoding: try #require(Data(base64Encoded: standard)), as: UTF8.self)
        let edits = [("\"did-win\":true", "\"did-win\":false"), ("\"source-identifier\":\"1234\"", "\"source-identifier\":\"1235\""),
                     ("\"conversion-type\":\"re-engagement\"", "\"conversion-type\":\"download\""),
                     ("\"postback-sequence-index\":0", "\"postback-sequence-index\":1"),
                     ("10738027756", "10738027757"), ("85546EB7", "85546EB8")]
        for (old, new) in edits {
            #expect(payload.contains(old))
            let changed = base64URL(Data(payload.replacingOccurrences(of: old, with: new).utf8))
            let stanza = #"{"jws-string": "\#(parts[0]).\#(changed).\#(parts[2])"}"#
            let (_, valid) = try AAKSignatureVerifier.apple.verify(raw: Data(stanza.utf8))
            #expect(!valid, "\(new)")
        }
    }

    @Test("RFC 7515 ES256 with a key generated in the test: verifies; any flipped signature bit or other key fails")
    func generatedKey() throws {
        let signer = AAKTestSigner()
        let raw = try signer.stanza(id: "0C2B1D7E-1111-4222-8333-444455556666")
        #expect(try signer.verifier.verify(raw: raw).isValid)
        #expect(try !AAKSignatureVerifier.apple.verify(raw: raw).isValid)
        var jws = try signer.jws(payload: AAKTestSigner.payload(id: "x1"))
        #expect(try signer.verifier.verify(raw: Data(#"{"jws-string": "\#(jws)"}"#.utf8)).isValid)
        let last = jws.removeLast()
        jws.append(last == "A" ? "Q" : "A")
        #expect(try !signer.verifier.verify(raw: Data(#"{"jws-string": "\#(jws)"}"#.utf8)).isValid)
    }

    @Test("a kid the verifier does not hold never verifies, even over a correct signature")
    func unknownKid() throws {
        let signer = AAKTestSigner()
        let jws = try signer.jws(payload: AAKTestSigner.payload(id: "x2"), kid: "apple-cas-identifier/9")
        let (postback, valid) = try signer.verifier.verify(raw: Data(#"{"jws-string": "\#(jws)"}"#.utf8))
        #expect(postback.keyID == "apple-cas-identifier/9" && !valid)
    }

    @Test("RFC 7515: the header never chooses the algorithm; parts are base64url without padding; ES256 is 64 bytes")
    func refusedJWS() throws {
        let signer = AAKTestSigner()
        let payload = AAKTestSigner.payload(id: "x3")
        let good = try signer.jws(payload: payload)
        let parts = good.split(separator: ".").map(String.init)
        let cases: [(String, String, String)] = [
            (try signer.jws(payload: payload, alg: "none"), "jws-string.header.alg", "alg_es256"),
            (try signer.jws(payload: payload, alg: "HS256"), "jws-string.header.alg", "alg_es256"),
            ("\(parts[0]).\(parts[1])", "jws-string", "jws_compact_three_parts"),
            ("\(parts[0])=.\(parts[1]).\(parts[2])", "jws-string.header", "base64url_no_padding"),
            ("\(parts[0]).\(parts[1]).\(parts[2].replacingOccurrences(of: "_", with: "/").replacingOccurrences(of: "-", with: "+"))+",
             "jws-string.signature", "base64url_no_padding"),
            ("\(parts[0]).\(parts[1]).\(base64URL(Data(repeating: 1, count: 72)))", "jws-string.signature", "es256_raw_64_bytes"),
            ("\(base64URL(Data(#"{"alg":"ES256"}"#.utf8))).\(parts[1]).\(parts[2])", "jws-string.header.kid", "required"),
            // "e30" is "{}"; "e31" has the same bytes with an unused bit set: not canonical.
            ("e31.\(parts[1]).\(parts[2])", "jws-string.header", "base64url_no_padding"),
            ("e30.\(parts[1]).\(parts[2])", "jws-string.header.alg", "alg_es256"),
        ]
        for (jws, field, rule) in cases {
            let error = try #require(throws: SKANPostbackError.self) {
                try AAKPostback.parse(Data(#"{"jws-string": "\#(jws)"}"#.utf8))
            }
            #expect(error.field == field && error.rule == rule, "\(error)")
        }
    }

    @Test("Apple AdAttributionKit 'Identifying the parameters in a postback': payload and unsigned fields are checked")
    func schema() throws {
        let signer = AAKTestSigner()
        func refused(_ payload: String, unsigned: String = "") throws -> SKANPostbackError {
            let stanza = #"{"jws-string": "\#(try signer.jws(payload: payload))"\#(unsigned)}"#
            return try #require(throws: SKANPostbackError.self) { try AAKPostback.parse(Data(stanza.utf8)) }
        }
        let base = AAKTestSigner.payload(id: "x4")
        var error = try refused(base.replacingOccurrences(of: #""source-identifier":"1234""#, with: #""source-identifier":"12345""#))
        #expect(error.field == "jws-string.payload.source-identifier" && error.rule == "two_to_four_digits")
        error = try refused(base.replacingOccurrences(of: #""conversion-type":"download""#, with: #""conversion-type":"install""#))
        #expect(error.field == "jws-string.payload.conversion-type")
        error = try refused(base.replacingOccurrences(of: #""postback-sequence-index":0"#, with: #""postback-sequence-index":3"#))
        #expect(error.rule == "range_0_2")
        error = try refused(base.replacingOccurrences(of: #","did-win":true"#, with: ""))
        #expect(error.field == "jws-string.payload.did-win" && error.kind == .missingField)
        error = try refused(base, unsigned: #", "conversion-value": 64"#)
        #expect(error.field == "conversion-value" && error.rule == "range_0_63")
        error = try refused(base, unsigned: #", "ad-interaction-type": "tap""#)
        #expect(error.field == "ad-interaction-type")
        error = try refused(base, unsigned: #", "country-code": "us""#)
        #expect(error.field == "country-code")
        error = try refused(base, unsigned: #", "jws-string": "a.b.c""#)
        #expect(error.kind == .duplicateField)
    }

    @Test("tier 0: a two-digit source identifier and no values are accepted")
    func tierZero() throws {
        let signer = AAKTestSigner()
        let (postback, valid) = try signer.verifier.verify(raw: try signer.stanza(id: "tier0", source: "12"))
        #expect(valid && postback.sourceIdentifier == "12" && postback.publisherItemIdentifier == nil)
        #expect(postback.conversionValue == nil && postback.coarseConversionValue == nil)
    }

    @Test("unsigned fields: changing them keeps the signature valid, and the network's report flags a difference")
    func unsignedChange() throws {
        let signer = AAKTestSigner()
        let raw = try signer.stanza(id: "x5", unsigned: [("conversion-value", "24"), ("country-code", "\"US\"")])
        let changed = Data(String(decoding: raw, as: UTF8.self).replacingOccurrences(of: "\"conversion-value\": 24",
                                                                                     with: "\"conversion-value\": 63").utf8)
        let (postback, valid) = try signer.verifier.verify(raw: changed)
        #expect(valid && postback.conversionValue == 63)
        let flagged = AAKPostbackIngestor.compare(postback, with: .init(conversionValue: 24, countryCode: "US"))
        #expect(flagged.check == .mismatch && flagged.mismatches == ["conversion-value"])
        #expect(AAKPostbackIngestor.compare(postback, with: .init(conversionValue: 63)).check == .confirmed)
        #expect(AAKPostbackIngestor.compare(postback, with: nil).check == .unconfirmed)
        let later = try signer.verifier.verify(raw: try signer.stanza(id: "x6", sequence: 1, unsigned: [("conversion-value", "5")]))
        #expect(later.postback.conversionValue == nil && later.postback.unexpectedConversionValue == 5)
        #expect(AAKPostbackIngestor.compare(later.postback, with: nil) == (.mismatch, ["conversion-value"]))
    }
}
