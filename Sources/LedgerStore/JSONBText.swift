/// The text PostgreSQL prints for a JSON value stored as `jsonb` (`$1::jsonb::text`), worked
/// out in Swift: what an event's hash covers for its `data` and `metadata`, so the store can
/// compute the hash itself (``EventHash``) without asking the database to print the payload.
///
/// `jsonb` keeps a value's meaning, not its text. It prints objects with their keys sorted by
/// byte length, then bytewise (and each key once), `", "` between members and elements,
/// `": "` after a key, no other whitespace, strings with only `"`, `\`, and the control
/// characters escaped (`\b \f \n \r \t`, the rest as lowercase `\u00XX`), every other
/// character as UTF-8, and numbers as `numeric` prints them.
///
/// It answers only where it is certain to agree with PostgreSQL, and nil otherwise: a number
/// with an exponent or `-0` forms (which `numeric` rewrites), a key that appears twice, escapes
/// `jsonb` refuses or treats specially (`\u0000`, lone surrogates), bytes that are not JSON,
/// nesting deeper than ``maximumDepth``. (Its input is a `String`, so valid UTF-8 already.) Callers then let the database do the work.
/// Tests compare it with PostgreSQL's own printing (`JSONBTextTests`).
enum JSONBText {
    /// Nesting deeper than this is left to the database (the recursion stays small).
    static let maximumDepth = 64

    /// `jsonb`'s text for the JSON value that is all of `text` (whitespace aside), as UTF-8; nil
    /// when it cannot be certain (see the type's notes).
    static func canonical(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { buffer in
            var parser = Parser(bytes: buffer)
            var output: [UInt8] = []
            output.reserveCapacity(buffer.count + buffer.count / 8)
            guard parser.value(into: &output, depth: 0) else { return nil }
            parser.skipWhitespace()
            return parser.index == buffer.count ? output : nil
        }
    }

    private struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        init(bytes: UnsafeBufferPointer<UInt8>) {
            self.bytes = bytes
        }

        mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        /// Reads one value and appends its `jsonb` text; false when uncertain or not JSON.
        mutating func value(into output: inout [UInt8], depth: Int) -> Bool {
            skipWhitespace()
            guard index < bytes.count else { return false }
            switch bytes[index] {
            case UInt8(ascii: "{"): return object(into: &output, depth: depth + 1)
            case UInt8(ascii: "["): return array(into: &output, depth: depth + 1)
            case UInt8(ascii: "\""):
                output.append(UInt8(ascii: "\""))
                let start = output.count
                guard string(into: &output) else { return false }
                Self.escape(from: start, in: &output)
                return true
            case UInt8(ascii: "t"): return literal("true".utf8, into: &output)
            case UInt8(ascii: "f"): return literal("false".utf8, into: &output)
            case UInt8(ascii: "n"): return literal("null".utf8, into: &output)
            default: return number(into: &output)
            }
        }

        mutating func literal(_ word: String.UTF8View, into output: inout [UInt8]) -> Bool {
            let count = word.count
            guard index + count <= bytes.count, bytes[index..<(index + count)].elementsEqual(word) else { return false }
            output.append(contentsOf: word)
            index += count
            return true
        }

