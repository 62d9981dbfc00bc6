import Foundation

/// A Swift type a column's text value decodes into.
public protocol PostgresDecodable: Sendable {
    /// Decodes PostgreSQL's text output of a value of type `typeOID`.
    /// - Throws: ``PostgresError/decodingFailure(_:)`` when the text is not a value of this type.
    init(postgresText bytes: UnsafeRawBufferPointer, typeOID: UInt32) throws
    /// What a SQL NULL decodes to: an error, except for `Optional`.
    static func decodeNull(column: String) throws(PostgresError) -> Self
}

extension PostgresDecodable {
    public static func decodeNull(column: String) throws(PostgresError) -> Self {
        throw PostgresError(code: .decoding, message: "column \(column) is NULL; decode it as \(Self.self)?",
                            columnName: column)
    }
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    public init(postgresText bytes: UnsafeRawBufferPointer, typeOID: UInt32) throws {
        self = try Wrapped(postgresText: bytes, typeOID: typeOID)
    }
    public static func decodeNull(column: String) throws(PostgresError) -> Self { nil }
}

extension String: PostgresDecodable {
    public init(postgresText bytes: UnsafeRawBufferPointer, typeOID: UInt32) throws {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw PostgresError.decodingFailure("not valid UTF-8")
        }
        self = text
    }
}

extension Bool: PostgresDecodable {
    public init(postgresText bytes: UnsafeRawBufferPointer, typeOID: UInt32) throws {
        guard bytes.count == 1 else { throw PostgresError.decodingFailure("not a boolean") }
        switch bytes[0] {
        case UInt8(ascii: "t"): self = true
        case UInt8(ascii: "f"): self = false
        default: throw PostgresError.decodingFailure("not a boolean")
        }
    }
}

/// Integers parse from PostgreSQL's decimal text, with a range check for the Swift type.
extension FixedWidthInteger where Self: PostgresDecodable {
    static func parseDecimal(_ bytes: UnsafeRawBufferPointer) throws -> Self {
        guard !bytes.isEmpty else { throw PostgresError.decodingFailure("empty integer") }
        var index = 0
        let negative = bytes[0] == UInt8(ascii: "-")
        if negative || bytes[0] == UInt8(ascii: "+") { index = 1 }
        guard index < bytes.count else { throw PostgresError.decodingFailure("not an integer") }
        var value: Self = 0
        while index < bytes.count {
            let digit = bytes[index]
            guard digit >= 48, digit <= 57 else { throw PostgresError.decodingFailure("not an integer") }
            let (times, overflowA) = value.multipliedReportingOverflow(by: 10)
            let (next, overflowB) = negative
                ? times.subtractingReportingOverflow(Self(digit - 48))
                : times.addingReportingOverflow(Self(digit - 48))
            guard !overflowA, !overflowB else { throw PostgresError.decodingFailure("out of range for \(Self.self)") }
            value = next
            index += 1
        }
        return value
    }
}

extension Int16: PostgresDecodable {
    public init(postgresText bytes: UnsafeRawBufferPointer, typeOID: UInt32) throws { self = try .parseDecimal(bytes) }
}
extension Int32: PostgresDecodable {
    public init(postgresText bytes: UnsafeRawBufferPointer, typeOID: UInt32) throws { self = try .parseDecimal(bytes) }
}
extension Int64: PostgresDecodable {
    public init(postgresText bytes: UnsafeRawBufferPointer, typeOID: UInt32) throws { self = try .parseDecimal(bytes) }
}
extension Int: PostgresDecodable {
    public init(postgresText bytes: UnsafeRawBufferPointer, typeOID: UInt32) throws { self = try .parseDecimal(bytes) }
}
/// For `xid8` (transaction ids), which is unsigned 64-bit.
extension UInt64: PostgresDecodable {
    public init(postgresText bytes: UnsafeRawBufferPointer, typeOID: UInt32) throws { self = try .parseDecimal(bytes) }
}

extension Double: PostgresDecodable {
    public init(postgresText bytes: UnsafeRawBufferPointer, typeOID: UInt32) throws {
        let text = String(decoding: bytes, as: UTF8.self)
        switch text {
        case "NaN": self = .nan
        case "Infinity": self = .infinity
        case "-Infinity": self = -.infinity
        default:
            guard let value = Double(text) else { throw PostgresError.decodingFailure("not a number") }
            self = value
        }
    }
}

extension Data: PostgresDecodable {
    /// Decodes `bytea`'s hex output (`\x00ff0a`); zero bytes survive.
    public init(postgresText bytes: UnsafeRawBufferPointer, typeOID: UInt32) throws {
        guard typeOID == PostgresTypeOID.bytea else {
            self = Data(bytes)  // text, json: the raw UTF-8
            return
        }
        guard bytes.count >= 2, bytes[0] == UInt8(ascii: "\\"), bytes[1] == UInt8(ascii: "x"), bytes.count % 2 == 0
        else { throw PostgresError.decodingFailure("bytea not in hex output format") }
        func nibble(_ byte: UInt8) throws -> UInt8 {
            switch byte {
            case 48...57: byte - 48
            case 97...102: byte - 87
            case 65...70: byte - 55
            default: throw PostgresError.decodingFailure("bad hex digit in bytea")
            }
        }
        var out = [UInt8](repeating: 0, count: (bytes.count - 2) / 2)
        var index = 2
        for position in out.indices {
            out[position] = try nibble(bytes[index]) << 4 | nibble(bytes[index + 1])
            index += 2
        }
        self = Data(out)
    }
}

extension Date: PostgresDecodable {
    /// Decodes `timestamptz` (microseconds kept). The session's time zone is UTC.
    public init(postgresText bytes: UnsafeRawBufferPointer, typeOID: UInt32) throws {
        guard let date = PostgresTimestamp.parse(bytes) else {
            throw PostgresError.decodingFailure("not a timestamp with time zone: \(String(decoding: bytes, as: UTF8.self))")
        }
        self = date
    }
}

extension UUID: PostgresDecodable {
    public init(postgresText bytes: UnsafeRawBufferPointer, typeOID: UInt32) throws {
        guard let uuid = UUID(canonicalText: bytes) else {
            throw PostgresError.decodingFailure("not a UUID")
        }
        self = uuid
    }
}

/// The text of a `json` or `jsonb` column, unparsed.
public struct PostgresJSONText: PostgresDecodable, Hashable {
    /// The JSON as UTF-8 bytes.
    public var data: Data
    /// The JSON as text.
    public var text: String { String(decoding: data, as: UTF8.self) }
    public init(postgresText bytes: UnsafeRawBufferPointer, typeOID: UInt32) throws {
        self.data = Data(bytes)
    }
}
