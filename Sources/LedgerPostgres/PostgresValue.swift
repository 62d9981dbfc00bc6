import Foundation

/// A value bound as a statement parameter or a `COPY` field.
///
/// Parameters are always sent separately from the SQL text (`PQexecParams`), never interpolated.
/// Text is sent with type OID 0 so that the server infers the column's type (a string can fill a
/// `uuid` or `text` column); other values carry their exact type.
public enum PostgresValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int16(Int16)
    case int32(Int32)
    case int64(Int64)
    case double(Double)
    case text(String)
    case bytea(Data)
    case timestamptz(Date)
    case uuid(UUID)
    /// JSON text, sent as `json`.
    case json(String)
    /// JSON text, sent as `jsonb`.
    case jsonb(String)

    /// The type OID sent with the parameter (0 lets the server infer it).
    var typeOID: UInt32 {
        switch self {
        case .null, .text: 0
        case .bool: PostgresTypeOID.bool
        case .int16: PostgresTypeOID.int2
        case .int32: PostgresTypeOID.int4
        case .int64: PostgresTypeOID.int8
        case .double: PostgresTypeOID.float8
        case .bytea: PostgresTypeOID.bytea
        case .timestamptz: PostgresTypeOID.timestamptz
        case .uuid: PostgresTypeOID.uuid
        case .json: PostgresTypeOID.json
        case .jsonb: PostgresTypeOID.jsonb
        }
    }

    /// True for the one value sent in binary format (`bytea`, so zero bytes need no escaping).
    var isBinary: Bool { if case .bytea = self { true } else { false } }

    /// The parameter's bytes: binary for `bytea`, PostgreSQL's text input form for the rest,
    /// `nil` for NULL.
    func wireBytes() throws(PostgresError) -> [UInt8]? {
        switch self {
        case .null: return nil
        case .bool(let value): return value ? [UInt8(ascii: "t")] : [UInt8(ascii: "f")]
        case .int16(let value): return Array(String(value).utf8)
        case .int32(let value): return Array(String(value).utf8)
        case .int64(let value): return Array(String(value).utf8)
        case .double(let value): return Array(Self.floatText(value).utf8)
        case .text(let value), .json(let value), .jsonb(let value):
            let bytes = Array(value.utf8)
            if bytes.contains(0) {
                throw PostgresError.nulInText
            }
            return bytes
        case .bytea(let value): return Array(value)
        case .timestamptz(let value): return Array(PostgresTimestamp.format(value).utf8)
        case .uuid(let value): return Array(value.lowercasedText.utf8)
        }
    }

    /// `float8` input text: Swift's shortest round-tripping form, with PostgreSQL's spellings of
    /// the special values.
    static func floatText(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value == .infinity { return "Infinity" }
        if value == -.infinity { return "-Infinity" }
        return "\(value)"
    }
}

/// Type OIDs of PostgreSQL's built-in types that the wrapper encodes or decodes.
public enum PostgresTypeOID {
    public static let bool: UInt32 = 16
    public static let bytea: UInt32 = 17
    public static let int8: UInt32 = 20
    public static let int2: UInt32 = 21
    public static let int4: UInt32 = 23
    public static let text: UInt32 = 25
    public static let json: UInt32 = 114
    public static let float4: UInt32 = 700
    public static let float8: UInt32 = 701
    public static let varchar: UInt32 = 1043
    public static let timestamp: UInt32 = 1114
    public static let timestamptz: UInt32 = 1184
    public static let numeric: UInt32 = 1700
    public static let uuid: UInt32 = 2950
    public static let jsonb: UInt32 = 3802
}

/// A Swift value that can be bound as a parameter.
public protocol PostgresEncodable: Sendable {
    /// The value to bind.
    var postgresValue: PostgresValue { get }
}

