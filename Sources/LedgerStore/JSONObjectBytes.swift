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
        var scanner = Scanner(bytes: bytes)
        scanner.skipWhitespace()
        guard scanner.take(UInt8(ascii: "{")) else { return nil }
        var members: [Member] = []
        scanner.skipWhitespace()
        if !scanner.take(UInt8(ascii: "}")) {
            members.reserveCapacity(16)  // the ledger's objects: growing 1, 2, 4, 8 cost more than the scan
            while true {
                guard let (keyStart, rawKey) = scanner.takeKey() else { return nil }
                let valueStart = scanner.index
                guard scanner.skipValue(depth: 1) else { return nil }
                members.append(Member(keyBytes: rawKey, raw: bytes[valueStart..<scanner.index], span: keyStart..<scanner.index))
                scanner.skipWhitespace()
                if scanner.take(UInt8(ascii: ",")) { continue }
                guard scanner.take(UInt8(ascii: "}")) else { return nil }
                break
            }
        }
        scanner.skipWhitespace()
        return scanner.atEnd ? members : nil
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
        guard raw.count >= 2, raw.first == UInt8(ascii: "\""), raw.last == UInt8(ascii: "\""),
            !raw.contains(where: { $0 == UInt8(ascii: "\\") || $0 < 0x20 }) else { return nil }
        return raw.dropFirst().dropLast()
    }

    /// A cursor over JSON bytes that can step over whole values.
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

        mutating func skipWhitespace() {
            while let byte = peek, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
        }

        /// Reads a member's `"key" :` (whitespace around it skipped), leaving the scanner at its
        /// value: where the key starts (its opening quote) and its bytes between the quotes. Nil
        /// when it does not scan or the key has an escape (`"dev\u0069ce"` may spell a name the
        /// caller looks for; only a parser can say).
        mutating func takeKey() -> (start: Int, key: ArraySlice<UInt8>)? {
            skipWhitespace()
            let start = index
            guard skipString() else { return nil }
            let key = bytes[(start + 1)..<(index - 1)]
            guard !key.contains(UInt8(ascii: "\\")) else { return nil }
            skipWhitespace()
            guard take(UInt8(ascii: ":")) else { return nil }
            skipWhitespace()
            return (start, key)
        }

        /// Steps over a string, escapes included. (Strings are most of a payload's bytes: the
        /// loop runs over the buffer, without a slice's index checks on every byte.)
        mutating func skipString() -> Bool {
            guard take(UInt8(ascii: "\"")) else { return false }
            let base = bytes.startIndex
            let from = index - base
            let end: Int? = bytes.withUnsafeBufferPointer { buffer in
                var offset = from
                while offset < buffer.count {
                    let byte = buffer[offset]
                    if byte == UInt8(ascii: "\"") { return offset + 1 }
                    offset += byte == UInt8(ascii: "\\") ? 2 : 1
                }
                return nil
            }
            guard let end else {
                index = bytes.endIndex
                return false
            }
            index = base + end
            return true
        }

        /// Steps over any value: string, object, array, number or literal; false past
        /// ``JSONObjectBytes/maximumDepth``.
        mutating func skipValue(depth: Int) -> Bool {
            guard let byte = peek, depth <= JSONObjectBytes.maximumDepth else { return false }
            switch byte {
            case UInt8(ascii: "\""):
                return skipString()
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let close = byte == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
                index += 1
                skipWhitespace()
                if take(close) { return true }
                while true {
                    skipWhitespace()
                    if byte == UInt8(ascii: "{") {
                        guard skipString() else { return false }
                        skipWhitespace()
                        guard take(UInt8(ascii: ":")) else { return false }
                        skipWhitespace()
                    }
                    guard skipValue(depth: depth + 1) else { return false }
                    skipWhitespace()
                    if take(UInt8(ascii: ",")) { continue }
                    return take(close)
                }
            default:
                let start = index
                while let next = peek, next != UInt8(ascii: ","), next != UInt8(ascii: "}"), next != UInt8(ascii: "]"),
                    next != 0x20, next != 0x0A, next != 0x0D, next != 0x09
                {
                    index += 1
                }
                return index > start
            }
        }
    }
}