        /// Members sorted as `jsonb` stores them: by key length in bytes, then bytewise. Keys
        /// (unescaped) and values (printed) go to one scratch buffer, then out in order.
        mutating func object(into output: inout [UInt8], depth: Int) -> Bool {
            guard depth <= JSONBText.maximumDepth else { return false }
            index += 1  // {
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                output.append(UInt8(ascii: "{"), UInt8(ascii: "}"))
                return true
            }
            var scratch: [UInt8] = []
            scratch.reserveCapacity(256)
            var members: [(key: Range<Int>, value: Range<Int>)] = []
            members.reserveCapacity(16)
            while true {
                skipWhitespace()
                let keyStart = scratch.count
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), string(into: &scratch) else { return false }
                let key = keyStart..<scratch.count
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return false }
                index += 1
                let valueStart = scratch.count
                guard value(into: &scratch, depth: depth) else { return false }
                members.append((key, valueStart..<scratch.count))
                skipWhitespace()
                guard index < bytes.count else { return false }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "}") else { return false }
                index += 1
                break
            }
            // Through the scratch buffer's memory: slices of the array would each retain it.
            return scratch.withUnsafeBufferPointer { scratch in
                func bytes(_ range: Range<Int>) -> UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: scratch[range]) }
                members.sort { a, b in
                    a.key.count != b.key.count ? a.key.count < b.key.count : bytes(a.key).lexicographicallyPrecedes(bytes(b.key))
                }
                // A repeated key: jsonb keeps one of them; let it say which.
                for position in members.indices.dropFirst()
                where bytes(members[position].key).elementsEqual(bytes(members[position - 1].key)) {
                    return false
                }
                output.append(UInt8(ascii: "{"))
                for (position, member) in members.enumerated() {
                    if position > 0 { output.append(UInt8(ascii: ","), UInt8(ascii: " ")) }
                    output.append(UInt8(ascii: "\""))
                    let keyStart = output.count
                    output.append(contentsOf: bytes(member.key))
                    Self.escape(from: keyStart, in: &output)
                    output.append(UInt8(ascii: ":"), UInt8(ascii: " "))
                    output.append(contentsOf: bytes(member.value))
                }
                output.append(UInt8(ascii: "}"))
                return true
            }
        }

        mutating func array(into output: inout [UInt8], depth: Int) -> Bool {
            guard depth <= JSONBText.maximumDepth else { return false }
            index += 1  // [
            output.append(UInt8(ascii: "["))
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                output.append(UInt8(ascii: "]"))
                return true
            }
            var first = true
            while true {
                if !first { output.append(UInt8(ascii: ","), UInt8(ascii: " ")) }
                first = false
                guard value(into: &output, depth: depth) else { return false }
                skipWhitespace()
                guard index < bytes.count else { return false }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "]") else { return false }
                index += 1
                output.append(UInt8(ascii: "]"))
                return true
            }
        }

        /// Appends a string's content, unescaped, as UTF-8 (the index on its opening quote).
        mutating func string(into content: inout [UInt8]) -> Bool {
            index += 1  // "
            var plainStart = index
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    content.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[plainStart..<index]))
                    index += 1
                    return true
                }
                if byte < 0x20 { return false }  // raw control characters are not JSON
                // Bytes of a multi-byte character (≥ 0x80) are taken as they are: a `String`'s
                // UTF-8 is valid.
                guard byte == UInt8(ascii: "\\") else {
                    index += 1
                    continue
                }
                content.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[plainStart..<index]))
                index += 1
                guard index < bytes.count else { return false }
                let escaped = bytes[index]
                index += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): content.append(escaped)
                case UInt8(ascii: "b"): content.append(0x08)
                case UInt8(ascii: "f"): content.append(0x0C)
                case UInt8(ascii: "n"): content.append(0x0A)
                case UInt8(ascii: "r"): content.append(0x0D)
                case UInt8(ascii: "t"): content.append(0x09)
                case UInt8(ascii: "u"):
                    guard let scalar = unicodeEscape() else { return false }
                    UTF8.encode(scalar) { content.append($0) }
                default: return false
                }
                plainStart = index
            }
            return false
        }

        /// `\uXXXX` (the index after its `u`), a surrogate pair taken whole; nil for `\u0000`
        /// (jsonb refuses it) and lone surrogates.
        mutating func unicodeEscape() -> Unicode.Scalar? {
            guard let high = hex4() else { return nil }
            if (0xD800...0xDBFF).contains(high) {
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else { return nil }
                index += 2
                guard let low = hex4(), (0xDC00...0xDFFF).contains(low) else { return nil }
                return Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
            }
            guard high != 0, !(0xDC00...0xDFFF).contains(high) else { return nil }
            return Unicode.Scalar(high)
        }

        mutating func hex4() -> UInt32? {
            guard index + 4 <= bytes.count else { return nil }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt32
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
                default: return nil
                }
                value = value << 4 | digit
                index += 1
            }
            return value
        }

        /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?`, written as it is read (`numeric` keeps the digits and
        /// the scale). An exponent, or a negative zero (`numeric` drops its sign), is left to
        /// the database.
        mutating func number(into output: inout [UInt8]) -> Bool {
            let start = index
            var nonZeroDigit = false
            if bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, Self.isDigit(bytes[index]) else { return false }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else {
                while index < bytes.count, Self.isDigit(bytes[index]) {
                    nonZeroDigit = true
                    index += 1
                }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard index < bytes.count, Self.isDigit(bytes[index]) else { return false }
                while index < bytes.count, Self.isDigit(bytes[index]) {
                    if bytes[index] != UInt8(ascii: "0") { nonZeroDigit = true }
                    index += 1
                }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") { return false }
            if bytes[start] == UInt8(ascii: "-"), !nonZeroDigit { return false }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
            return true
        }

        static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

        /// `escape_json` on the string content at `start…` of `output`, in place, after the
        /// opening quote the caller wrote at `start - 1`, and closes it: `"` and `\` escaped,
        /// `\b \f \n \r \t` by name, other control characters as `\u00xx` (lowercase), everything
        /// else as it is.
        static func escape(from start: Int, in output: inout [UInt8]) {
            let plain = output.withUnsafeBufferPointer { output in
                !output[start...].contains { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }
            }
            if plain {
                output.append(UInt8(ascii: "\""))
                return
            }
            let content = Array(output[start...])
            output.removeSubrange(start...)
            for byte in content {
                switch byte {
                case 0x08: output.append(UInt8(ascii: "\\"), UInt8(ascii: "b"))
                case 0x0C: output.append(UInt8(ascii: "\\"), UInt8(ascii: "f"))
                case 0x0A: output.append(UInt8(ascii: "\\"), UInt8(ascii: "n"))
                case 0x0D: output.append(UInt8(ascii: "\\"), UInt8(ascii: "r"))
                case 0x09: output.append(UInt8(ascii: "\\"), UInt8(ascii: "t"))
                case UInt8(ascii: "\""): output.append(UInt8(ascii: "\\"), UInt8(ascii: "\""))
                case UInt8(ascii: "\\"): output.append(UInt8(ascii: "\\"), UInt8(ascii: "\\"))
                case 0..<0x20:
                    let hex = Array("0123456789abcdef".utf8)
                    output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                               hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
                default: output.append(byte)
                }
            }
            output.append(UInt8(ascii: "\""))
        }
    }
}

extension [UInt8] {
    /// Appends two bytes (a separator or an escape) without building an array for them.
    fileprivate mutating func append(_ first: UInt8, _ second: UInt8) {
        append(first)
        append(second)
    }
}