extension PostgresValue: PostgresEncodable {
    public var postgresValue: PostgresValue { self }
}
extension Bool: PostgresEncodable { public var postgresValue: PostgresValue { .bool(self) } }
extension Int16: PostgresEncodable { public var postgresValue: PostgresValue { .int16(self) } }
extension Int32: PostgresEncodable { public var postgresValue: PostgresValue { .int32(self) } }
extension Int64: PostgresEncodable { public var postgresValue: PostgresValue { .int64(self) } }
extension Int: PostgresEncodable { public var postgresValue: PostgresValue { .int64(Int64(self)) } }
extension Double: PostgresEncodable { public var postgresValue: PostgresValue { .double(self) } }
extension String: PostgresEncodable { public var postgresValue: PostgresValue { .text(self) } }
extension Substring: PostgresEncodable { public var postgresValue: PostgresValue { .text(String(self)) } }
extension Data: PostgresEncodable { public var postgresValue: PostgresValue { .bytea(self) } }
extension Date: PostgresEncodable { public var postgresValue: PostgresValue { .timestamptz(self) } }
extension UUID: PostgresEncodable { public var postgresValue: PostgresValue { .uuid(self) } }
extension Optional: PostgresEncodable where Wrapped: PostgresEncodable {
    public var postgresValue: PostgresValue { self?.postgresValue ?? .null }
}

/// JSON bound as `jsonb`: `"\(PostgresJSONB(text))"` in a ``PostgresQuery``.
public struct PostgresJSONB: PostgresEncodable, Hashable {
    /// The JSON text.
    public var text: String
    public init(_ text: String) { self.text = text }
    /// Encodes a value with `JSONEncoder` (sorted keys, so equal values give equal text).
    public init(encoding value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        self.text = String(decoding: try encoder.encode(value), as: UTF8.self)
    }
    public var postgresValue: PostgresValue { .jsonb(text) }
}

extension UUID {
    /// Reads the canonical text form, `8-4-4-4-12` hex digits in either case (what PostgreSQL
    /// prints and `uuidString` writes), digit by digit. On Linux Foundation's
    /// `UUID(uuidString:)` goes through `sscanf`, a twentieth of a projection rebuild's CPU when
    /// every event's id was read that way; it also takes a few odd 36-character forms (a sign
    /// or a space where a digit belongs) that this refuses. Nil for anything but the canonical form.
    public init?(canonicalText bytes: UnsafeRawBufferPointer) {
        guard bytes.count == 36 else { return nil }
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let parsed = withUnsafeMutableBytes(of: &value) { out -> Bool in
            var index = 0
            for position in 0..<16 {
                if position == 4 || position == 6 || position == 8 || position == 10 {
                    guard bytes[index] == UInt8(ascii: "-") else { return false }
                    index += 1
                }
                guard let high = Self.hexValue(bytes[index]), let low = Self.hexValue(bytes[index + 1]) else { return false }
                out[position] = high << 4 | low
                index += 2
            }
            return true
        }
        guard parsed else { return nil }
        self.init(uuid: value)
    }

    /// ``init(canonicalText:)`` for a string.
    public init?(canonicalText text: String) {
        var text = text
        guard let uuid = text.withUTF8({ UUID(canonicalText: UnsafeRawBufferPointer($0)) }) else { return nil }
        self = uuid
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte &- UInt8(ascii: "a") &+ 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte &- UInt8(ascii: "A") &+ 10
        default: nil
        }
    }

    /// The lowercase text form (`8-4-4-4-12` hex digits), as PostgreSQL prints a `uuid`; written
    /// from a table, without `uuidString`'s formatted printing.
    public var lowercasedText: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(36)
        appendLowercasedText(to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends ``lowercasedText``'s bytes to `bytes`, without making the text (for byte buffers
    /// built per event, such as a sealed box's context).
    package func appendLowercasedText(to bytes: inout [UInt8]) {
        let digits: StaticString = "0123456789abcdef"
        withUnsafeBytes(of: uuid) { raw in
            digits.withUTF8Buffer { hex in
                for (index, byte) in raw.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 { bytes.append(UInt8(ascii: "-")) }
                    bytes.append(hex[Int(byte >> 4)])
                    bytes.append(hex[Int(byte & 0x0F)])
                }
            }
        }
    }
}
