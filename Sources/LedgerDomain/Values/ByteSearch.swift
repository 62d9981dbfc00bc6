import Foundation

/// A byte string to look for, with its Horspool shift table made once.
///
/// The ledger looks for the same few markers in every payload it reads (`"ledger_personal"`, an
/// escaped NUL). They start with `"` or `\`, which JSON is full of, so a scan that stops at
/// every occurrence of the first byte compared almost everywhere; Horspool's rule compares one
/// window and then skips up to the needle's length.
///
/// It searches from the end: jsonb writes an object's longer keys after its shorter ones, and the
/// sealed envelope's name is longer than most, so it is found near the end of a payload.
package struct ByteNeedle: Sendable {
    package let bytes: [UInt8]
    /// For each byte value: how far the window moves back when its first byte is that value
    /// (the nearest later place of that byte in the needle, or the needle's length).
    private let shifts: [Int]

    package init(_ bytes: [UInt8]) {
        self.bytes = bytes
        var shifts = [Int](repeating: max(bytes.count, 1), count: 256)
        for (index, byte) in bytes.enumerated().reversed() where index > 0 { shifts[Int(byte)] = index }
        self.shifts = shifts
    }

    /// Whether the needle occurs in `haystack`.
    package func occurs(in haystack: UnsafeRawBufferPointer) -> Bool {
        occurs(in: haystack) { _ in true }
    }

    /// Whether the needle occurs in `haystack` at an offset `accept` takes (asked only where it
    /// occurs, last occurrence first).
    package func occurs(in haystack: UnsafeRawBufferPointer, where accept: (Int) -> Bool) -> Bool {
        let count = bytes.count
        guard count > 0 else { return accept(haystack.count) }
        guard haystack.count >= count else { return false }
        return bytes.withUnsafeBufferPointer { needle in
            shifts.withUnsafeBufferPointer { shifts in
                let first = needle[0]
                var start = haystack.count - count  // the window's first byte
                while start >= 0 {
                    let byte = haystack[start]
                    if byte == first {
                        var offset = 1
                        while offset < count, haystack[start + offset] == needle[offset] { offset += 1 }
                        if offset == count, accept(start) { return true }
                    }
                    start -= shifts[Int(byte)]
                }
                return false
            }
        }
    }
}

extension Data {
    /// Whether `needle` occurs in these bytes. For the ledger's own modules.
    package func contains(_ needle: ByteNeedle) -> Bool {
        withUnsafeBytes { needle.occurs(in: $0) }
    }

    /// Whether `needle` occurs in these bytes (``ByteNeedle``, made for this call; callers that
    /// look for the same bytes often keep a needle).
    package func contains(bytes needle: [UInt8]) -> Bool {
        contains(ByteNeedle(needle))
    }
}
