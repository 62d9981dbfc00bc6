import Foundation

/// A JSON value as read by ``GAJSON``: numbers are kept as their exact source text, objects keep
/// their members in order.
///
/// Why not `JSONSerialization`: it turns numbers into `Double` (Google's `1432681913.123456` would
/// lose its microseconds, `99999999999999999999999` would silently round), it escapes `/`, it does
/// not keep key order (Google's golden body must be byte-exact), and very deep nesting can exhaust
/// the stack. This reader is strict RFC 8259, bounded in depth, and never traps on input.
/// Shared by the Google and Apple code (candidate for `Common/`).
enum GAJSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    /// The number's text exactly as it appeared (already checked against the JSON grammar).
    case number(String)
    case string(String)
    case array([GAJSONValue])
    case object([GAJSONMember])

    /// The value of the last member named `key` (duplicate keys: the last wins, as in most readers).
    subscript(key: String) -> GAJSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.last { $0.key == key }?.value
    }

    /// A short name of the value's JSON type, for error messages.
    var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }
}

/// One member of a JSON object.
struct GAJSONMember: Sendable, Hashable {
    var key: String
    var value: GAJSONValue
}

/// Strict, depth-bounded JSON reading and compact writing.
enum GAJSON {
    /// The deepest nesting any provider answer needs is 3 (Google: object → array → object); 32
    /// leaves room while keeping recursion shallow.
    static let defaultMaxDepth = 32

    /// Reads one JSON document. Errors are `malformedResponse` on `field` `$` with rule `not_json`
    /// (syntax, bad UTF-8) or `too_deep` (nesting beyond `maxDepth`).
    static func parse(
        _ data: Data, provider: Provider, maxDepth: Int = defaultMaxDepth
    ) throws(ProviderError) -> GAJSONValue {
        var reader = Reader(bytes: [UInt8](data), maxDepth: maxDepth)
        do throws(SyntaxError) {
            reader.skipByteOrderMark()
            reader.skipWhitespace()
            let value = try reader.readValue(depth: 0)
            reader.skipWhitespace()
            guard reader.atEnd else { throw SyntaxError(offset: reader.index, reason: "trailing characters") }
            return value
        } catch {
            let rule = error.tooDeep ? "too_deep" : "not_json"
            throw ProviderError(
                .malformedResponse, provider: provider, field: "$", rule: rule,
                message: "The answer is not valid JSON: \(error.reason) at byte \(error.offset).")
        }
    }

    private struct SyntaxError: Error {
        var offset: Int
        var reason: String
        var tooDeep = false
    }

    private struct Reader {
        let bytes: [UInt8]
        let maxDepth: Int
        var index = 0

        init(bytes: [UInt8], maxDepth: Int) {
            self.bytes = bytes
            self.maxDepth = maxDepth
        }

        var atEnd: Bool { index >= bytes.count }

        mutating func skipByteOrderMark() {
            if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { index = 3 }
        }

        mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        func fail(_ reason: String) -> SyntaxError { SyntaxError(offset: index, reason: reason) }

        mutating func readValue(depth: Int) throws(SyntaxError) -> GAJSONValue {
            guard index < bytes.count else { throw fail("unexpected end") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try readObject(depth: depth + 1)
            case UInt8(ascii: "["): return try readArray(depth: depth + 1)
            case UInt8(ascii: "\""): return .string(try readString())
            case UInt8(ascii: "t"): try readLiteral("true"); return .bool(true)
            case UInt8(ascii: "f"): try readLiteral("false"); return .bool(false)
            case UInt8(ascii: "n"): try readLiteral("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try readNumber())
            default: throw fail("unexpected character")
            }
        }

        mutating func readLiteral(_ word: String) throws(SyntaxError) {
            for byte in word.utf8 {
                guard index < bytes.count, bytes[index] == byte else { throw fail("bad literal") }
                index += 1
            }
        }

        mutating func readObject(depth: Int) throws(SyntaxError) -> GAJSONValue {
            guard depth <= maxDepth else {
                throw SyntaxError(offset: index, reason: "nesting deeper than \(maxDepth)", tooDeep: true)
            }
            index += 1
            var members: [GAJSONMember] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            while true {
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected key") }
                let key = try readString()
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                index += 1
                skipWhitespace()
                members.append(GAJSONMember(key: key, value: try readValue(depth: depth)))
                skipWhitespace()
                guard index < bytes.count else { throw fail("unexpected end") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
                throw fail("expected ',' or '}'")
            }
        }

        mutating func readArray(depth: Int) throws(SyntaxError) -> GAJSONValue {
            guard depth <= maxDepth else {
                throw SyntaxError(offset: index, reason: "nesting deeper than \(maxDepth)", tooDeep: true)
            }
            index += 1
            var items: [GAJSONValue] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(items)
            }
            while true {
                skipWhitespace()
                items.append(try readValue(depth: depth))
                skipWhitespace()
                guard index < bytes.count else { throw fail("unexpected end") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
                throw fail("expected ',' or ']'")
            }
        }

        mutating func readNumber() throws(SyntaxError) -> String {
            let start = index
            if bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("bad number") }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else {
                while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard index < bytes.count, isDigit(bytes[index]) else { throw fail("bad fraction") }
                while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                    index += 1
                }
                guard index < bytes.count, isDigit(bytes[index]) else { throw fail("bad exponent") }
                while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

        mutating func readString() throws(SyntaxError) -> String {
            index += 1  // opening quote
            var scalars = String.UnicodeScalarView()
            var raw: [UInt8] = []
            func flush() throws(SyntaxError) {
                guard !raw.isEmpty else { return }
                guard let text = String(validating: raw, as: UTF8.self) else {
                    throw SyntaxError(offset: index, reason: "invalid UTF-8")
                }
                scalars.append(contentsOf: text.unicodeScalars)
                raw.removeAll(keepingCapacity: true)
            }
            while true {
                guard index < bytes.count else { throw fail("unterminated string") }
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    index += 1
                    try flush()
                    return String(scalars)
                }
                if byte < 0x20 { throw fail("control character in string") }
                if byte != UInt8(ascii: "\\") {
                    raw.append(byte)
                    index += 1
                    continue
                }
                try flush()
                index += 1
                guard index < bytes.count else { throw fail("unterminated escape") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"): scalars.append(try readUnicodeEscape())
                default: throw fail("bad escape")
                }
            }
        }

        /// Reads the `XXXX` of `\uXXXX` (the `\u` already consumed), joining surrogate pairs.
        mutating func readUnicodeEscape() throws(SyntaxError) -> Unicode.Scalar {
            let high = try readHex4()
            if (0xD800...0xDBFF).contains(high) {
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                else { throw fail("lone surrogate") }
                index += 2
                let low = try readHex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw fail("bad surrogate pair") }
                let value = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                guard let scalar = Unicode.Scalar(value) else { throw fail("bad surrogate pair") }
                return scalar
            }
            guard let scalar = Unicode.Scalar(high) else { throw fail("lone surrogate") }
            return scalar
        }

        mutating func readHex4() throws(SyntaxError) -> UInt32 {
            guard index + 4 <= bytes.count else { throw fail("short \\u escape") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt32
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
                default: throw fail("bad \\u escape")
                }
                value = value * 16 + digit
                index += 1
            }
            return value
        }
    }
}
