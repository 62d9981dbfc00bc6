import Foundation
@testable import LedgerPostgres
import LedgerTestKit
import Testing

@Suite("COPY", .database)
struct CopyTests {
    @Test("COPY FROM STDIN loads 100,000 rows, escapes included")
    func copyHundredThousandRows() async throws {
        try await withFreshConnection { connection throws in
            try connection.run(script: "CREATE TABLE bulk (n bigint, label text, blob bytea, at timestamptz, maybe int)")
            let start = Date(timeIntervalSince1970: 1_700_000_000.25)
            let rows = (0..<100_000).lazy.map { (n: Int) -> [PostgresValue] in
                let label: PostgresValue = .text("row\t\(n)\n\\ \"é\"\r")
                let blob: PostgresValue = .bytea(Data([0, UInt8(n % 256), 92]))
                let at: PostgresValue = .timestamptz(start.addingTimeInterval(Double(n) / 1000))
                let maybe: PostgresValue = n % 7 == 0 ? .null : .int32(Int32(n))
                return [.int64(Int64(n)), label, blob, at, maybe]
            }
            let loaded = try connection.copyFrom(table: "bulk", columns: ["n", "label", "blob", "at", "maybe"], rows: rows)
            #expect(loaded == 100_000)
            let summary = try connection.query(
                "SELECT count(*) AS c, sum(n) AS s, count(maybe) AS m FROM bulk").single()
            #expect(try summary.decode(Int.self, column: "c") == 100_000)
            #expect(try summary.decode(Int.self, column: "s") == 4_999_950_000)
            #expect(try summary.decode(Int.self, column: "m") == 100_000 - 14_286)
            let sample = try connection.query("SELECT label, blob, at FROM bulk WHERE n = \(99_999)").single()
            #expect(try sample.decode(String.self, column: "label") == "row\t99999\n\\ \"é\"\r")
            #expect(try sample.decode(Data.self, column: "blob") == Data([0, UInt8(99_999 % 256), 92]))
            let micros = { (date: Date) in Int64((date.timeIntervalSince1970 * 1_000_000).rounded()) }
            #expect(micros(try sample.decode(Date.self, column: "at")) == micros(start.addingTimeInterval(99.999)))
        }
    }

