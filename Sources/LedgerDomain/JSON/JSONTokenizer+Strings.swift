/// Strings: checked at the byte level (escapes, surrogate pairs, UTF-8) while stepped over, and
/// decoded apart, only by readers that need the text.
extension JSONTokenizer {
    /// Reads the string that is next (its opening quote), checking every byte; its token's
    /// ``JSONToken/hasEscapes`` tells whether its body must be decoded.
    ///
    /// Runs of plain ASCII are stepped over eight bytes at a time (strings are most of a payload's
    /// bytes: a box's Base64, identifiers); a backslash, a control character or a non-ASCII byte
    /// stops the run and is read on its own.
    public mutating func string() throws(JSONSyntaxError) -> JSONToken {
        let start = offset
        guard take(UInt8(ascii: "\"")) else {
            guard let byte = peek else { throw fail(.unexpectedEnd) }
            throw fail(.unexpectedByte(byte))
        }
        var escaped = false
        let count = bytes.count
        let base = UnsafeRawPointer(bytes.baseAddress!)  // not empty: a quote was taken
        while true {
            while offset &+ 8 <= count, !Self.stopsPlainRun(base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) {
                offset &+= 8
            }
            guard offset < count else { throw fail(.unterminatedString, at: start) }
            let byte = bytes[offset]
            switch byte {
            case UInt8(ascii: "\""):
                offset += 1
                return JSONToken(kind: .string, range: start..<offset, hasEscapes: escaped)
            case UInt8(ascii: "\\"):
                escaped = true
                try escape()
            case 0..<0x20: throw fail(.controlCharacter)
            case 0x80...: try utf8Sequence()
            default: offset += 1
            }
        }
    }

    /// Whether any of the eight bytes of `word` is a quote, a backslash, a control character or
    /// not ASCII. (`(x - 0x01…) & ~x & 0x80…` is non-zero exactly when some byte of `x` is zero;
    /// with `n` in place of 1, when some byte is below `n`.)
    @inline(__always)
    static func stopsPlainRun(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        let quote = word ^ (ones &* 0x22), backslash = word ^ (ones &* 0x5C)
        let zeroed = ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | (word &- ones &* 0x20)
        return (zeroed | word) & highs != 0
    }

    /// Whether `body` holds a backslash or a control character: what makes a string's body
    /// differ from its text (or no string at all). Eight bytes at a time.
    public static func holdsEscapeOrControl(_ body: UnsafeBufferPointer<UInt8>) -> Bool {
        var offset = 0
        if let start = body.baseAddress.map(UnsafeRawPointer.init) {
            let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
            while offset &+ 8 <= body.count {
                let word = start.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                let backslash = word ^ (ones &* 0x5C)
                if (((backslash &- ones) & ~backslash) | ((word &- ones &* 0x20) & ~word)) & highs != 0 { return true }
                offset &+= 8
            }
        }
        while offset < body.count {
            if body[offset] == UInt8(ascii: "\\") || body[offset] < 0x20 { return true }
            offset += 1
        }
        return false
    }

    /// Checks the escape at the backslash that is next, stepping over it.
    private mutating func escape() throws(JSONSyntaxError) {
        offset += 1
        guard let byte = peek else { throw fail(.unterminatedString) }
        offset += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
             UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            return
        case UInt8(ascii: "u"):
            let code = try hex4()
            if (0xD800...0xDBFF).contains(code) {
                guard take(UInt8(ascii: "\\")), take(UInt8(ascii: "u")) else { throw fail(.unpairedSurrogate) }
                guard (0xDC00...0xDFFF).contains(try hex4()) else { throw fail(.unpairedSurrogate) }
            } else if (0xDC00...0xDFFF).contains(code) {
                throw fail(.unpairedSurrogate)
            }
        default: throw fail(.invalidEscape, at: offset - 1)
        }
    }

    /// Four hex digits.
    private mutating func hex4() throws(JSONSyntaxError) -> UInt32 {
        guard offset + 4 <= bytes.count else { throw fail(.invalidEscape) }
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = Self.hexValue(bytes[offset]) else { throw fail(.invalidEscape) }
            value = value << 4 | digit
            offset += 1
        }
        return value
    }

    private static func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a")) + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A")) + 10
        default: nil
        }
    }

    /// Checks the multi-byte UTF-8 sequence that is next (shortest form, no surrogates, at most
    /// U+10FFFF), stepping over it.
    private mutating func utf8Sequence() throws(JSONSyntaxError) {
        let lead = bytes[offset]
        var low: UInt8 = 0x80, high: UInt8 = 0xBF
        let following: Int
        switch lead {
        case 0xC2...0xDF: following = 1
        case 0xE0: following = 2; low = 0xA0
        case 0xED: following = 2; high = 0x9F
        case 0xE1...0xEF: following = 2
        case 0xF0: following = 3; low = 0x90
        case 0xF4: following = 3; high = 0x8F
        case 0xF1...0xF3: following = 3
        default: throw fail(.invalidUTF8)
        }
        guard offset + following < bytes.count, (low...high).contains(bytes[offset + 1]) else { throw fail(.invalidUTF8) }
        for index in stride(from: offset + 2, through: offset + following, by: 1) where !(0x80...0xBF).contains(bytes[index]) {
            throw fail(.invalidUTF8)
        }
        offset += following + 1
    }

    /// Appends the text of a string token's body (escapes decoded, as UTF-8) to `out`. The token
    /// must come from this tokenizer's buffer, which has checked it.
    public func decode(_ token: JSONToken, into out: inout [UInt8]) {
        let body = slice(token.body)
        guard token.hasEscapes else {
            out.append(contentsOf: body)
            return
        }
        var index = 0
        var plainStart = 0
        while index < body.count {
            guard body[index] == UInt8(ascii: "\\") else {
                index += 1
                continue
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: body[plainStart..<index]))
            let escaped = body[index + 1]
            index += 2
            switch escaped {
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var code = Self.hex4(body, at: index)
                index += 4
                if (0xD800...0xDBFF).contains(code) {
                    code = 0x10000 + ((code - 0xD800) << 10) + (Self.hex4(body, at: index + 2) - 0xDC00)
                    index += 6
                }
                UTF8.encode(Unicode.Scalar(code)!) { out.append($0) }
            default: out.append(escaped)  // " \ /
            }
            plainStart = index
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: body[plainStart..<index]))
    }

    private static func hex4(_ body: UnsafeBufferPointer<UInt8>, at index: Int) -> UInt32 {
        (index..<(index + 4)).reduce(0) { $0 << 4 | (hexValue(body[$1]) ?? 0) }
    }

    /// A string token's text, escapes decoded.
    public func text(_ token: JSONToken) -> String {
        guard token.hasEscapes else { return String(decoding: slice(token.body), as: UTF8.self) }
        var out: [UInt8] = []
        out.reserveCapacity(token.range.count)
        decode(token, into: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
