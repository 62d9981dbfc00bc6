/// The members of a JSON object found by stepping over its values with ``JSONTokenizer``, without
/// building a tree of it: for code that needs a few members of a payload (opening sealed fields,
/// folds' and projections' hot paths).
///
/// It reads only what it can read exactly as a JSON parser would, and gives up (nil) otherwise:
/// a key with an escape (`"dev\u0069ce"` may spell a name the caller looks for), bytes that are
/// not JSON, or nesting deeper than ``maximumDepth``. Callers then take the slow, general path.
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

    /// A member's place in a scanned buffer, as offsets: its key (between its quotes), its value,
    /// and its span (key's opening quote to value's end).
    public typealias Place = (key: Range<Int>, value: Range<Int>, span: Range<Int>)

    /// The members of the JSON object that is all of `bytes` (whitespace aside), in order; nil
    /// when it is not JSON, a key is escaped, or it nests too deep.
    public static func members(of bytes: ArraySlice<UInt8>) -> [Member]? {
        var places: [Place] = []
        places.reserveCapacity(16)  // the ledger's objects: growing 1, 2, 4, 8 cost more than the scan
        guard bytes.withUnsafeBufferPointer({ memberOffsets(of: $0, into: &places) }) else { return nil }
        let base = bytes.startIndex
        return places.map { place in
            Member(keyBytes: bytes[(base + place.key.lowerBound)..<(base + place.key.upperBound)],
                   raw: bytes[(base + place.value.lowerBound)..<(base + place.value.upperBound)],
                   span: (base + place.span.lowerBound)..<(base + place.span.upperBound))
        }
    }

    /// ``members(of:)`` as offsets in `bytes`, appended to `places`. False where ``members(of:)``
    /// gives nil. For hot paths that look up a few members and keep no slices.
    public static func memberOffsets(of bytes: UnsafeBufferPointer<UInt8>, into places: inout [Place]) -> Bool {
        var tokenizer = JSONTokenizer(bytes, maximumDepth: maximumDepth)
        do {
            tokenizer.skipWhitespace()
            guard tokenizer.peek == UInt8(ascii: "{") else { return false }
            if try tokenizer.open(depth: 1) {
                repeat {
                    let key = try tokenizer.key()
                    guard !key.hasEscapes else { return false }
                    let value = try tokenizer.skipValue(depth: 2)
                    places.append((key.body, value.range, key.range.lowerBound..<value.range.upperBound))
                } while try tokenizer.nextItem(closing: UInt8(ascii: "}"))
            }
            try tokenizer.end()
            return true
        } catch {
            return false
        }
    }

    /// Whether two of `places`' keys are the same bytes (an object that names a key twice: which
    /// one counts is the reader's policy).
    public static func repeatsKey(_ places: [Place], in bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        for index in places.indices {
            let key = UnsafeBufferPointer(rebasing: bytes[places[index].key])
            for earlier in places[..<index] where earlier.key.count == key.count
                && UnsafeBufferPointer(rebasing: bytes[earlier.key]).elementsEqual(key) {
                return true
            }
        }
        return false
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
        return body.withUnsafeBufferPointer(JSONTokenizer.holdsEscapeOrControl) ? nil : body
    }
}
