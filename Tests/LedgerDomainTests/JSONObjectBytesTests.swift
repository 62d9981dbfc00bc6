import Foundation
import LedgerDomain
import Testing

@Suite("JSON object bytes")
struct JSONObjectBytesTests {
    @Test("members of a slice that starts inside a larger array: keys, values and spans in the array's indices")
    func membersOfAnInnerSlice() throws {
        let outer = Array(#"{"box":{ "a" : [1,{"x":"}"}] ,"b":"q\"z", "c":-1.5e3 },"z":0}"#.utf8)
        let start = try #require(outer.firstIndex(of: UInt8(ascii: "{"), after: 1))
        let end = try #require(outer.lastIndex(of: UInt8(ascii: "}"), before: outer.count - 1))
        let members = try #require(JSONObjectBytes.members(of: outer[start...end]))
        #expect(members.map(\.key) == ["a", "b", "c"])
        #expect(members.map { String(decoding: $0.raw, as: UTF8.self) } == [#"[1,{"x":"}"}]"#, #""q\"z""#, "-1.5e3"])
        #expect(members.map { String(decoding: outer[$0.span], as: UTF8.self) }
                == [#""a" : [1,{"x":"}"}]"#, #""b":"q\"z""#, #""c":-1.5e3"#])
        // The offsets form agrees, counted from the slice's start.
        var places: [(key: Range<Int>, value: Range<Int>, span: Range<Int>)] = []
        #expect(outer[start...end].withUnsafeBufferPointer { JSONObjectBytes.memberOffsets(of: $0, into: &places) })
        #expect(places.map(\.span) == members.map { ($0.span.lowerBound - start)..<($0.span.upperBound - start) })
    }

    @Test("what does not scan gives nil: an escaped key, an unterminated string, a missing colon, trailing bytes")
    func refusals() {
        for json in [#"{"dev\u0069ce":1}"#, #"{"a":"open}"#, #"{"a" 1}"#, #"{"a":1} x"#, #"{"a":1,}"#, #"{"a":}"#, "", "{"] {
            #expect(JSONObjectBytes.members(of: Array(json.utf8)[...]) == nil, "\(json)")
            var places: [(key: Range<Int>, value: Range<Int>, span: Range<Int>)] = []
            #expect(!Array(json.utf8).withUnsafeBufferPointer { JSONObjectBytes.memberOffsets(of: $0, into: &places) })
        }
        #expect(JSONObjectBytes.members(of: Array(" { } ".utf8)[...])?.isEmpty == true)
    }
}

private extension Array where Element == UInt8 {
    func firstIndex(of byte: UInt8, after index: Int) -> Int? { self[(index + 1)...].firstIndex(of: byte) }
    func lastIndex(of byte: UInt8, before index: Int) -> Int? { self[..<index].lastIndex(of: byte) }
}

extension JSONObjectBytesTests {
    @Test("strings are stepped over eight bytes at a time exactly as byte by byte: quotes, escapes and refusals at every offset")
    func stringsAtEveryOffset() throws {
        var generator = SystemRandomNumberGenerator()
        // The quote and the backslash, an escape letter, and bytes at the edges of the eight-byte
        // tests (below and at 0x20, either side of the backslash, the top of ASCII and above).
        let alphabet: [UInt8] = Array(#"ab"\"#.utf8) + [0x01, 0x1F, 0x20, 0x21, 0x5B, 0x5D, 0x7F, 0x80, 0xFF]
        for _ in 0..<3000 {
            let body = (0..<Int.random(in: 0...30, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }
            let bytes = [UInt8(ascii: "\"")] + body
            // Byte by byte: the end of the string (after its closing quote), or nil when refused.
            var index = 1, expected: Int?
            scan: while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "\""): expected = index + 1; break scan
                case UInt8(ascii: "\\"):
                    guard index + 1 < bytes.count, Array(#""\/bfnrt"#.utf8).contains(bytes[index + 1]) else { break scan }
                    index += 2
                case 0..<0x20, 0x80...: break scan
                default: index += 1
                }
            }
            let (token, offset) = bytes.withUnsafeBufferPointer { buffer in
                var tokenizer = JSONTokenizer(buffer, maximumDepth: 1)
                return (try? tokenizer.string(), tokenizer.offset)
            }
            #expect(token?.range.upperBound == expected, "\(bytes)")
            if expected != nil { #expect(offset == expected, "\(bytes)") }
            // A plain body: no backslash and no control character, wherever they stand.
            let plain = !body.contains { $0 == UInt8(ascii: "\\") || $0 < 0x20 }
            #expect((JSONObjectBytes.plainStringBody((bytes + [UInt8(ascii: "\"")])[...]) != nil) == plain, "\(body)")
        }
    }
}
