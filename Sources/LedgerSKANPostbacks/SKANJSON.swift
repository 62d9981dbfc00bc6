import Foundation
import LedgerDomain

/// A strict RFC 8259 reader for one JSON object (on ``JSONTokenizer``), made for postbacks: it keeps each top-level
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

    /// The postback fields of both systems, each with its JSON name, recognised by their bytes
    /// while reading (no key string is made and no key hashed: this is most of the speed).
    enum Key: String, CaseIterable {
        case version, adNetworkID = "ad-network-id", sourceIdentifier = "source-identifier", campaignID = "campaign-id"
        case appID = "app-id", transactionID = "transaction-id", redownload, sourceAppID = "source-app-id"
        case sourceDomain = "source-domain", fidelityType = "fidelity-type", didWin = "did-win"
        case postbackSequenceIndex = "postback-sequence-index", conversionValue = "conversion-value"
        case coarseConversionValue = "coarse-conversion-value", countryCode = "country-code"
        case attributionSignature = "attribution-signature"
        // AdAttributionKit: the stanza's, the JWS header's and the JWS payload's members.
        case jwsString = "jws-string", adInteractionType = "ad-interaction-type", alg, kid
        case postbackIdentifier = "postback-identifier", advertisedItemIdentifier = "advertised-item-identifier"
        case adNetworkIdentifier = "ad-network-identifier", conversionType = "conversion-type"
        case impressionType = "impression-type", marketplaceIdentifier = "marketplace-identifier"
        case publisherItemIdentifier = "publisher-item-identifier"

        /// The JSON name.
        var name: String { rawValue }
        /// The place of its value in ``SKANJSONObject/known``.
        var index: Int { Self.allCases.firstIndex(of: self)! }
    }

    /// The JSON names of ``Key``, in its order.
    static let knownKeys: [String] = Key.allCases.map(\.rawValue)
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
    subscript(key: Key) -> Value? { known[key.index] }

    /// Parses `bytes` (UTF-8 already checked by the caller, or not: invalid UTF-8 in a string is
    /// a syntax error here too).
    init(parsing bytes: Data) throws(Failure) {
        let result = bytes.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) -> Result<Reader, Failure> in
            var reader = Reader(tokenizer: JSONTokenizer(buffer.bindMemory(to: UInt8.self), maximumDepth: 64))
            do throws(JSONSyntaxError) {
                if let failure = try reader.read() { return .failure(failure) }
            } catch {
                return .failure(.syntax(offset: error.offset))
            }
            return .success(reader)
        }
        let reader = try result.get()
        known = reader.known
        others = reader.others
    }

    /// The members read so far, over a ``JSONTokenizer`` (nested values are checked by it and not
    /// kept; nesting is limited to 64 levels).
    struct Reader {
        var tokenizer: JSONTokenizer
        var known = [Value?](repeating: nil, count: SKANJSONObject.knownKeys.count)
        var others: [(key: String, value: Value)] = []

        /// Reads the whole text: nil when it is one object with no key twice, else why not (a
        /// syntax error throws).
        mutating func read() throws(JSONSyntaxError) -> Failure? {
            tokenizer.skipWhitespace()
            guard tokenizer.peek == UInt8(ascii: "{") else {
                // Tell "valid JSON, not an object" from "not JSON".
                _ = try tokenizer.skipValue(depth: 1)
                try tokenizer.end()
                return .notAnObject
            }
            if try tokenizer.open(depth: 1) {
                repeat {
                    let key = try tokenizer.key()
                    let token = try tokenizer.skipValue(depth: 2)
                    if let repeated = add(value(of: token), key: key) { return .duplicateKey(repeated) }
                } while try tokenizer.nextItem(closing: UInt8(ascii: "}"))
            }
            try tokenizer.end()
            return nil
        }

        /// A member's value as kept: strings unescaped, numbers as written.
        func value(of token: JSONToken) -> Value {
            switch token.kind {
            case .string: .string(tokenizer.text(token))
            case .number: .number(String(decoding: tokenizer.slice(token.range), as: UTF8.self))
            case .true: .bool(true)
            case .false: .bool(false)
            case .null: .null
            case .object, .array: .nested
            }
        }

        /// The index of the known key spelled by the bytes of `range`, if it is one.
        func knownKey(_ range: Range<Int>) -> Int? {
            let bytes = tokenizer.bytes
            for (number, key) in SKANJSONObject.knownKeyBytes.enumerated() where key.count == range.count {
                if key.withUnsafeBufferPointer({ memcmp($0.baseAddress!, bytes.baseAddress! + range.lowerBound, range.count) == 0 }) {
                    return number
                }
            }
            return nil
        }

        /// Stores a member; the key's name when it was already there.
        mutating func add(_ value: Value, key: JSONToken) -> String? {
            if !key.hasEscapes, let number = knownKey(key.body) {
                guard known[number] == nil else { return SKANJSONObject.knownKeys[number] }
                known[number] = value
                return nil
            }
            let name = tokenizer.text(key)
            if let number = SKANJSONObject.knownKeys.firstIndex(of: name) {  // a known key written with escapes
                guard known[number] == nil else { return name }
                known[number] = value
                return nil
            }
            for member in others where member.key == name { return name }
            others.append((name, value))
            return nil
        }
    }
}
