import Foundation
import LedgerTestKit
import Testing

@testable import LedgerDomain

/// `CanonicalJSONEncoder` must write exactly the bytes of `LedgerJSON.makeEncoder()` (Foundation's
/// `JSONEncoder`): event hashes, idempotent retries and golden tests compare encodings byte for
/// byte. Each test encodes the same values both ways.
@Suite("Canonical JSON encoder")
struct CanonicalJSONEncoderTests {
    /// Both encodings of `value`, or both errors' coding paths.
    static func expectSameBytes<Value: Encodable>(_ value: Value, sourceLocation: SourceLocation = #_sourceLocation) {
        let foundation = Result { try LedgerJSON.makeEncoder().encode(value) }
        let canonical = Result { try CanonicalJSONEncoder.encode(value) }
        switch (foundation, canonical) {
        case (.success(let expected), .success(let actual)):
            #expect(String(decoding: actual, as: UTF8.self) == String(decoding: expected, as: UTF8.self),
                    sourceLocation: sourceLocation)
        case (.failure(let expected as EncodingError), .failure(let actual as EncodingError)):
            #expect(Self.path(of: actual) == Self.path(of: expected), sourceLocation: sourceLocation)
            #expect(Self.reason(of: actual) == Self.reason(of: expected), sourceLocation: sourceLocation)
        default:
            Issue.record("one encoder failed and the other did not: \(foundation) / \(canonical)", sourceLocation: sourceLocation)
        }
    }

    /// The error's text: the catalog quotes it in the error a client gets.
    static func reason(of error: EncodingError) -> String {
        guard case .invalidValue(_, let context) = error else { return "not invalidValue" }
        return context.debugDescription
    }

    static func path(of error: EncodingError) -> [String] {
        guard case .invalidValue(_, let context) = error else { return ["not invalidValue"] }
        return context.codingPath.map { $0.intValue.map { "#\($0)" } ?? $0.stringValue }
    }

    @Test func everyEventTypeEncodesToTheSameBytes() throws {
        let samples = try Samples.all()
        #expect(samples.count > 20)
        for sample in samples { Self.expectSameBytes(sample) }
    }

    struct Text: Encodable { var text: String }

    @Test func stringsAreEscapedAlike() {
        var texts = (0..<128).map { String(UnicodeScalar(UInt8($0))) }
        texts += ["", "a/b", "https://example.com/x?y=1&z=\"2\"", "é", "日本語", "🙂 emoji", "\u{2028}\u{2029}", "\u{FEFF}bom",
                  "tab\there", "back\\slash", "\u{7F}del", String(repeating: "long run without escapes ", count: 40) + "\n"]
        for text in texts {
            Self.expectSameBytes(Text(text: text))
            Self.expectSameBytes([text])
        }
    }

    struct Numbers: Encodable {
        var double: Double
        var float: Float
        var int: Int
        var int8: Int8
        var uint64: UInt64
        var decimal: Decimal
        var flag: Bool
    }

    @Test func numbersAreWrittenAlike() throws {
        let doubles: [Double] = [0, -0.0, 1, 123.0, 0.1, 1e-7, 1e21, 1.5e300, -2.25, .pi, .greatestFiniteMagnitude, .leastNonzeroMagnitude]
        let decimals = ["0", "0.10", "-123.456", "99999999999999999999.99", "1e-20"].map { Decimal(string: $0)! }
        for (index, double) in doubles.enumerated() {
            Self.expectSameBytes(Numbers(
                double: double, float: Float(double), int: index % 2 == 0 ? .max : .min, int8: .min, uint64: .max,
                decimal: decimals[index % decimals.count], flag: index % 2 == 0))
        }
        Self.expectSameBytes(Numbers(double: .nan, float: 1, int: 0, int8: 0, uint64: 0, decimal: 0, flag: true))
        Self.expectSameBytes(["x": [Double.infinity]])
    }

    struct Dated: Encodable {
        var at: Date
        var later: [Date?]
    }

    @Test func datesDataAndURLsAreWrittenAlike() throws {
        Self.expectSameBytes(Dated(at: Samples.launch, later: [Samples.later, nil]))
        // Outside the years 0001–9999: both refuse, naming the same field.
        Self.expectSameBytes(Dated(at: Samples.launch, later: [nil, Date(timeIntervalSince1970: 300_000_000_000)]))
        Self.expectSameBytes(["data": Data([0, 1, 2, 250, 251, 255])])
        Self.expectSameBytes(["url": URL(string: "https://example.com/a/b?c=d")!])
    }

    @Test func dictionariesAndEmptyValues() {
        Self.expectSameBytes(["b": 1, "a": 2, "B": 3, "a10": 4, "a9": 5, "é": 6, "": 7])
        Self.expectSameBytes([10: "ten", 9: "nine", -1: "minus one"])
        Self.expectSameBytes([String: Int]())
        Self.expectSameBytes([[Int]]())
        Self.expectSameBytes(["nothing": Nothing()])
        Self.expectSameBytes(Nothing())
    }

    @Test func manyKeysEncodeAlike() {
        // A client's custom data can hold tens of thousands of keys within the size limit (the
        // quadratic first form took 1.4 s for 40,000; this checks the bytes, not the time).
        let keys = Dictionary(uniqueKeysWithValues: (0..<30_000).map { ("k\($0 * 7_919 % 30_000)", $0) })
        Self.expectSameBytes(["custom_data": keys])
    }

    @Test func wideIntegersAndDepthAlike() {
        Self.expectSameBytes(["max": Int128.max, "min": Int128.min])
        Self.expectSameBytes([UInt128.max, 0])
        // JSONEncoder refuses containers nested 512 deep: the same edge on both sides.
        for depth in [510, 511, 512, 513] {
            var value = Fuzz.array([])
            for _ in 1..<depth { value = .array([value]) }
            Self.expectSameBytes(value)
            Self.expectSameBytes(["wrapped": value])
        }
    }

    /// Container operations used in unusual orders: the same nested container asked for twice, a
    /// value encoded under a key a nested container is then asked for, a super encoder kept while
    /// its key is written directly, an unkeyed super encoder followed by more elements.
    struct Unusual: Encodable {
        enum Key: String, CodingKey { case n, u, v, `super`, other }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            var first = container.nestedContainer(keyedBy: Key.self, forKey: .n)
            try first.encode(1, forKey: .n)
            var second = container.nestedContainer(keyedBy: Key.self, forKey: .n)
            try second.encode(2, forKey: .u)
            var firstList = container.nestedUnkeyedContainer(forKey: .u)
            try firstList.encode(1)
            var secondList = container.nestedUnkeyedContainer(forKey: .u)
            try secondList.encode(2)
            try container.encode(["x": 1], forKey: .v)
            var merged = container.nestedContainer(keyedBy: Key.self, forKey: .v)
            try merged.encode(3, forKey: .other)
            do {
                let kept = container.superEncoder()
                var value = kept.singleValueContainer()
                try value.encode(7)
                try container.encode(5, forKey: .super)
            }
            var list = container.nestedUnkeyedContainer(forKey: .other)
            try list.encode("a")
            do {
                let kept = list.superEncoder()
                try list.encode("b")
                var inner = kept.container(keyedBy: Key.self)
                try inner.encode(true, forKey: .n)
            }
            try list.encode("c")
            // Only the container keeps the super encoder: its value lands when the container goes.
            var held = container.superEncoder(forKey: .u).container(keyedBy: Key.self)
            try container.encode(5, forKey: .u)
            try held.encode(true, forKey: .n)
        }
    }

    @Test func unusualContainerOrdersAlike() {
        Self.expectSameBytes(Unusual())
        Self.expectSameBytes([Unusual(), Unusual()])
    }

    /// Encodes no container at all.
    struct Nothing: Encodable {
        func encode(to encoder: any Encoder) throws {}
    }

    /// A random value, encoded through every container operation an `Encoder` offers.
    indirect enum Fuzz: Encodable {
        case text(String)
        case number(Int)
        case double(Double)
        case flag(Bool)
        case null
        case object([(String, Fuzz)])
        case array([Fuzz])
        case nestedObject(String, [(String, Fuzz)])
        case nestedArray(String, [Fuzz])
        case viaSuper(String?, Fuzz)
        case optional(Fuzz?)

        struct Key: CodingKey {
            let stringValue: String
            var intValue: Int? { nil }
            init(_ stringValue: String) { self.stringValue = stringValue }
            init?(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        func encode(to encoder: any Encoder) throws {
            switch self {
            case .text(let text):
                var container = encoder.singleValueContainer()
                try container.encode(text)
            case .number(let number):
                var container = encoder.singleValueContainer()
                try container.encode(number)
            case .double(let number):
                var container = encoder.singleValueContainer()
                try container.encode(number)
            case .flag(let flag):
                var container = encoder.singleValueContainer()
                try container.encode(flag)
            case .null:
                var container = encoder.singleValueContainer()
                try container.encodeNil()
            case .object(let members):
                var container = encoder.container(keyedBy: Key.self)
                for (key, value) in members { try container.encode(value, forKey: Key(key)) }
            case .array(let items):
                var container = encoder.unkeyedContainer()
                for item in items { try container.encode(item) }
            case .nestedObject(let key, let members):
                var outer = encoder.container(keyedBy: Key.self)
                var inner = outer.nestedContainer(keyedBy: Key.self, forKey: Key(key))
                for (key, value) in members {
                    if case .number(let number) = value { try inner.encode(number, forKey: Key(key)) } else {
                        try inner.encode(value, forKey: Key(key))
                    }
                }
                try outer.encodeNil(forKey: Key(key + "_nil"))
            case .nestedArray(let key, let items):
                var outer = encoder.container(keyedBy: Key.self)
                var inner = outer.nestedUnkeyedContainer(forKey: Key(key))
                for item in items {
                    if case .text(let text) = item { try inner.encode(text) } else { try inner.encode(item) }
                }
                var deeper = inner.nestedContainer(keyedBy: Key.self)
                try deeper.encode(true, forKey: Key("deep"))
            case .viaSuper(let key, let value):
                var outer = encoder.container(keyedBy: Key.self)
                let superEncoder = key.map { outer.superEncoder(forKey: Key($0)) } ?? outer.superEncoder()
                try value.encode(to: superEncoder)
            case .optional(let value):
                var container = encoder.container(keyedBy: Key.self)
                try container.encodeIfPresent(value, forKey: Key("maybe"))
                try container.encode(value, forKey: Key("always"))
            }
        }
    }

    static func randomKey(_ random: inout SplitMix64) -> String {
        let keys = ["a", "b", "A", "a1", "a10", "a2", "ab", "é", "key_with_underscore", "Z", "", "dup", "dup", "\"q\"", "sp ace"]
        return keys[Int.random(in: 0..<keys.count, using: &random)]
    }

    static func randomFuzz(_ random: inout SplitMix64, depth: Int) -> Fuzz {
        let leaf = depth >= 4
        switch Int.random(in: 0..<(leaf ? 5 : 11), using: &random) {
        case 0: return .text(String((0..<Int.random(in: 0..<12, using: &random)).map { _ in
                Character(UnicodeScalar([0x09, 0x0A, 0x22, 0x2F, 0x5C, 0x41, 0x61, 0xE9, 0x1F600, 0x01][Int.random(in: 0..<10, using: &random)])!)
            }))
        case 1: return .number(Int.random(in: Int.min...Int.max, using: &random))
        case 2: return .double(Double.random(in: -1e6...1e6, using: &random).rounded(.towardZero) / [1, 8, 10, 1000][Int.random(in: 0..<4, using: &random)])
        case 3: return .flag(Bool.random(using: &random))
        case 4: return .null
        case 5: return .object((0..<Int.random(in: 0..<5, using: &random)).map { _ in (randomKey(&random), randomFuzz(&random, depth: depth + 1)) })
        case 6: return .array((0..<Int.random(in: 0..<5, using: &random)).map { _ in randomFuzz(&random, depth: depth + 1) })
        case 7: return .nestedObject(randomKey(&random), (0..<Int.random(in: 0..<4, using: &random)).map { _ in
                (randomKey(&random), randomFuzz(&random, depth: depth + 1)) })
        case 8: return .nestedArray(randomKey(&random), (0..<Int.random(in: 0..<4, using: &random)).map { _ in randomFuzz(&random, depth: depth + 1) })
        case 9: return .viaSuper(Bool.random(using: &random) ? randomKey(&random) : nil, randomFuzz(&random, depth: depth + 1))
        default: return .optional(Bool.random(using: &random) ? randomFuzz(&random, depth: depth + 1) : nil)
        }
    }

    @Test func randomValuesThroughEveryContainerOperation() {
        var random = SplitMix64(seed: 2026_11_24)
        for _ in 0..<3_000 {
            let value = Self.randomFuzz(&random, depth: 0)
            Self.expectSameBytes(value)
            Self.expectSameBytes(["wrapped": value])
        }
    }
}
