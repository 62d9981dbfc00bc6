import LedgerDomain

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
/// nesting deeper than ``maximumDepth``. It reads through ``JSONTokenizer``. Callers then let the database do the work.
/// Tests compare it with PostgreSQL's own printing (`JSONBTextTests`).
enum JSONBText {
    /// Nesting deeper than this is left to the database (the recursion stays small).
    static let maximumDepth = 64

    /// `jsonb`'s text for the JSON value that is all of `text` (whitespace aside), as UTF-8; nil
    /// when it cannot be certain (see the type's notes).
    static func canonical(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { buffer in
            var tokenizer = JSONTokenizer(buffer, maximumDepth: maximumDepth)
            var output: [UInt8] = []
            output.reserveCapacity(buffer.count + buffer.count / 8)
            do {
                tokenizer.skipWhitespace()
                guard try value(&tokenizer, into: &output, depth: 1) else { return nil }
                try tokenizer.end()
                return output
            } catch {
                return nil
            }
        }
    }

    /// Reads one value and appends its `jsonb` text; false when uncertain, a throw when not JSON.
    private static func value(_ tokenizer: inout JSONTokenizer, into output: inout [UInt8], depth: Int) throws(JSONSyntaxError) -> Bool {
        switch tokenizer.peek {
        case UInt8(ascii: "{"): return try object(&tokenizer, into: &output, depth: depth)
        case UInt8(ascii: "["):
            output.append(UInt8(ascii: "["))
            if try tokenizer.open(depth: depth) {
                var first = true
                repeat {
                    if !first { output.append(UInt8(ascii: ","), UInt8(ascii: " ")) }
                    first = false
                    guard try value(&tokenizer, into: &output, depth: depth + 1) else { return false }
                } while try tokenizer.nextItem(closing: UInt8(ascii: "]"))
            }
            output.append(UInt8(ascii: "]"))
            return true
        default:
            let token = try tokenizer.scalar()
            switch token.kind {
            case .string:
                output.append(UInt8(ascii: "\""))
                let start = output.count
                guard decode(token, tokenizer, into: &output) else { return false }
                escape(from: start, in: &output)
                return true
            case .number:
                let number = tokenizer.slice(token.range)
                guard isPrintedAsWritten(number) else { return false }
                output.append(contentsOf: number)
                return true
            case .true, .false, .null, .object, .array:
                output.append(contentsOf: tokenizer.slice(token.range))
                return true
            }
        }
    }

    /// Appends a string's content, unescaped; false for `\u0000`, which jsonb refuses (a raw NUL
    /// cannot be in a checked string, so a decoded one came from that escape).
    private static func decode(_ token: JSONToken, _ tokenizer: JSONTokenizer, into content: inout [UInt8]) -> Bool {
        let start = content.count
        tokenizer.decode(token, into: &content)
        return !token.hasEscapes || !content[start...].contains(0)
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?` is printed as it is read (`numeric` keeps the digits and the
    /// scale). An exponent, or a negative zero (`numeric` drops its sign), is left to the database.
    private static func isPrintedAsWritten(_ number: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !number.contains(UInt8(ascii: "e")), !number.contains(UInt8(ascii: "E")) else { return false }
        return number.first != UInt8(ascii: "-") || number.contains { $0 >= UInt8(ascii: "1") && $0 <= UInt8(ascii: "9") }
    }

    /// Members sorted as `jsonb` stores them: by key length in bytes, then bytewise. Keys
    /// (unescaped) and values (printed) go to one scratch buffer, then out in order.
    private static func object(_ tokenizer: inout JSONTokenizer, into output: inout [UInt8], depth: Int) throws(JSONSyntaxError) -> Bool {
        guard try tokenizer.open(depth: depth) else {
            output.append(UInt8(ascii: "{"), UInt8(ascii: "}"))
            return true
        }
        var scratch: [UInt8] = []
        scratch.reserveCapacity(256)
        var members: [(key: Range<Int>, value: Range<Int>)] = []
        members.reserveCapacity(16)
        repeat {
            let keyStart = scratch.count
            guard decode(try tokenizer.key(), tokenizer, into: &scratch) else { return false }
            let valueStart = scratch.count
            guard try value(&tokenizer, into: &scratch, depth: depth + 1) else { return false }
            members.append((keyStart..<valueStart, valueStart..<scratch.count))
        } while try tokenizer.nextItem(closing: UInt8(ascii: "}"))
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
                escape(from: keyStart, in: &output)
                output.append(UInt8(ascii: ":"), UInt8(ascii: " "))
                output.append(contentsOf: bytes(member.value))
            }
            output.append(UInt8(ascii: "}"))
            return true
        }
    }

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

extension [UInt8] {
    /// Appends two bytes (a separator or an escape) without building an array for them.
    fileprivate mutating func append(_ first: UInt8, _ second: UInt8) {
        append(first)
        append(second)
    }
}
