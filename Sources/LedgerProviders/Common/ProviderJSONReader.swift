import Foundation

/// Why ``ProviderJSONReader`` refused its input: a stable rule and the byte offset.
package struct ProviderJSONSyntaxError: Error, Sendable, Hashable {
    /// `not_json` (syntax, bad UTF-8), `too_deep` (nesting beyond the limit) or `too_large`.
    package var rule: String
    /// The byte offset where reading stopped.
    package var offset: Int
    /// What was wrong there, for people.
    package var reason: String
}

/// A strict RFC 8259 reader for providers' answers. It never traps: every malformed input ends in
/// a ``ProviderJSONSyntaxError``, nesting is bounded before it can exhaust the stack, and numbers
/// are kept as their text. (`package`: the HTTP API reads request bodies with it too.)
package struct ProviderJSONReader {
    /// How much a caller accepts.
    package struct Limits: Sendable {
        /// Deeper nesting is refused (`too_deep`).
        var maxDepth: Int
        /// Larger input is refused (`too_large`) before it is read; `nil` for no limit.
        var maxBytes: Int?
        /// Whether a leading UTF-8 byte order mark is stepped over (RFC 8259 §8.1 lets a reader
        /// ignore it) rather than refused.
        var skipsByteOrderMark: Bool

        /// Limits with these values.
        package init(maxDepth: Int, maxBytes: Int?, skipsByteOrderMark: Bool) {
            self.maxDepth = maxDepth
            self.maxBytes = maxBytes
            self.skipsByteOrderMark = skipsByteOrderMark
        }

        /// Google and Apple: the deepest answer needs 3 levels (object → array → object); 32
        /// leaves room while keeping recursion shallow. A BOM is stepped over.
        static let googleApple = Limits(maxDepth: 32, maxBytes: nil, skipsByteOrderMark: true)
        /// Branch and Singular: no answer nests more than four levels and both answer a few
        /// hundred bytes, so 64 levels and 4 MiB. A BOM is refused.
        static let branchSingular = Limits(maxDepth: 64, maxBytes: 4 << 20, skipsByteOrderMark: false)
    }

    private let bytes: [UInt8]
    private let maxDepth: Int
    private var index = 0

    private init(_ bytes: [UInt8], maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    /// Parses one JSON text (any value at top level), allowing only whitespace around it.
    package static func parse(_ data: Data, limits: Limits) throws(ProviderJSONSyntaxError) -> ProviderJSON {
        if let maxBytes = limits.maxBytes, data.count > maxBytes {
            throw ProviderJSONSyntaxError(rule: "too_large", offset: 0, reason: "more than \(maxBytes) bytes")
        }
        var reader = ProviderJSONReader([UInt8](data), maxDepth: limits.maxDepth)
        if limits.skipsByteOrderMark, reader.bytes.starts(with: [0xEF, 0xBB, 0xBF]) { reader.index = 3 }
        reader.skipWhitespace()
        let value = try reader.readValue(depth: 0)
        reader.skipWhitespace()
        guard reader.index == reader.bytes.count else { throw reader.fail("text after the JSON value") }
        return value
    }

    /// Parses UTF-8 text.
    static func parse(_ text: String, limits: Limits) throws(ProviderJSONSyntaxError) -> ProviderJSON {
        try parse(Data(text.utf8), limits: limits)
    }

    private func fail(_ reason: String, rule: String = "not_json") -> ProviderJSONSyntaxError {
        ProviderJSONSyntaxError(rule: rule, offset: index, reason: reason)
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
    }

    private mutating func expect(_ literal: String) throws(ProviderJSONSyntaxError) {
        for byte in literal.utf8 {
            guard current == byte else { throw fail("expected \(literal)") }
            index += 1
        }
    }

    private mutating func readValue(depth: Int) throws(ProviderJSONSyntaxError) -> ProviderJSON {
        guard let byte = current else { throw fail("unexpected end of input") }
        switch byte {
        case UInt8(ascii: "{"): return try readObject(depth: depth + 1)
        case UInt8(ascii: "["): return try readArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try readString())
        case UInt8(ascii: "t"):
            try expect("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expect("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expect("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try readNumber())
        default: throw fail("unexpected byte \(byte)")
        }
    }

    private mutating func enter(depth: Int) throws(ProviderJSONSyntaxError) {
        guard depth <= maxDepth else { throw fail("nested deeper than \(maxDepth)", rule: "too_deep") }
        index += 1
        skipWhitespace()
    }

    private mutating func readObject(depth: Int) throws(ProviderJSONSyntaxError) -> ProviderJSON {
        try enter(depth: depth)
        var members: [ProviderJSONMember] = []
        if current == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw fail("expected a key") }
            let key = try readString()
            skipWhitespace()
            try expect(":")
            skipWhitespace()
            members.append(ProviderJSONMember(key: key, value: try readValue(depth: depth)))
            skipWhitespace()
            guard let byte = current else { throw fail("unterminated object") }
            index += 1
            if byte == UInt8(ascii: "}") { return .object(members) }
            guard byte == UInt8(ascii: ",") else { throw fail("expected , or }") }
        }
    }

    private mutating func readArray(depth: Int) throws(ProviderJSONSyntaxError) -> ProviderJSON {
        try enter(depth: depth)
        var items: [ProviderJSON] = []
        if current == UInt8(ascii: "]") {
            index += 1
            return .array(items)
        }
        while true {
            skipWhitespace()
            items.append(try readValue(depth: depth))
            skipWhitespace()
            guard let byte = current else { throw fail("unterminated array") }
            index += 1
            if byte == UInt8(ascii: "]") { return .array(items) }
            guard byte == UInt8(ascii: ",") else { throw fail("expected , or ]") }
        }
    }

    private mutating func readNumber() throws(ProviderJSONSyntaxError) -> String {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        guard let first = current, isDigit(first) else { throw fail("expected a digit") }
        index += 1
        if first != UInt8(ascii: "0") { while let byte = current, isDigit(byte) { index += 1 } }
        if current == UInt8(ascii: ".") {
            index += 1
            guard let byte = current, isDigit(byte) else { throw fail("expected a digit after .") }
            while let byte = current, isDigit(byte) { index += 1 }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard let byte = current, isDigit(byte) else { throw fail("expected an exponent digit") }
            while let byte = current, isDigit(byte) { index += 1 }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    /// Reads a string literal; its bytes, escapes decoded, must be valid UTF-8.
    private mutating func readString() throws(ProviderJSONSyntaxError) -> String {
        index += 1  // opening quote
        var raw: [UInt8] = []
        while true {
            guard let byte = current else { throw fail("unterminated string") }
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard let text = String(validating: raw, as: UTF8.self) else { throw fail("invalid UTF-8") }
                return text
            case UInt8(ascii: "\\"):
                guard let escaped = current else { throw fail("unterminated escape") }
                index += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): raw.append(escaped)
                case UInt8(ascii: "b"): raw.append(0x08)
                case UInt8(ascii: "f"): raw.append(0x0C)
                case UInt8(ascii: "n"): raw.append(0x0A)
                case UInt8(ascii: "r"): raw.append(0x0D)
                case UInt8(ascii: "t"): raw.append(0x09)
                case UInt8(ascii: "u"): raw.append(contentsOf: try readUnicodeEscape())
                default: throw fail("unknown escape")
                }
            case 0x00..<0x20: throw fail("control character in string")
            default: raw.append(byte)
            }
        }
    }

    private mutating func readHex4() throws(ProviderJSONSyntaxError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = current else { throw fail("short \\u escape") }
            index += 1
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a")) + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A")) + 10
            default: throw fail("bad hex digit")
            }
            value = value << 4 | digit
        }
        return value
    }

    /// Reads `XXXX` (and a following `\uXXXX` low surrogate when needed) as UTF-8; a lone
    /// surrogate is refused.
    private mutating func readUnicodeEscape() throws(ProviderJSONSyntaxError) -> [UInt8] {
        var code = try readHex4()
        if (0xD800...0xDBFF).contains(code) {
            try expect("\\u")
            let low = try readHex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw fail("unpaired surrogate") }
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(code) {
            throw fail("unpaired surrogate")
        }
        guard let scalar = Unicode.Scalar(code) else { throw fail("invalid code point") }
        return Array(String(Character(scalar)).utf8)
    }
}
