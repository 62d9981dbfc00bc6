import Foundation
import LedgerPostgres
import Testing

@Suite("COPY")
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
}
