import Foundation

/// A JSON value as read from (or written to) Branch and Singular, used by both providers' parsers
/// and by the Branch body builder.
///
/// Why not `JSONSerialization`: it cannot tell `true` from `1` on Linux (both bridge through
/// `NSNumber`), it turns large ids such as Branch's `~id` into doubles, and it recurses without a
/// depth limit. This reader keeps numbers as their text, refuses nesting deeper than
/// ``BSJSONReader/maxDepth`` and input larger than ``BSJSONReader/maxBytes``, and never traps.
indirect enum BSJSON: Sendable, Hashable {
    case null
    case bool(Bool)
    /// The number's text exactly as received (RFC 8259 grammar already checked).
    case number(String)
    case string(String)
    case array([BSJSON])
    case object([String: BSJSON])

    /// The compact JSON text of this value; object keys sorted so the output is reproducible.
    var serialized: String {
        var out = ""
        write(to: &out)
        return out
    }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .number(let text): out += text
        case .string(let text): BSJSON.writeString(text, to: &out)
        case .array(let items):
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                item.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { out += "," }
                BSJSON.writeString(key, to: &out)
                out += ":"
                members[key]?.write(to: &out)
            }
            out += "}"
        }
    }

    /// Writes `text` as a JSON string literal, escaping `"`, `\` and control characters.
    static func writeString(_ text: String, to out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16, uppercase: false)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    /// The value as an exact `Int64`, if it is a JSON number with an integral value in range
    /// (`7`, `7.0`, `7e0`); `nil` for fractions, huge numbers (`1e400`) and every other type.
    var integerValue: Int64? {
        guard case .number(let text) = self else { return nil }
        if let plain = Int64(text) { return plain }
        guard let decimal = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")),
            !decimal.isNaN
        else { return nil }
        var value = decimal
        var rounded = Decimal()
        NSDecimalRound(&rounded, &value, 0, .plain)
        guard rounded == decimal else { return nil }
        return Int64(rounded.description)
    }

    /// `true` when this is a JSON number (of any size).
    var isNumber: Bool {
        if case .number = self { return true }
        return false
    }
}

/// Why ``BSJSONReader`` refused its input: a stable rule and the byte offset.
struct BSJSONError: Error, Sendable, Hashable {
    /// `not_json`, `too_deep` or `too_large`.
    var rule: String
    var offset: Int
    var reason: String
}

/// A strict RFC 8259 reader. Never traps: every malformed input ends in a ``BSJSONError``.
struct BSJSONReader {
    /// Deeper nesting than this is refused (`too_deep`) before it can exhaust the stack; no
    /// answer of either provider nests more than four levels.
    static let maxDepth = 64
    /// Larger input is refused (`too_large`); both providers answer a few hundred bytes.
    static let maxBytes = 4 << 20

    private let bytes: [UInt8]
    private var index = 0

    private init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Parses one JSON text (any value at top level), allowing only whitespace around it.
    static func parse(_ data: Data) throws(BSJSONError) -> BSJSON {
        guard data.count <= maxBytes else {
            throw BSJSONError(rule: "too_large", offset: 0, reason: "more than \(maxBytes) bytes")
        }
        var reader = BSJSONReader([UInt8](data))
        reader.skipWhitespace()
        let value = try reader.readValue(depth: 0)
        reader.skipWhitespace()
        guard reader.index == reader.bytes.count else { throw reader.fail("text after the JSON value") }
        return value
    }

    /// Parses UTF-8 text.
    static func parse(_ text: String) throws(BSJSONError) -> BSJSON { try parse(Data(text.utf8)) }

    private func fail(_ reason: String, rule: String = "not_json") -> BSJSONError {
        BSJSONError(rule: rule, offset: index, reason: reason)
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
    }

    private mutating func expect(_ literal: String) throws(BSJSONError) {
        for byte in literal.utf8 {
            guard current == byte else { throw fail("expected \(literal)") }
            index += 1
        }
    }

    private mutating func readValue(depth: Int) throws(BSJSONError) -> BSJSON {
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

    private mutating func readObject(depth: Int) throws(BSJSONError) -> BSJSON {
        guard depth <= Self.maxDepth else { throw fail("nested deeper than \(Self.maxDepth)", rule: "too_deep") }
        index += 1
        var members: [String: BSJSON] = [:]
        skipWhitespace()
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
            members[key] = try readValue(depth: depth)
            skipWhitespace()
            guard let byte = current else { throw fail("unterminated object") }
            index += 1
            if byte == UInt8(ascii: "}") { return .object(members) }
            guard byte == UInt8(ascii: ",") else { throw fail("expected , or }") }
        }
    }

    private mutating func readArray(depth: Int) throws(BSJSONError) -> BSJSON {
        guard depth <= Self.maxDepth else { throw fail("nested deeper than \(Self.maxDepth)", rule: "too_deep") }
        index += 1
        var items: [BSJSON] = []
        skipWhitespace()
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

    private mutating func readNumber() throws(BSJSONError) -> String {
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

    private mutating func readString() throws(BSJSONError) -> String {
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

    private mutating func readHex4() throws(BSJSONError) -> UInt32 {
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

    /// Reads `XXXX` (and a following `\uXXXX` low surrogate when needed); lone surrogates refused.
    private mutating func readUnicodeEscape() throws(BSJSONError) -> [UInt8] {
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
