import Foundation
import Testing

@testable import LedgerProviders

/// The one JSON reader and writer every provider's code shares (RFC 8259, strict).
@Suite("Provider JSON: one reader for every provider")
struct ProviderJSONTests {
    @Test func membersKeepDocumentOrderAndTheLastDuplicateWins() throws {
        let value = try ProviderJSONReader.parse(#"{"b":1,"a":2,"b":3}"#, limits: .googleApple)
        #expect(value.serialized == #"{"b":1,"a":2,"b":3}"#)
        #expect(value["b"] == .number("3"))
        #expect(value.membersByKey == ["a": .number("2"), "b": .number("3")])
    }

    @Test func numbersKeepTheirTextAndIntegersAreExact() throws {
        let value = try ProviderJSONReader.parse(
            #"[1432681913.123456,429691043152332059,7.0,1e400]"#, limits: .branchSingular)
        guard case .array(let items) = value, items.count == 4 else {
            Issue.record("expected an array of 4, got \(value)")
            return
        }
        #expect(items[0] == .number("1432681913.123456"))
        #expect(items[1].integerValue == 429_691_043_152_332_059)
        #expect(items[2].integerValue == 7)
        #expect(items[3].integerValue == nil)
    }

    // RFC 8259 §8.1: a reader may ignore a BOM. Google and Apple step over it; Branch and Singular refuse it.
    @Test func byteOrderMarkFollowsTheLimits() throws {
        let withBOM = Data([0xEF, 0xBB, 0xBF]) + Data("{}".utf8)
        #expect(try ProviderJSONReader.parse(withBOM, limits: .googleApple) == .object([]))
        #expect(throws: ProviderJSONSyntaxError.self) { try ProviderJSONReader.parse(withBOM, limits: .branchSingular) }
    }

    @Test func limitsNameTheirRule() {
        let tooDeep = String(repeating: "[", count: 33) + String(repeating: "]", count: 33)
        #expect(rule(tooDeep, .googleApple) == "too_deep")
        #expect(rule(tooDeep, .branchSingular) == nil)
        let large = "\"" + String(repeating: "a", count: 4 << 20) + "\""
        #expect(rule(large, .branchSingular) == "too_large")
        #expect(rule("[1,]", .googleApple) == "not_json")
        #expect(rule("\"\\uDC00\"", .googleApple) == "not_json")
    }

    @Test func writerEscapesOnlyWhatJSONRequires() {
        let text = ProviderJSON.string("a/\"\\\u{08}\u{0C}\n\r\t\u{01}é").serialized
        #expect(text == #""a/\"\\\b\f\n\r\t\u0001é""#)
        #expect(ProviderJSON.object(sortingKeysOf: ["b": .null, "a": .bool(true)]).serialized == #"{"a":true,"b":null}"#)
    }

    private func rule(_ text: String, _ limits: ProviderJSONReader.Limits) -> String? {
        do {
            _ = try ProviderJSONReader.parse(text, limits: limits)
            return nil
        } catch {
            return error.rule
        }
    }
}