    @Test("a COPY that the server refuses loads nothing and leaves the connection usable")
    func copyRefused() async throws {
        try await withFreshConnection { connection throws in
            try connection.run(script: "CREATE TABLE strict_bulk (n int NOT NULL)")
            let rows: [[PostgresValue]] = [[.int32(1)], [.null], [.int32(3)]]
            let error = #expect(throws: PostgresError.self) {
                try connection.copyFrom(table: "strict_bulk", columns: ["n"], rows: rows)
            }
            #expect(error?.sqlState == SQLState.notNullViolation)
            #expect(try connection.query("SELECT count(*) FROM strict_bulk").single().decode(Int.self, at: 0) == 0)
        }
    }

    @Test("a row that cannot be encoded aborts the COPY")
    func copyAbortedByEncoding() async throws {
        try await withFreshConnection { connection throws in
            try connection.run(script: "CREATE TABLE t (s text)")
            let rows: [[PostgresValue]] = [[.text("fine")], [.text("nul\u{0}byte")]]
            let error = #expect(throws: PostgresError.self) { try connection.copyFrom(table: "t", columns: ["s"], rows: rows) }
            #expect(error?.code == .encoding)
            #expect(try connection.query("SELECT count(*) FROM t").single().decode(Int.self, at: 0) == 0)
        }
    }

    @Test("COPY TO STDOUT streams every line")
    func copyOut() async throws {
        try await withFreshConnection { connection throws in
            var total = 0
            let lines = try connection.copyOut("COPY (SELECT g FROM generate_series(1, 1000) g) TO STDOUT") { line in
                total += Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .newlines)) ?? 0
            }
            #expect(lines == 1000)
            #expect(total == 500_500)
        }
    }

    @Test("binary COPY TO STDOUT reads each type's bytes as the text form says")
    func copyOutBinaryTypes() async throws {
        try await withFreshConnection { connection throws in
            let sql = """
                COPY (SELECT g::bigint, (g * 1000)::int, 'é\t' || g, md5(g::text)::uuid,
                             timestamptz '2026-11-23 01:53:54.123456+00' + g * interval '1 second',
                             jsonb_build_object('n', g, 's', 'a\\b' || chr(10)), pg_current_xact_id(), NULLIF(g % 2, 0)
                      FROM generate_series(1, 500) g) TO STDOUT (FORMAT binary)
                """
            var seen: [Int64] = []
            var seventh: (UUID, Date)?
            let count = try connection.copyOutBinary(sql) { row in
                #expect(row.fieldCount == 8)
                let n = try row.int64()
                seen.append(n)
                #expect(try row.int32() == Int32(n * 1000))
                #expect(try row.string() == "é\t\(n)")
                let uuid = try row.uuid()
                let at = try row.timestamp()
                let json = String(decoding: try row.jsonbText(), as: UTF8.self)
                #expect(json == "{\"n\": \(n), \"s\": \"a\\\\b\\n\"}")
                #expect(try row.int64() > 0)
                let odd = try row.next()
                #expect((odd == nil) == (n % 2 == 0))
                if n == 7 { seventh = (uuid, at) }
            }
            #expect(count == 500)
            #expect(seen == Array(1...500))
            // The same values through the text protocol (the wrapper's own decoders).
            let text = try connection.query(
                "SELECT md5('7')::uuid::text AS u, timestamptz '2026-11-23 01:53:54.123456+00' + interval '7 second' AS t"
            ).single()
            #expect(seventh?.0.uuidString.lowercased() == (try text.decode(String.self, column: "u")))
            #expect(seventh?.1 == (try text.decode(Date.self, column: "t")))
        }
    }

    @Test("binary COPY: an empty result, a wrong width and a missing field are told apart")
    func copyOutBinaryEdges() async throws {
        try await withFreshConnection { connection throws in
            let empty = try connection.copyOutBinary("COPY (SELECT 1 WHERE false) TO STDOUT (FORMAT binary)") { _ in
                Issue.record("no row expected")
            }
            #expect(empty == 0)
            // A 4-byte integer read as a bigint: a decoding error naming the field.
            #expect {
                _ = try connection.copyOutBinary("COPY (SELECT 1::int) TO STDOUT (FORMAT binary)") { row in _ = try row.int64() }
            } throws: { error in
                let error = error as? PostgresError
                return error?.code == .decoding && error?.message.contains("field 1 of 1 has 4 bytes, not 8") == true
            }
            // Reading past the last field.
            #expect {
                _ = try connection.copyOutBinary("COPY (SELECT 1::bigint) TO STDOUT (FORMAT binary)") { row in
                    _ = try row.int64()
                    _ = try row.int64()
                }
            } throws: { error in (error as? PostgresError)?.code == .decoding }
            // NULL where a value is required.
            #expect {
                _ = try connection.copyOutBinary("COPY (SELECT NULL::text) TO STDOUT (FORMAT binary)") { row in _ = try row.string() }
            } throws: { error in (error as? PostgresError)?.message.contains("is NULL") == true }
            // Text format is not binary: the header check refuses it.
            #expect {
                _ = try connection.copyOutBinary("COPY (SELECT 1) TO STDOUT") { _ in }
            } throws: { error in (error as? PostgresError)?.code == .copyFailed }
            // The connection stays usable after each.
            #expect(try connection.query("SELECT 2").single().decode(Int.self, at: 0) == 2)
        }
    }
}

extension CopyTests {
    @Test("COPY text escaping, eight bytes at a time, equals escaping byte by byte, at every offset; NUL is refused")
    func escapingAtEveryOffset() {
        var generator = SystemRandomNumberGenerator()
        let alphabet: [UInt8] = Array("ab\\\t\n\r\u{1}\u{0E}é".utf8)
        for _ in 0..<5000 {
            var bytes = (0..<Int.random(in: 0...40, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }
            let withNUL = Int.random(in: 0..<8, using: &generator) == 0 && !bytes.isEmpty
            if withNUL { bytes[Int.random(in: 0..<bytes.count, using: &generator)] = 0 }
            var expected: [UInt8] = [UInt8(ascii: "<")]
            for byte in bytes {
                switch byte {
                case UInt8(ascii: "\\"): expected += Array("\\\\".utf8)
                case UInt8(ascii: "\t"): expected += Array("\\t".utf8)
                case UInt8(ascii: "\n"): expected += Array("\\n".utf8)
                case UInt8(ascii: "\r"): expected += Array("\\r".utf8)
                default: expected.append(byte)
                }
            }
            var out: [UInt8] = [UInt8(ascii: "<")]
            let written = bytes.withUnsafeBufferPointer { PostgresConnection.appendEscaped($0, to: &out) }
            #expect(written == !withNUL, "\(bytes)")
            if !withNUL { #expect(out == expected, "\(bytes)") }
        }
    }
}
