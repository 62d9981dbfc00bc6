/// Tests on eight bytes at once (one `UInt64` loaded from a buffer), for scans that skip runs of
/// ordinary bytes: COPY's text escaping.
///
/// Both rest on the exact test for a zero byte, `(x - 0x01…) & ~x & 0x80…`, which is non-zero
/// exactly when some byte of `x` is zero; with `n` in place of 1 it is non-zero exactly when some
/// byte is below `n` (for `n` up to 0x80). Which byte it flags is not reliable, only whether one is.
package enum ByteWord {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highs: UInt64 = 0x8080_8080_8080_8080

    /// Non-zero exactly when some byte of `word` equals `byte`. Masks combine with `|`, so two
    /// tests cost one branch.
    @inline(__always)
    package static func mask(of byte: UInt8, in word: UInt64) -> UInt64 {
        let x = word ^ (ones &* UInt64(byte))
        return (x &- ones) & ~x & highs
    }

    /// Non-zero exactly when some byte of `word` is below `bound` (at most 0x80).
    @inline(__always)
    package static func mask(below bound: UInt8, in word: UInt64) -> UInt64 {
        (word &- ones &* UInt64(bound)) & ~word & highs
    }
}
