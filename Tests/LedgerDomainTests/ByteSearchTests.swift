import Foundation
@testable import LedgerDomain
import Testing

@Suite("Byte search")
struct ByteSearchTests {
    @Test("a needle is found exactly where Foundation's range(of:) finds one, over random bytes")
    func agreesWithFoundation() {
        var generator = SystemRandomNumberGenerator()
        // A small alphabet, so that partial matches and repeated bytes are common.
        let alphabet: [UInt8] = Array(#""\lu0e"#.utf8)
        for _ in 0..<3000 {
            let haystack = Data((0..<Int.random(in: 0...40, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            let needle = (0..<Int.random(in: 1...6, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }
            #expect(haystack.contains(ByteNeedle(needle)) == (haystack.range(of: Data(needle)) != nil),
                    "needle \(needle) in \(Array(haystack))")
        }
    }

    @Test("the escaped-NUL needle finds the escape and not the same text without its backslash")
    func escapedNUL() {
        #expect(Data(#"{"a":"\u0000"}"#.utf8).contains(EventCatalog.escapedNUL))
        #expect(!Data(#"{"a":"u0000"}"#.utf8).contains(EventCatalog.escapedNUL))
        #expect(Data().contains(ByteNeedle([])))
    }

    /// `\\u0000` in JSON text is a backslash and the letters u0000, which any string may hold;
    /// only an odd run of backslashes makes the escape jsonb cannot store.
    @Test("an escaped NUL counts only when its backslash is not itself escaped",
          arguments: [
            (#"{"a":"\u0000"}"#, true), (#"{"a":"\\u0000"}"#, false), (#"{"a":"\\\u0000"}"#, true),
            (#"{"a":"\\\\u0000"}"#, false), (#"{"a":"C:\\u0000dir","b":"x\u0000"}"#, true),
            (#"{"a":"x\u0000","b":"C:\\u0000dir"}"#, true), (#"\u0000"#, true), (#"{"a":"u0000"}"#, false),
          ])
    func escapedNULNeedsAnOddRunOfBackslashes(text: String, holds: Bool) {
        #expect(EventCatalog.holdsEscapedNUL(Data(text.utf8)) == holds, "\(text)")
    }
}
