import Foundation
import Testing
import LedgerDomain
@testable import LedgerSKANPostbacks

// The postback schema of each version (Apple's "Identifying the parameters in install-validation
// postbacks"; v4 ranges from docs/skan-postbacks.md): typed errors naming the field and the rule.
@Suite("SKAN postback schema")
struct SchemaTests {
    func refusal(_ text: String) -> SKANPostbackError? {
        refusal(Data(text.utf8))
    }

    func refusal(_ data: Data) -> SKANPostbackError? {
        do {
            _ = try SKANPostback.parse(data)
            return nil
        } catch {
            return error
        }
    }

    func expectRefused(_ text: String, _ kind: SKANPostbackError.Kind, field: String?, rule: String,
                       sourceLocation: SourceLocation = #_sourceLocation) {
        let error = refusal(text)
        #expect(error?.kind == kind, "kind", sourceLocation: sourceLocation)
        #expect(error?.field == field, "field", sourceLocation: sourceLocation)
        #expect(error?.rule == rule, "rule", sourceLocation: sourceLocation)
    }

    static let v4 = AppleExamples.v4

    @Test("malformed JSON, a non-object, invalid UTF-8, duplicate keys")
    func syntax() {
        expectRefused(#"{"version": "4.0", "#, .malformedJSON, field: nil, rule: "json_syntax")
        expectRefused(#"{"version": '4.0'}"#, .malformedJSON, field: nil, rule: "json_syntax")
        expectRefused("", .malformedJSON, field: nil, rule: "json_syntax")
        expectRefused(#"[1, 2]"#, .notAnObject, field: nil, rule: "json_object")
        expectRefused(#""text""#, .notAnObject, field: nil, rule: "json_object")
        #expect(refusal(Data([0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D]))?.kind == .invalidUTF8)
        expectRefused(#"{"version": "4.0", "version": "3.0"}"#, .duplicateField, field: "version", rule: "unique_keys")
        #expect(refusal(Data(repeating: 0x20, count: SKANPostback.maximumBytes + 1))?.kind == .tooLarge)
    }

    @Test("versions: 1.0/2.0 unsupported, others unknown, a missing version named")
    func versions() {
        expectRefused(AppleExamples.replacing(Self.v4, "version", "\"4.0\"", "\"2.0\""), .unsupportedVersion, field: "version",
                      rule: "version_2.1_or_later")
        expectRefused(AppleExamples.replacing(Self.v4, "version", "\"4.0\"", "\"1.0\""), .unsupportedVersion, field: "version",
                      rule: "version_2.1_or_later")
        expectRefused(AppleExamples.replacing(Self.v4, "version", "\"4.0\"", "\"5.0\""), .unknownVersion, field: "version",
                      rule: "one_of_2.1_2.2_3.0_4.0")
        expectRefused(AppleExamples.replacing(Self.v4, "version", "\"4.0\"", "4.0"), .wrongType, field: "version",
                      rule: "expected_string")
        expectRefused(#"{"ad-network-id": "x"}"#, .missingField, field: "version", rule: "required")
    }

    @Test("a missing or malformed signature is named")
    func signature() {
        let unsigned = Self.v4.replacingOccurrences(of: "\"attribution-signature\":", with: "\"signature-elsewhere\":")
        #expect(unsigned != Self.v4)
        expectRefused(unsigned, .missingField, field: "attribution-signature", rule: "required")
        expectRefused(AppleExamples.replacing(Self.v4, "attribution-signature",
                                              "\"MEUCIGRmSMrqedNu6uaHyhVcifs118R5z/AB6cvRaKrRRHWRAiEAv96ne3dKQ5kJpbsfk4eYiePmrZUU6sQmo+7zfP/1Bxo=\"",
                                              "\"not base64!\""),
                      .invalidValue, field: "attribution-signature", rule: "base64_der")
    }

    @Test("v4 ranges: fine 0–63, coarse low/medium/high, sequence 0–2, source identifier 2–4 digits")
    func ranges() {
        expectRefused(AppleExamples.replacing(Self.v4, "conversion-value", "63", "64"), .invalidValue, field: "conversion-value",
                      rule: "range_0_63")
        expectRefused(AppleExamples.replacing(Self.v4, "conversion-value", "63", "-1"), .invalidValue, field: "conversion-value",
                      rule: "range_0_63")
        expectRefused(AppleExamples.replacing(Self.v4, "conversion-value", "63", "6.5"), .invalidValue, field: "conversion-value",
                      rule: "non_negative_integer")
        expectRefused(AppleExamples.replacing(Self.v4, "conversion-value", "63", "\"high\""), .invalidValue,
                      field: "conversion-value", rule: "non_negative_integer")
        expectRefused(AppleExamples.replacing(Self.v4, "conversion-value", "63", "63, \"coarse-conversion-value\": \"huge\""),
                      .invalidValue, field: "coarse-conversion-value", rule: "one_of_low_medium_high")
        expectRefused(AppleExamples.replacing(Self.v4, "postback-sequence-index", "0", "3"), .invalidValue,
                      field: "postback-sequence-index", rule: "range_0_2")
        expectRefused(AppleExamples.replacing(Self.v4, "source-identifier", "\"5239\"", "\"5\""), .invalidValue,
                      field: "source-identifier", rule: "digits_2_4")
        expectRefused(AppleExamples.replacing(Self.v4, "source-identifier", "\"5239\"", "\"52391\""), .invalidValue,
                      field: "source-identifier", rule: "digits_2_4")
        expectRefused(AppleExamples.replacing(Self.v4, "conversion-value", "63", "63, \"country-code\": \"usa\""),
                      .invalidValue, field: "country-code", rule: "iso3166_alpha2")
    }

    // skan-postbacks.md: "Fine values arrive only in the first postback", and the unsigned fields
    // "need the network-side cross-check ...; flag them". A later postback carrying one is not
    // refused (anyone on the way could have added it to a genuine postback): the value is set
    // aside and the postback flagged as a mismatch, so its values are never decoded.
    @Test("a fine value in a later postback is set aside and flagged, not a refusal")
    func fineValueInALaterPostback() throws {
        let later = try SKANPostback.parse(Data(AppleExamples.replacing(Self.v4, "postback-sequence-index", "0", "1").utf8))
        #expect(later.postbackSequenceIndex == 1 && later.conversionValue == nil && later.unexpectedConversionValue == 63)
        let (check, mismatches) = SKANUnsignedCheck.compare(later, with: nil)
        #expect(check == .mismatch && mismatches == ["conversion-value"])
        let first = try SKANPostback.parse(Data(Self.v4.utf8))
        #expect(first.conversionValue == 63 && first.unexpectedConversionValue == nil)
        #expect(SKANUnsignedCheck.compare(first, with: nil).check == .unconfirmed)
    }

    @Test("required fields and types per version")
    func requiredFields() {
        expectRefused(AppleExamples.replacing(Self.v4, "did-win", "true", "null"), .missingField, field: "did-win", rule: "required")
        expectRefused(AppleExamples.replacing(Self.v4, "did-win", "true", "\"true\""), .wrongType, field: "did-win",
                      rule: "expected_boolean")
        expectRefused(AppleExamples.replacing(Self.v4, "fidelity-type", "1", "2"), .invalidValue, field: "fidelity-type",
                      rule: "one_of_0_1")
        expectRefused(AppleExamples.replacing(Self.v4, "app-id", "525463029", "null"), .missingField, field: "app-id",
                      rule: "required")
        expectRefused(AppleExamples.replacing(Self.v4, "source-identifier", "\"5239\"", "null"), .missingField,
                      field: "source-identifier", rule: "required")
        expectRefused(AppleExamples.replacing(AppleExamples.v3, "campaign-id", "42", "null"), .missingField, field: "campaign-id",
                      rule: "required")
        expectRefused(AppleExamples.replacing(AppleExamples.v3, "did-win", "true", "null"), .missingField, field: "did-win",
                      rule: "required")
        expectRefused(AppleExamples.replacing(AppleExamples.v22, "fidelity-type", "1", "null"), .missingField,
                      field: "fidelity-type", rule: "required")
        expectRefused(AppleExamples.replacing(Self.v4, "source-domain", "\"example.com\"", "\"example.com\", \"source-app-id\": 1"),
                      .invalidValue, field: "source-domain", rule: "not_with_source_app_id")
        expectRefused(AppleExamples.replacing(AppleExamples.v3, "campaign-id", "42", "42, \"source-identifier\": \"12\""),
                      .invalidValue, field: "source-identifier", rule: "not_in_this_version")
        expectRefused(AppleExamples.replacing(Self.v4, "transaction-id", "\"6aafb7a5-0170-41b5-bbe4-fe71dedf1e30\"", "\"a/b\""),
                      .invalidValue, field: "transaction-id", rule: "transaction_id_syntax")
    }

    @Test("the JSON reader keeps number literals, unescapes strings, skips nested values")
    func jsonReader() throws {
        let object = try SKANJSONObject(parsing: Data(#"""
            {"a": 525463029, "b": "x\u2063y\"\\\/", "c": {"d": [1, {"e": null}]}, "f": -0.5e+3, "g": "\ud83d\ude00", "h": false}
            """#.utf8))
        #expect(object["a"] == .number("525463029"))
        #expect(object["b"] == .string("x\u{2063}y\"\\/"))
        #expect(object["c"] == .nested)
        #expect(object["f"] == .number("-0.5e+3"))
        #expect(object["g"] == .string("😀"))
        #expect(object["h"] == .bool(false))
        for bad in [#"{"a": 01}"#, #"{"a": 1.}"#, #"{"a": "\ud83d"}"#, "{\"a\": \"\u{01}\"}", #"{"a": 1,}"#, #"{"a": tru}"#,
                    #"{"a": 1} x"#, #"{"a": [1, 2}"#] {
            #expect(throws: SKANJSONObject.Failure.self, "\(bad)") { try SKANJSONObject(parsing: Data(bad.utf8)) }
        }
    }
}
