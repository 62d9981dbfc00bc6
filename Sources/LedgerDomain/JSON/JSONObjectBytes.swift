import Foundation

/// The members of a JSON object found by a byte scan that steps over nested values without
/// parsing them: for code that needs a few members of a payload (opening sealed fields,
/// projections' hot paths) without building a tree of it. Its ``Scanner`` also serves sealing's
/// one-pass split.
///
/// It reads only what it can read exactly as a JSON parser would, and gives up (nil) otherwise:
/// a key with an escape (`"dev\u0069ce"` may spell a name the caller looks for), bytes that do not
/// scan, or nesting deeper than ``maximumDepth``. Callers then take the slow, general path.
public enum JSONObjectBytes {
    /// Nesting deeper than this is not scanned (the recursion stays small on any thread's stack).
    public static let maximumDepth = 256

    /// One member of a scanned object: its key, its raw value, and the bytes from the key's
    /// opening quote to the value's end (indices of the scanned slice).
    public struct Member: Sendable {
        /// The key's bytes, between its quotes (never escaped).
        public var keyBytes: ArraySlice<UInt8>
        /// The value's bytes, exactly as written.
        public var raw: ArraySlice<UInt8>
        /// From the key's opening quote to the value's last byte.
        public var span: Range<Int>

        /// The key as text.
        public var key: String { String(decoding: keyBytes, as: UTF8.self) }
    }

    /// The members of the JSON object that is all of `bytes` (whitespace aside), in order; nil
    /// when it does not scan, a key is escaped, or it nests too deep.
    public static func members(of bytes: ArraySlice<UInt8>) -> [Member]? {
        // Scanned as offsets on the buffer (``Cursor``), then made members of the slice.
        var places: [(key: Range<Int>, value: Range<Int>, span: Range<Int>)] = []
        places.reserveCapacity(16)  // the ledger's objects: growing 1, 2, 4, 8 cost more than the scan
        guard bytes.withUnsafeBufferPointer({ Cursor.memberOffsets(of: $0, into: &places) }) else { return nil }
        let base = bytes.startIndex
        return places.map { place in
            Member(keyBytes: bytes[(base + place.key.lowerBound)..<(base + place.key.upperBound)],
                   raw: bytes[(base + place.value.lowerBound)..<(base + place.value.upperBound)],
                   span: (base + place.span.lowerBound)..<(base + place.span.upperBound))
        }
    }

    /// ``members(of:)`` as offsets in `bytes`, appended to `places`: each member's key (between
    /// its quotes), value, and span (key's opening quote to value's end). False where
    /// ``members(of:)`` gives nil. For hot paths that look up a few members and keep no slices.
    package static func memberOffsets(of bytes: UnsafeBufferPointer<UInt8>,
                                      into places: inout [(key: Range<Int>, value: Range<Int>, span: Range<Int>)]) -> Bool {
        Cursor.memberOffsets(of: bytes, into: &places)
    }

    /// The text of a raw JSON string value with no escapes (`"abc"` → `abc`); nil for any other
    /// value, for a string with a backslash (only a parser can read those), and for one with a
    /// raw control character.
    public static func plainString(_ raw: ArraySlice<UInt8>) -> String? {
        plainStringBody(raw).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The bytes between the quotes of a plain string value (as ``plainString(_:)`` reads it,
    /// without making a `String`).
    public static func plainStringBody(_ raw: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        // A raw control character is no valid JSON either: a parser refuses it, so the caller's
        // parser should be the one to say so.
        guard raw.count >= 2, raw.first == UInt8(ascii: "\""), raw.last == UInt8(ascii: "\"") else { return nil }
        let body = raw.dropFirst().dropLast()
        return body.withUnsafeBufferPointer(Cursor.holdsEscapeOrControl) ? nil : body
    }

    /// A cursor over JSON bytes that can step over whole values (its loops run in ``Cursor``, on
    /// the slice's buffer).
    struct Scanner {
        let bytes: ArraySlice<UInt8>
        var index: Int

        init(bytes: ArraySlice<UInt8>) {
            self.bytes = bytes
            self.index = bytes.startIndex
        }

        var atEnd: Bool { index >= bytes.endIndex }
        var peek: UInt8? { index < bytes.endIndex ? bytes[index] : nil }

        mutating func take(_ byte: UInt8) -> Bool {
            guard peek == byte else { return false }
            index += 1
            return true
        }

        /// Runs `step` on a cursor at the scanner's place, and moves the scanner where it stopped.
        private mutating func onCursor<Result>(_ step: (inout Cursor) -> Result) -> Result {
            let base = bytes.startIndex
            let (result, offset) = bytes.withUnsafeBufferPointer { buffer in
                var cursor = Cursor(buffer, offset: index - base)
                let result = step(&cursor)
                return (result, cursor.offset)
            }
            index = base + offset
            return result
        }

        mutating func skipWhitespace() {
            onCursor { $0.skipWhitespace() }
        }

        /// Reads a member's `"key" :` (whitespace around it skipped), leaving the scanner at its
        /// value: where the key starts (its opening quote) and its bytes between the quotes. Nil
        /// when it does not scan or the key has an escape (`"dev\u0069ce"` may spell a name the
        /// caller looks for; only a parser can say).
        mutating func takeKey() -> (start: Int, key: ArraySlice<UInt8>)? {
            let base = bytes.startIndex
            guard let (start, key) = onCursor({ $0.takeKey() }) else { return nil }
            return (base + start, bytes[(base + key.lowerBound)..<(base + key.upperBound)])
        }

        /// Steps over a string, escapes included.
        mutating func skipString() -> Bool {
            onCursor { $0.skipString() }
        }

        /// Steps over any value: string, object, array, number or literal; false past
        /// ``JSONObjectBytes/maximumDepth``.
        mutating func skipValue(depth: Int) -> Bool {
            onCursor { $0.skipValue(depth: depth) }
        }
    }
}
