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
}
