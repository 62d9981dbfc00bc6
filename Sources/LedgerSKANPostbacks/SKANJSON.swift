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
    /// The cursor (value readers are in SKANJSON+Values.swift).
    struct Reader {
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
    }
}
