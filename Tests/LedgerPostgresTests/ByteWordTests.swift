import LedgerPostgres
import LedgerTestKit
import Testing

/// The eight-bytes-at-a-time tests behind COPY's escaping and the JSON scanner agree with a
/// byte-by-byte look at the same word (a wrong "no" would copy an unescaped tab into COPY or read
/// past a string's closing quote).
struct ByteWordTests {
    @Test func masksAgreeWithBytewiseChecks() {
        var random = SplitMix64(seed: 0xB17E_5)
        // Bytes near the boundaries the callers use, and anything.
        let interesting: [UInt8] = [0x00, 0x01, 0x09, 0x0A, 0x0D, 0x0E, 0x1F, 0x20, 0x21, 0x22, 0x5C, 0x7F, 0x80, 0xFF]
        for _ in 0..<100_000 {
            let bytes = (0..<8).map { _ in
                Bool.random(using: &random) ? interesting.randomElement(using: &random)! : UInt8.random(in: 0...255, using: &random)
            }
            let word = bytes.enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
            for byte in [UInt8(ascii: "\""), UInt8(ascii: "\\"), 0x00, 0xFF] {
                #expect((ByteWord.mask(of: byte, in: word) != 0) == bytes.contains(byte))
            }
            for bound: UInt8 in [0x01, 0x0E, 0x20, 0x80] {
                #expect((ByteWord.mask(below: bound, in: word) != 0) == bytes.contains { $0 < bound })
            }
        }
    }
}
