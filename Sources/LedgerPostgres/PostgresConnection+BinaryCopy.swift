import CLedgerPQ
import Foundation

extension PostgresConnection {
    /// Streams the rows of `COPY (…) TO STDOUT (FORMAT binary)` to `onRow`, one at a time.
    ///
    /// Binary `COPY` spares both sides the text forms: the server sends numbers, uuids and times
    /// as their bytes (no printing, no escaping), and the reader takes them as they are (no
    /// parsing, no unescaping). For long read-outs (projection rebuilds) that is most of the
    /// server's and the client's work per row besides the payload itself.
    ///
    /// The row's bytes are valid only during the call. The stream's header and trailer are checked
    /// (a stream that ends without its trailer is an error, not a short read-out).
    /// - Returns: the number of rows read.
    public func copyOutBinary(_ sql: String, onRow: (inout PostgresBinaryCopyRow) throws -> Void) throws -> Int {
        var header = false
        var trailer = false
        var rows = 0
        _ = try copyOut(sql) { message in
            var offset = 0
            if !header {
                offset = try PostgresBinaryCopyRow.headerLength(message, sql: sql)
                header = true
                // The server sends the header with the first row (or the trailer); a header alone
                // would be read as such all the same.
                if offset == message.count { return }
            }
            guard !trailer, offset + 2 <= message.count else {
                throw PostgresBinaryCopyRow.malformed("a message after the trailer, or without a field count", sql: sql)
            }
            let count = Int16(bitPattern: UInt16(message[offset]) << 8 | UInt16(message[offset + 1]))
            if count == -1 {
                trailer = true
                return
            }
            var row = PostgresBinaryCopyRow(message, offset: offset + 2, fieldCount: Int(count), sql: sql)
            try onRow(&row)
            rows += 1
        }
        guard trailer else { throw PostgresBinaryCopyRow.malformed("the stream ended without its trailer", sql: sql) }
        return rows
    }
}

/// One row of a binary `COPY` stream, read field after field in column order.
///
/// Each reader takes the next field and checks its length against the type's binary form
/// (`int8` 8 bytes, `uuid` 16, …); a mismatch or a NULL where a value is required throws a
/// ``PostgresError/Code/decoding`` error naming the field's position.
public struct PostgresBinaryCopyRow {
    /// How many fields the row has.
    public let fieldCount: Int
    private let bytes: UnsafeRawBufferPointer
    private var offset: Int
    private var field = 0
    private let sql: String

    init(_ bytes: UnsafeRawBufferPointer, offset: Int, fieldCount: Int, sql: String) {
        self.bytes = bytes
        self.offset = offset
        self.fieldCount = fieldCount
        self.sql = sql
    }

    /// The next field's bytes, or nil for NULL.
    public mutating func next() throws(PostgresError) -> UnsafeRawBufferPointer? {
        guard field < fieldCount, offset + 4 <= bytes.count else { throw failure("is missing") }
        let length = Int(Int32(bitPattern: readUInt32(at: offset)))
        offset += 4
        field += 1
        if length == -1 { return nil }
        guard length >= 0, offset + length <= bytes.count else { throw failure("runs past the row", counted: true) }
        defer { offset += length }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + length])
    }

    /// The next field's bytes; NULL is an error.
    public mutating func bytesValue() throws(PostgresError) -> UnsafeRawBufferPointer {
        guard let value = try next() else { throw failure("is NULL") }
        return value
    }

    /// The next field as `bigint` (also `xid8`'s bytes, read as a signed number).
    public mutating func int64() throws(PostgresError) -> Int64 {
        let value = try fixed(8)
        return Int64(bitPattern: UInt64(readUInt32(at: value, 0)) << 32 | UInt64(readUInt32(at: value, 4)))
    }

    /// The next field as `integer`.
    public mutating func int32() throws(PostgresError) -> Int32 {
        Int32(bitPattern: readUInt32(at: try fixed(4), 0))
    }

    /// The next field as `text` (UTF-8, the sessions' client encoding).
    public mutating func string() throws(PostgresError) -> String {
        String(decoding: try bytesValue(), as: UTF8.self)
    }

    /// The next field as `uuid`.
    public mutating func uuid() throws(PostgresError) -> UUID {
        UUID(uuid: try fixed(16).loadUnaligned(as: uuid_t.self))
    }

    /// The next field as `timestamptz`: microseconds since 2000-01-01 UTC. The infinities are
    /// refused (no `Date` stands for them).
    public mutating func timestamp() throws(PostgresError) -> Date {
        let micros = try int64()
        guard micros != .max, micros != .min else { throw failure("is an infinite timestamp", counted: true) }
        return Date(timeIntervalSince1970: Double(micros &+ Self.unixEpochMicros) / 1_000_000)
    }

    /// The next field as `jsonb`: its text, without the format's version byte.
    public mutating func jsonbText() throws(PostgresError) -> UnsafeRawBufferPointer {
        let value = try bytesValue()
        guard value.first == 1 else { throw failure("is not jsonb of version 1", counted: true) }
        return UnsafeRawBufferPointer(rebasing: value.dropFirst())
    }

    /// PostgreSQL's epoch (2000-01-01) in Unix microseconds.
    static let unixEpochMicros: Int64 = 946_684_800_000_000

    private mutating func fixed(_ length: Int) throws(PostgresError) -> UnsafeRawBufferPointer {
        let value = try bytesValue()
        guard value.count == length else { throw failure("has \(value.count) bytes, not \(length)", counted: true) }
        return value
    }

    private func readUInt32(at offset: Int) -> UInt32 { readUInt32(at: bytes, offset) }

    private func readUInt32(at buffer: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        UInt32(bigEndian: buffer.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    private func failure(_ what: String, counted: Bool = false) -> PostgresError {
        // `counted`: the field was already taken, so its position is one back.
        PostgresError(code: .decoding, message: "binary COPY field \(counted ? field : field + 1) of \(fieldCount) \(what)",
                      query: sql)
    }

    /// The length of the stream's header (signature, flags, extension), checked.
    static func headerLength(_ message: UnsafeRawBufferPointer, sql: String) throws(PostgresError) -> Int {
        let signature: [UInt8] = [0x50, 0x47, 0x43, 0x4F, 0x50, 0x59, 0x0A, 0xFF, 0x0D, 0x0A, 0x00]  // "PGCOPY\n\377\r\n\0"
        guard message.count >= 19, message.prefix(11).elementsEqual(signature) else {
            throw malformed("the stream does not start with binary COPY's signature", sql: sql)
        }
        // Flag bit 16: each row starts with its OID, which rows read here never carry.
        let flags = UInt32(bigEndian: message.loadUnaligned(fromByteOffset: 11, as: UInt32.self))
        guard flags & (1 << 16) == 0 else { throw malformed("the rows carry OIDs", sql: sql) }
        let extensionLength = Int(UInt32(bigEndian: message.loadUnaligned(fromByteOffset: 15, as: UInt32.self)))
        guard 19 + extensionLength <= message.count else { throw malformed("the header's extension runs past the message", sql: sql) }
        return 19 + extensionLength
    }

    static func malformed(_ what: String, sql: String) -> PostgresError {
        PostgresError(code: .copyFailed, message: "binary COPY: \(what)", query: sql)
    }
}
