import Foundation

/// The value readers of ``SKANJSONObject``'s cursor: strings, numbers, literals, nested values.
extension SKANJSONObject.Reader {
    typealias Failure = SKANJSONObject.Failure
    typealias Value = SKANJSONObject.Value

    mutating func value() throws(Failure) -> Value {
        guard let byte = peek() else { throw .syntax(offset: index) }
        switch byte {
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            try skipValue(depth: 0)
            return .nested
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        default: return .number(try number())
        }
    }

    mutating func literal(_ word: StaticString) throws(Failure) {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw .syntax(offset: index) }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { throw .syntax(offset: index) }
        index += count
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, returned as written.
    mutating func number() throws(Failure) -> String {
        let start = index
        func digits(_ reader: inout Self) -> Int {
            let from = reader.index
            while let byte = reader.peek(), (48...57).contains(byte) { reader.index += 1 }
            return reader.index - from
        }
        if peek() == UInt8(ascii: "-") { index += 1 }
        guard let first = peek(), (48...57).contains(first) else { throw .syntax(offset: index) }
        if first == UInt8(ascii: "0") { index += 1 } else { _ = digits(&self) }
        if peek() == UInt8(ascii: ".") {
            index += 1
            guard digits(&self) > 0 else { throw .syntax(offset: index) }
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            index += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { index += 1 }
            guard digits(&self) > 0 else { throw .syntax(offset: index) }
        }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
    }

    /// A string starting at the opening quote; escapes decoded, surrogate pairs joined,
    /// control characters and invalid UTF-8 refused.
    mutating func string() throws(Failure) -> String {
        index += 1
        let start = index
        // Fast path: no escapes; plain ASCII needs no UTF-8 validation.
        var ascii = true
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                if ascii { return String(decoding: slice, as: UTF8.self) }
                guard let text = String(validating: slice, as: UTF8.self) else { throw .syntax(offset: start) }
                return text
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            if byte >= 0x80 { ascii = false }
            index += 1
        }
        var scalars = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard let text = String(validating: scalars, as: UTF8.self) else { throw .syntax(offset: start) }
                return text
            case 0..<0x20:
                throw .syntax(offset: index - 1)
            case UInt8(ascii: "\\"):
                guard let escape = peek() else { throw .syntax(offset: index) }
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(escape)
                case UInt8(ascii: "b"): scalars.append(0x08)
                case UInt8(ascii: "f"): scalars.append(0x0C)
                case UInt8(ascii: "n"): scalars.append(0x0A)
                case UInt8(ascii: "r"): scalars.append(0x0D)
                case UInt8(ascii: "t"): scalars.append(0x09)
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800...0xDBFF).contains(code) {
                        guard peek() == UInt8(ascii: "\\") else { throw .syntax(offset: index) }
                        index += 1
                        guard peek() == UInt8(ascii: "u") else { throw .syntax(offset: index) }
                        index += 1
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw .syntax(offset: index) }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(code) {
                        throw .syntax(offset: index)
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw .syntax(offset: index) }
                    scalars.append(contentsOf: Array(String(Character(scalar)).utf8))
                default:
                    throw .syntax(offset: index - 1)
                }
            default:
                scalars.append(byte)
            }
        }
        throw .syntax(offset: index)
    }

    mutating func hex4() throws(Failure) -> UInt32 {
        guard index + 4 <= bytes.count else { throw .syntax(offset: index) }
        var code: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case 48...57: digit = byte - 48
            case 65...70: digit = byte - 55
            case 97...102: digit = byte - 87
            default: throw .syntax(offset: index)
            }
            code = code << 4 | UInt32(digit)
            index += 1
        }
        return code
    }

    /// Skips (and so validates) any value; nesting is limited to 64 levels.
    mutating func skipValue(depth: Int) throws(Failure) {
        guard depth < 64, let byte = peek() else { throw .syntax(offset: index) }
        switch byte {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            let close = byte == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
            index += 1
            skipSpace()
            if peek() == close {
                index += 1
                return
            }
            while true {
                skipSpace()
                if close == UInt8(ascii: "}") {
                    guard peek() == UInt8(ascii: "\"") else { throw .syntax(offset: index) }
                    _ = try string()
                    skipSpace()
                    guard peek() == UInt8(ascii: ":") else { throw .syntax(offset: index) }
                    index += 1
                    skipSpace()
                }
                try skipValue(depth: depth + 1)
                skipSpace()
                guard let next = peek() else { throw .syntax(offset: index) }
                index += 1
                if next == close { return }
                guard next == UInt8(ascii: ",") else { throw .syntax(offset: index - 1) }
            }
        default:
            _ = try value()
        }
    }
}
