import CLedgerPQ
import Foundation

extension PostgresConnection {
    /// Bulk-loads rows with `COPY table (columns) FROM STDIN` in text format.
    ///
    /// Values are escaped as `COPY` expects (`\\`, `\t`, `\n`, `\r`; NULL as `\N`; `bytea` as hex),
    /// and sent in chunks of about 64 KiB. If a value cannot be encoded, the `COPY` is aborted, so
    /// nothing of it is loaded.
    /// - Returns: the number of rows loaded.
    @discardableResult
    public func copyFrom(table: String, columns: [String], rows: some Sequence<[PostgresValue]>)
        throws(PostgresError) -> Int
    {
        let columnList = columns.map(PostgresQuery.quoteIdentifier).joined(separator: ", ")
        let sql = "COPY \(PostgresQuery.quoteIdentifier(table)) (\(columnList)) FROM STDIN"
        guard let start = PQexec(handle, sql) else { throw connectionError(sql: sql) }
        let startStatus = PQresultStatus(start)
        if startStatus != PGRES_COPY_IN {
            defer { PQclear(start) }
            throw errorFromResult(start, sql: sql)
        }
        PQclear(start)

        var chunk: [UInt8] = []
        chunk.reserveCapacity(70_000)
        var encodingFailure: PostgresError?
        outer: for row in rows {
            guard row.count == columns.count else {
                encodingFailure = PostgresError(
                    code: .copyFailed, message: "a COPY row has \(row.count) values for \(columns.count) columns")
                break
            }
            for (index, value) in row.enumerated() {
                if index > 0 { chunk.append(UInt8(ascii: "\t")) }
                do {
                    try Self.appendCopyText(value, to: &chunk)
                } catch {
                    encodingFailure = error
                    break outer
                }
            }
            chunk.append(UInt8(ascii: "\n"))
            if chunk.count >= 65_536 {
                try putCopyData(chunk, sql: sql)
                chunk.removeAll(keepingCapacity: true)
            }
        }
        if encodingFailure == nil, !chunk.isEmpty { try putCopyData(chunk, sql: sql) }
        let ended = encodingFailure.map { PQputCopyEnd(handle, "aborted: \($0.message)") } ?? PQputCopyEnd(handle, nil)
        guard ended == 1 else { throw connectionError(sql: sql) }
        var loaded = 0
        var serverError: PostgresError?
        while let result = PQgetResult(handle) {
            let status = PQresultStatus(result)
            if status == PGRES_COMMAND_OK {
                loaded = Int(String(cString: PQcmdTuples(result))) ?? 0
            } else if serverError == nil {
                serverError = errorFromResult(result, sql: sql)
            }
            PQclear(result)
        }
        if let encodingFailure { throw encodingFailure }
        if let serverError { throw serverError }
        return loaded
    }

    private func putCopyData(_ bytes: [UInt8], sql: String) throws(PostgresError) {
        let status = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { PQputCopyData(handle, $0.baseAddress, Int32($0.count)) }
        }
        guard status == 1 else { throw connectionError(sql: sql) }
    }

    /// One field in `COPY`'s text format.
    static func appendCopyText(_ value: PostgresValue, to out: inout [UInt8]) throws(PostgresError) {
        switch value {
        case .null:
            out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "N")])
        case .bytea(let data):
            // `\x` + hex, with the backslash itself escaped for COPY.
            out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\"), UInt8(ascii: "x")])
            let digits = Array("0123456789abcdef".utf8)
            for byte in data {
                out.append(digits[Int(byte >> 4)])
                out.append(digits[Int(byte & 0x0f)])
            }
        case .text(let text), .json(let text), .jsonb(let text):
            // From the string's own bytes: no copy of them first.
            var text = text
            guard text.withUTF8({ appendEscaped($0, to: &out) }) else { throw PostgresError.nulInText }
        default:
            guard (try value.wireBytes() ?? []).withUnsafeBufferPointer({ appendEscaped($0, to: &out) }) else { throw PostgresError.nulInText }
        }
    }

    /// Appends `bytes` to `out` escaped for COPY's text format (`\\`, `\t`, `\n`, `\r`); false, with
    /// `out` partly written, at a NUL byte (no text value can hold one).
    ///
    /// A state row is kilobytes of JSON with hardly a byte to escape, so runs with none are found
    /// eight bytes at a time and copied whole (byte by byte, the escaping was a visible part of a
    /// rebuild's final write).
    static func appendEscaped(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        out.reserveCapacity(out.count + bytes.count + 16)
        var runStart = 0
        var index = 0
        while index < bytes.count {
            if index &+ 8 <= bytes.count {
                let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
                // A byte below 0x0E (NUL, tab, newline, carriage return among them) or a backslash.
                if ByteWord.mask(below: 0x0E, in: word) | ByteWord.mask(of: UInt8(ascii: "\\"), in: word) == 0 {
                    index &+= 8
                    continue
                }
            }
            let escaped: UInt8
            switch bytes[index] {
            case 0: return false
            case UInt8(ascii: "\\"): escaped = UInt8(ascii: "\\")
            case UInt8(ascii: "\t"): escaped = UInt8(ascii: "t")
            case UInt8(ascii: "\n"): escaped = UInt8(ascii: "n")
            case UInt8(ascii: "\r"): escaped = UInt8(ascii: "r")
            default:
                index += 1
                continue
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
            out.append(UInt8(ascii: "\\"))
            out.append(escaped)
            index += 1
            runStart = index
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<bytes.count]))
        return true
    }

    /// Streams the output of `COPY (…) TO STDOUT`, one line at a time, to `onLine`.
    ///
    /// The line's bytes are valid only during the call. Used by benchmarks as the raw read-out
    /// baseline and by exports.
    /// - Returns: the number of lines read.
    @discardableResult
    public func copyOut(_ sql: String, onLine: (UnsafeRawBufferPointer) throws -> Void) throws -> Int {
        guard let start = PQexec(handle, sql) else { throw connectionError(sql: sql) }
        if PQresultStatus(start) != PGRES_COPY_OUT {
            defer { PQclear(start) }
            throw errorFromResult(start, sql: sql)
        }
        PQclear(start)
        var lines = 0
        var callbackError: (any Error)?
        while true {
            var buffer: UnsafeMutablePointer<CChar>?
            let length = PQgetCopyData(handle, &buffer, 0)
            if length > 0, let buffer {
                if callbackError == nil {
                    do {
                        try onLine(UnsafeRawBufferPointer(start: buffer, count: Int(length)))
                        lines += 1
                    } catch {
                        callbackError = error
                    }
                }
                PQfreemem(buffer)
            } else if length == -1 {
                break
            } else {
                throw connectionError(sql: sql)
            }
        }
        var serverError: PostgresError?
        while let result = PQgetResult(handle) {
            if PQresultStatus(result) != PGRES_COMMAND_OK, serverError == nil {
                serverError = errorFromResult(result, sql: sql)
            }
            PQclear(result)
        }
        if let serverError { throw serverError }
        if let callbackError { throw callbackError }
        return lines
    }
}
