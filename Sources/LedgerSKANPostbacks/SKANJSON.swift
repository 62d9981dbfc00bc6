import Foundation

/// A strict RFC 8259 reader for one JSON object, made for postbacks: it keeps each top-level
/// member's value as its literal text (a signature covers values as written, so `525463029`
/// must stay `525463029`), refuses a key that appears twice (two readers could otherwise see two
/// different postbacks in one text), and validates nested values without keeping them.
///
/// It reads a postback in a few microseconds, a small share of the signature check it precedes.
struct SKANJSONObject {
    /// A top-level member's value.
    enum Value: Equatable {
        /// A string, unescaped.
        case string(String)
        /// A number, as its literal text (`525463029`, `1.5`, `-0`).
        case number(String)
        /// `true` or `false`.
        case bool(Bool)
        /// `null`.
        case null
        /// An object or array (not kept).
        case nested

        /// The JSON type's name, for errors.
        var typeName: String {
            switch self {
            case .string: "string"
            case .number: "number"
            case .bool: "boolean"
            case .null: "null"
            case .nested: "object or array"
            }
        }
    }

    /// Why a text is not one JSON object.
    enum Failure: Error, Equatable {
        /// Not JSON (at byte offset).
        case syntax(offset: Int)
        /// JSON, but not an object.
        case notAnObject
        /// A key appears twice.
        case duplicateKey(String)
    }

    /// The postback fields, recognised by their bytes while reading (no key string is made and
    /// no key hashed: this is most of the speed).
    enum Key: Int, CaseIterable {
        /// `version`.
        case version
        /// `ad-network-id`.
        case adNetworkID
        /// `source-identifier`.
        case sourceIdentifier
        /// `campaign-id`.
        case campaignID
        /// `app-id`.
        case appID
        /// `transaction-id`.
        case transactionID
        /// `redownload`.
        case redownload
        /// `source-app-id`.
        case sourceAppID
        /// `source-domain`.
        case sourceDomain
        /// `fidelity-type`.
        case fidelityType
        /// `did-win`.
        case didWin
        /// `postback-sequence-index`.
        case postbackSequenceIndex
        /// `conversion-value`.
        case conversionValue
        /// `coarse-conversion-value`.
        case coarseConversionValue
        /// `country-code`.
        case countryCode
        /// `attribution-signature`.
        case attributionSignature

        /// The JSON name.
        var name: String { SKANJSONObject.knownKeys[rawValue] }
    }

    /// The JSON names of ``Key``, in its order.
    static let knownKeys: [String] = [
        "version",
        "ad-network-id",
        "source-identifier",
        "campaign-id",
        "app-id",
        "transaction-id",
        "redownload",
        "source-app-id",
        "source-domain",
        "fidelity-type",
        "did-win",
        "postback-sequence-index",
        "conversion-value",
        "coarse-conversion-value",
        "country-code",
        "attribution-signature",
    ]
    static let knownKeyBytes: [[UInt8]] = knownKeys.map { Array($0.utf8) }

    /// Values of ``knownKeys``, by index.
    let known: [Value?]
    /// Other members, in the order written.
    let others: [(key: String, value: Value)]

    /// The value of the member called `key`.
    subscript(key: String) -> Value? {
        if let index = Self.knownKeys.firstIndex(of: key) { return known[index] }
        for member in others where member.key == key { return member.value }
        return nil
    }

    /// The value of a known key.
    subscript(key: Key) -> Value? { known[key.rawValue] }

    /// Parses `bytes` (UTF-8 already checked by the caller, or not: invalid UTF-8 in a string is
    /// a syntax error here too).
    init(parsing bytes: Data) throws(Failure) {
        let result = bytes.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) -> Result<Reader, Failure> in
            var reader = Reader(bytes: buffer.bindMemory(to: UInt8.self))
            return Result { () throws(Failure) -> Reader in
                try reader.topLevelObject()
                return reader
            }
        }
        let reader = try result.get()
        known = reader.known
        others = reader.others
    }

    /// The cursor.
    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0
        var known = [Value?](repeating: nil, count: SKANJSONObject.knownKeys.count)
        var others: [(key: String, value: Value)] = []

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        /// The index of the known key spelled by `bytes[range]`, if it is one.
        func knownKey(_ range: Range<Int>) -> Int? {
            for (number, key) in SKANJSONObject.knownKeyBytes.enumerated() where key.count == range.count {
                if key.withUnsafeBufferPointer({ memcmp($0.baseAddress!, bytes.baseAddress! + range.lowerBound, range.count) == 0 }) {
                    return number
                }
            }
            return nil
        }

        /// Stores a member: `keyBytes` spell a plain key, `escapedKey` is a key written with escapes.
        mutating func add(_ value: Value, keyBytes: Range<Int>?, escapedKey: String?) throws(Failure) {
            if let keyBytes, let number = knownKey(keyBytes) {
                guard known[number] == nil else { throw .duplicateKey(SKANJSONObject.knownKeys[number]) }
                known[number] = value
                return
            }
            let name = escapedKey ?? keyBytes.map { String(decoding: UnsafeBufferPointer(rebasing: bytes[$0]), as: UTF8.self) } ?? ""
            if let number = SKANJSONObject.knownKeys.firstIndex(of: name) {  // a known key written with escapes
                guard known[number] == nil else { throw .duplicateKey(name) }
                known[number] = value
                return
            }
            for member in others where member.key == name { throw .duplicateKey(name) }
            others.append((name, value))
        }

        mutating func topLevelObject() throws(Failure) {
            skipSpace()
            guard index < bytes.count else { throw .syntax(offset: index) }
            guard bytes[index] == UInt8(ascii: "{") else {
                // Tell "valid JSON, not an object" from "not JSON".
                try skipValue(depth: 0)
                skipSpace()
                guard index == bytes.count else { throw .syntax(offset: index) }
                throw .notAnObject
            }
            index += 1
            skipSpace()
            if peek() == UInt8(ascii: "}") {
                index += 1
            } else {
                while true {
                    skipSpace()
                    guard peek() == UInt8(ascii: "\"") else { throw .syntax(offset: index) }
                    let keyStart = index
                    let plainKey = plainStringEnd()
                    var keyText: String?
                    if plainKey == nil { keyText = try string() } else { index = plainKey! + 1 }
                    skipSpace()
                    guard peek() == UInt8(ascii: ":") else { throw .syntax(offset: index) }
                    index += 1
                    skipSpace()
                    let value = try value()
                    let keyBytes = plainKey.map { (keyStart + 1)..<$0 }
                    try add(value, keyBytes: keyBytes, escapedKey: keyText)
                    skipSpace()
                    guard let next = peek() else { throw .syntax(offset: index) }
                    index += 1
                    if next == UInt8(ascii: "}") { break }
                    guard next == UInt8(ascii: ",") else { throw .syntax(offset: index - 1) }
                }
            }
            skipSpace()
            guard index == bytes.count else { throw .syntax(offset: index) }
        }

        /// For a string at `index` (its opening quote) of plain ASCII without escapes or control
        /// characters: the index of its closing quote.
        func plainStringEnd() -> Int? {
            var at = index + 1
            while at < bytes.count {
                let byte = bytes[at]
                if byte == UInt8(ascii: "\"") { return at }
                if byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { return nil }
                at += 1
            }
            return nil
        }

        func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipSpace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x0A, 0x0D, 0x09: index += 1
                default: return
                }
            }
        }

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
            func digits(_ reader: inout Reader) -> Int {
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
}
