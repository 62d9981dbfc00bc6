import LedgerPostgres

extension JSONObjectBytes {
    /// The scanner's loops over a buffer: offsets checked against one count, no optional per byte.
    ///
    /// Stepping over a payload's members is most of opening an event and of a projection's quick
    /// reads; through an `ArraySlice` every byte paid an index check, an optional and a retained
    /// slice. ``Scanner`` and ``members(of:)`` run their scans here. It reads exactly what the
    /// scanner read before (a value is stepped over, not validated: a literal or number runs to the
    /// next delimiter).
    struct Cursor {
        let bytes: UnsafeBufferPointer<UInt8>
        /// The next byte to read, from the buffer's start.
        var offset: Int

        init(_ bytes: UnsafeBufferPointer<UInt8>, offset: Int = 0) {
            self.bytes = bytes
            self.offset = offset
        }

        var atEnd: Bool { offset >= bytes.count }

        mutating func take(_ byte: UInt8) -> Bool {
            guard offset < bytes.count, bytes[offset] == byte else { return false }
            offset += 1
            return true
        }

        mutating func skipWhitespace() {
            while offset < bytes.count {
                let byte = bytes[offset]
                guard byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { return }
                offset += 1
            }
        }

        /// Steps over a string, escapes included; at the end of the buffer when it is unterminated.
        /// Eight bytes are looked at a time until one of them is a quote or a backslash (strings
        /// are most of a payload's bytes: a box's Base64, identifiers).
        mutating func skipString() -> Bool {
            guard take(UInt8(ascii: "\"")) else { return false }
            let count = bytes.count
            let start = UnsafeRawPointer(bytes.baseAddress!)  // not empty: a quote was taken
            while true {
                while offset &+ 8 <= count,
                      !Self.hasByte(UInt8(ascii: "\""), or: UInt8(ascii: "\\"), in: start.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) {
                    offset &+= 8
                }
                guard offset < count else { break }
                let byte = bytes[offset]
                if byte == UInt8(ascii: "\"") {
                    offset += 1
                    return true
                }
                offset += byte == UInt8(ascii: "\\") ? 2 : 1
            }
            offset = count
            return false
        }

        /// Whether any of the eight bytes of `word` is `first` or `second`.
        @inline(__always)
        static func hasByte(_ first: UInt8, or second: UInt8, in word: UInt64) -> Bool {
            ByteWord.mask(of: first, in: word) | ByteWord.mask(of: second, in: word) != 0
        }

        /// Whether `bytes` hold a backslash or a control character (below 0x20): what makes a
        /// string's body something only a parser can read. Eight bytes at a time.
        static func holdsEscapeOrControl(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
            var offset = 0
            if let start = bytes.baseAddress.map(UnsafeRawPointer.init) {
                while offset &+ 8 <= bytes.count {
                    let word = start.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                    if ByteWord.mask(of: UInt8(ascii: "\\"), in: word) | ByteWord.mask(below: 0x20, in: word) != 0 { return true }
                    offset &+= 8
                }
            }
            while offset < bytes.count {
                if bytes[offset] == UInt8(ascii: "\\") || bytes[offset] < 0x20 { return true }
                offset += 1
            }
            return false
        }

        /// Reads a member's `"key" :`, leaving the cursor at its value: where the key starts (its
        /// opening quote) and its bytes between the quotes. Nil when it does not scan or the key
        /// has an escape.
        mutating func takeKey() -> (start: Int, key: Range<Int>)? {
            skipWhitespace()
            let start = offset
            guard skipString() else { return nil }
            let key = (start + 1)..<(offset - 1)
            for index in key where bytes[index] == UInt8(ascii: "\\") { return nil }
            skipWhitespace()
            guard take(UInt8(ascii: ":")) else { return nil }
            skipWhitespace()
            return (start, key)
        }

        /// Steps over any value: string, object, array, number or literal; false past
        /// ``JSONObjectBytes/maximumDepth``.
        mutating func skipValue(depth: Int) -> Bool {
            guard offset < bytes.count, depth <= JSONObjectBytes.maximumDepth else { return false }
            let byte = bytes[offset]
            switch byte {
            case UInt8(ascii: "\""):
                return skipString()
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let close = byte == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
                offset += 1
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
                let start = offset
                while offset < bytes.count {
                    let next = bytes[offset]
                    if next == UInt8(ascii: ",") || next == UInt8(ascii: "}") || next == UInt8(ascii: "]")
                        || next == 0x20 || next == 0x0A || next == 0x0D || next == 0x09 { break }
                    offset += 1
                }
                return offset > start
            }
        }

        /// The members of the object that is all of the buffer (whitespace aside), as offsets:
        /// key (between its quotes), value, and span (key's quote to value's end). Nil as
        /// ``JSONObjectBytes/members(of:)``.
        static func memberOffsets(of bytes: UnsafeBufferPointer<UInt8>,
                                  into places: inout [(key: Range<Int>, value: Range<Int>, span: Range<Int>)]) -> Bool {
            var cursor = Cursor(bytes)
            cursor.skipWhitespace()
            guard cursor.take(UInt8(ascii: "{")) else { return false }
            cursor.skipWhitespace()
            if !cursor.take(UInt8(ascii: "}")) {
                while true {
                    guard let (keyStart, key) = cursor.takeKey() else { return false }
                    let valueStart = cursor.offset
                    guard cursor.skipValue(depth: 1) else { return false }
                    places.append((key, valueStart..<cursor.offset, keyStart..<cursor.offset))
                    cursor.skipWhitespace()
                    if cursor.take(UInt8(ascii: ",")) { continue }
                    guard cursor.take(UInt8(ascii: "}")) else { return false }
                    break
                }
            }
            cursor.skipWhitespace()
            return cursor.atEnd
        }
    }
}
