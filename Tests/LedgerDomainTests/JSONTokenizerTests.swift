import LedgerDomain
import Testing

/// The one JSON tokenizer every exact-text reader stands on: RFC 8259 at the byte level.
@Suite("JSON tokenizer: strict RFC 8259 bytes")
struct JSONTokenizerTests {
    /// The top-level value's token, or the error, with a depth limit of `depth`.
    static func read(_ text: String, depth: Int = 8) -> Result<JSONToken, JSONSyntaxError> {
        read(Array(text.utf8), depth: depth)
    }

    static func read(_ bytes: [UInt8], depth: Int = 8) -> Result<JSONToken, JSONSyntaxError> {
        bytes.withUnsafeBufferPointer { buffer in
            var tokenizer = JSONTokenizer(buffer, maximumDepth: depth)
            return Result { () throws(JSONSyntaxError) -> JSONToken in
                tokenizer.skipWhitespace()
                let token = try tokenizer.skipValue(depth: 1)
                try tokenizer.end()
                return token
            }
        }
    }

    /// The decoded text of the string that is all of `text`.
    static func decoded(_ text: String) throws -> String {
        let bytes = Array(text.utf8)
        return try bytes.withUnsafeBufferPointer { buffer in
            var tokenizer = JSONTokenizer(buffer, maximumDepth: 1)
            return tokenizer.text(try tokenizer.string())
        }
    }

    @Test("escapes decode; surrogate pairs join; the raw range keeps the quotes")
    func escapes() throws {
        #expect(try Self.decoded(#""a\"\\\/\b\f\n\r\tz""#) == "a\"\\/\u{08}\u{0C}\n\r\tz")
        #expect(try Self.decoded(#""\u00e9\u2063\ud83d\ude00""#) == "é\u{2063}😀")
        #expect(try Self.decoded(#""plain é""#) == "plain é")
        let token = try Self.read(#"  "x\n"  "#).get()
        #expect(token.kind == .string && token.range == 2..<7 && token.body == 3..<6 && token.hasEscapes)
    }

    @Test("lone surrogates, bad escapes, raw control characters and bad UTF-8 are refused")
    func stringRefusals() {
        for text in [#""\ud83d""#, #""\ud83dx""#, #""\ude00""#, #""\ud83d\u0041""#, #""\x""#, #""\u12g4""#, "\"a\u{01}\"", #""open"#] {
            #expect(throws: JSONSyntaxError.self, "\(text)") { try Self.read(text).get() }
        }
        for bytes: [UInt8] in [[0x22, 0xFF, 0x22], [0x22, 0xC0, 0xAF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xE2, 0x82, 0x22]] {
            #expect(throws: JSONSyntaxError.self, "\(bytes)") { try Self.read(bytes).get() }
        }
        #expect(throws: JSONSyntaxError(offset: 2, reason: .controlCharacter)) { try Self.read("\"a\u{01}\"").get() }
    }

    @Test("numbers keep their text; leading zeros, bare dots and signs are refused")
    func numbers() throws {
        for text in ["0", "-0", "525463029", "-0.5e+3", "1E400", "1.25"] {
            let token = try Self.read(text).get()
            #expect(token.kind == .number && token.range == 0..<text.utf8.count, "\(text)")
        }
        for text in ["01", "-01", "1.", ".5", "+1", "1e", "1e+", "-", "0x10", "Infinity", "NaN"] {
            #expect(throws: JSONSyntaxError.self, "\(text)") { try Self.read(text).get() }
        }
    }

    @Test("depth is bounded: the limit's depth reads, one more is refused with its reason")
    func depthLimit() throws {
        #expect(try Self.read(String(repeating: "[", count: 8) + String(repeating: "]", count: 8)).get().kind == .array)
        let deep = String(repeating: #"{"a":"#, count: 9) + "1" + String(repeating: "}", count: 9)
        #expect(throws: JSONSyntaxError(offset: 40, reason: .tooDeep(limit: 8))) { try Self.read(deep).get() }
        // Far deeper than any stack allows, refused before it matters.
        #expect(throws: JSONSyntaxError.self) { try Self.read(String(repeating: "[", count: 200_000), depth: 64).get() }
    }

    @Test("structure: trailing text, trailing commas, missing colons and bad literals are refused")
    func structure() throws {
        #expect(try Self.read(#" {"a" : [1, true, false, null, {}], "b": ""} "#).get().kind == .object)
        #expect(throws: JSONSyntaxError(offset: 8, reason: .trailingText)) { try Self.read(#"{"a":1} x"#).get() }
        for text in ["", " ", "[1,]", #"{"a":1,}"#, #"{"a" 1}"#, "{1:2}", "[1 2]", "tru", "nul", "[", #"{"a":"#, "\u{FEFF}{}"] {
            #expect(throws: JSONSyntaxError.self, "\(text)") { try Self.read(text).get() }
        }
    }
}
