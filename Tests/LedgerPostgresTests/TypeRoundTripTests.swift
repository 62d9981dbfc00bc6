import Foundation
import LedgerPostgres
import LedgerTestKit
import Testing

/// Every type the wrapper binds and decodes survives a trip through a real table.
@Suite("Types round-trip through PostgreSQL", .database)
struct TypeRoundTripTests {
    /// The uuid reader used for every `uuid` column reads exactly what Foundation's parser reads.
    @Test("a uuid's canonical text reads as UUID(uuidString:) reads it; anything else is refused")
    func uuidCanonicalText() {
        for _ in 0..<500 {
            let id = UUID()
            #expect(UUID(canonicalText: id.uuidString) == id)
            #expect(UUID(canonicalText: id.uuidString.lowercased()) == id)
            #expect(UUID(canonicalText: id.lowercasedText) == id)
        }
        let refused = [
            "", "12934c25-0ab9-438a-9160-59eda01d984", "12934c25-0ab9-438a-9160-59eda01d984ff",
            "12934c25x0ab9-438a-9160-59eda01d984f", "12934c250ab9-438a-9160-59eda01d984f0",
            "12934g25-0ab9-438a-9160-59eda01d984f", "12934c25-0ab9-438a-9160-59eda01d984 ",
            "{2934c25-0ab9-438a-9160-59eda01d984f", "12934c25-0ab9-438a-9160-59eda01d984é",
        ]
        for text in refused {
            #expect(UUID(canonicalText: text) == nil, "\(text)")
            #expect(UUID(uuidString: text) == nil, "Foundation refuses \(text) too")
        }
        // Each byte just outside the hex ranges, and odd forms only `sscanf` lets through.
        for text in ["12934c2G-0ab9-438a-9160-59eda01d984f", "12934c2:-0ab9-438a-9160-59eda01d984f",
                     "12934c2/-0ab9-438a-9160-59eda01d984f", "12934c2@-0ab9-438a-9160-59eda01d984f",
                     "12934c2`-0ab9-438a-9160-59eda01d984f", "+2934c25-0ab9-438a-9160-59eda01d984f",
                     "1 934c25-0ab9-438a-9160-59eda01d984f", " 12934c25-0ab9-438a-9160-59eda01d984"] {
            #expect(UUID(canonicalText: text) == nil, "\(text)")
        }
    }

    /// Narrow results search their columns in order, wide ones index them: both find the first
    /// column of a name, and name a missing one.
    @Test("columns are found by name in narrow and wide results alike, the first of a repeated name")
    func columnsByName() async throws {
        try await withFreshConnection { connection throws in
            for width in [2, PostgresRows.indexedWidth, PostgresRows.indexedWidth + 1, 12] {
                // Columns c0 … c(width-2), then a second c0.
                let columns = (0..<(width - 1)).map { "\($0 * 10) AS c\($0)" } + ["-1 AS c0"]
                let row = try connection.query(PostgresQuery(sql: "SELECT " + columns.joined(separator: ", "))).single()
                #expect(row.columnCount == width)
                #expect(try row.decode(Int.self, column: "c0") == 0, "width \(width)")
                #expect(try row.decode(Int.self, column: "c\(width - 2)") == (width - 2) * 10, "width \(width)")
                #expect(throws: PostgresError.self) { try row.decode(Int.self, column: "missing") }
            }
            // xid8 decodes as UInt64 (the events table's transaction ids).
            let xid = try connection.query("SELECT '18446744073709551615'::xid8 AS x").single()
            #expect(try xid.decode(UInt64.self, column: "x") == UInt64.max)
        }
    }

    /// A prepared statement's columns are read out once and reused while they stay the same; a
    /// prepared utility statement (`FETCH`) can change them, and its rows are then read anew.
    @Test("a prepared statement whose result changes shape is read with its new columns")
    func preparedColumnsFollowTheResult() async throws {
        try await withFreshConnection { connection throws in
            try connection.transaction { connection in
                let fetch: PostgresQuery = "FETCH 1 FROM c"
                try connection.run(script: "DECLARE c CURSOR FOR SELECT 7 AS n")
                #expect(try connection.query(fetch, prepare: true).single().decode(Int.self, column: "n") == 7)
                try connection.run(script: "CLOSE c; DECLARE c CURSOR FOR SELECT 8 AS n")
                #expect(try connection.query(fetch, prepare: true).single().decode(Int.self, column: "n") == 8)
                try connection.run(script: "CLOSE c; DECLARE c CURSOR FOR SELECT 'x' AS label")
                let row = try connection.query(fetch, prepare: true).single()
                #expect(row.columnCount == 1)
                #expect(try row.decode(String.self, column: "label") == "x")
                #expect(throws: PostgresError.self) { try row.decode(Int.self, column: "n") }
            }
        }
    }

    @Test("every supported type, and NULL in every column")
    func everyTypeAndNull() async throws {
        try await withFreshConnection { connection throws in
            try connection.run(script: """
                CREATE TABLE t (b boolean, i2 smallint, i4 integer, i8 bigint, f8 double precision, s text,
                                d bytea, at timestamptz, u uuid, j json, jb jsonb)
                """)
            let date = Date(timeIntervalSince1970: 1_432_681_913.123456)
            let uuid = UUID()
            let bytes = Data([0, 1, 0, 255, 10, 13, 92, 0])
            try connection.execute("""
                INSERT INTO t VALUES (\(true), \(Int16.min), \(Int32.max), \(Int64.min), \(-1.0e-300), \("héllo"),
                                      \(bytes), \(date), \(uuid), \(PostgresValue.json("{\"a\": [1, 2]}")),
                                      \(PostgresJSONB("{\"b\":null}")))
                """)
            try connection.execute("INSERT INTO t VALUES (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)")
            let rows = try connection.query("SELECT * FROM t ORDER BY b NULLS LAST")
            try #require(rows.count == 2)
            let row = rows[0]
            #expect(try row.decode(Bool.self, column: "b") == true)
            #expect(try row.decode(Int16.self, column: "i2") == Int16.min)
            #expect(try row.decode(Int32.self, column: "i4") == Int32.max)
            #expect(try row.decode(Int64.self, column: "i8") == Int64.min)
            #expect(try row.decode(Double.self, column: "f8") == -1.0e-300)
            #expect(try row.decode(String.self, column: "s") == "héllo")
            #expect(try row.decode(Data.self, column: "d") == bytes)
            #expect(try row.decode(Date.self, column: "at") == date)
            #expect(try row.decode(UUID.self, column: "u") == uuid)
            #expect(try row.decode(PostgresJSONText.self, column: "j").text == "{\"a\": [1, 2]}")
            #expect(try row.decode(PostgresJSONText.self, column: "jb").text == "{\"b\": null}")

            let nulls = rows[1]
            for column in 0..<nulls.columnCount { #expect(nulls.isNull(at: column)) }
            #expect(try nulls.decode(Bool?.self, column: "b") == nil)
            #expect(try nulls.decode(Int64?.self, column: "i8") == nil)
            #expect(try nulls.decode(Data?.self, column: "d") == nil)
            #expect(try nulls.decode(Date?.self, column: "at") == nil)
            #expect(try nulls.decode(UUID?.self, column: "u") == nil)
            #expect(try nulls.decode(String?.self, column: "s") == nil)
            let nonOptional = #expect(throws: PostgresError.self) { try nulls.decode(String.self, column: "s") }
            #expect(nonOptional?.code == .decoding)
            #expect(nonOptional?.columnName == "s")
        }
    }

    /// The first test stores NULLs written as SQL literals; this one binds them, as the ledger's
    /// own code does (a Swift `nil` of each type), and decodes each back as an `Optional`.
    @Test("bound nil of every type stores NULL and decodes as nil; edge values round-trip", arguments: [false, true])
    func boundNullsAndEdgeValues(prepare: Bool) async throws {
        try await withFreshConnection { connection throws in
            try connection.run(script: """
                CREATE TABLE t (k int, b boolean, i2 smallint, i4 integer, i8 bigint, n bigint, f8 double precision,
                                s text, d bytea, at timestamptz, u uuid, j json, jb jsonb)
                """)
            try connection.execute("""
                INSERT INTO t VALUES (1, \(Bool?.none), \(Int16?.none), \(Int32?.none), \(Int64?.none), \(Int?.none),
                                      \(Double?.none), \(String?.none), \(Data?.none), \(Date?.none), \(UUID?.none),
                                      \(PostgresValue.null), \(PostgresJSONB?.none))
                """, prepare: prepare)
            let uuid = UUID()
            let date = Date(timeIntervalSince1970: -1.000001)
            try connection.execute("""
                INSERT INTO t VALUES (2, \(false), \(Int16.max), \(Int32.min), \(Int64.max), \(Int.min), \(Double.infinity),
                                      \(""), \(Data()), \(date), \(uuid), \(PostgresValue.json("{\"é\": \"🚀\"}")),
                                      \(PostgresJSONB("{}")))
                """, prepare: prepare)
            try connection.execute("INSERT INTO t (k, f8) VALUES (3, \(Double.nan)), (4, \(-Double.infinity)), (5, \(-0.0))",
                                   prepare: prepare)

            let nulls = try connection.query("SELECT * FROM t WHERE k = 1").single()
            #expect((1..<nulls.columnCount).allSatisfy { nulls.isNull(at: $0) })
            #expect(try nulls.decode(Bool?.self, column: "b") == nil)
            #expect(try nulls.decode(Int16?.self, column: "i2") == nil)
            #expect(try nulls.decode(Int32?.self, column: "i4") == nil)
            #expect(try nulls.decode(Int64?.self, column: "i8") == nil)
            #expect(try nulls.decode(Int?.self, column: "n") == nil)
            #expect(try nulls.decode(Double?.self, column: "f8") == nil)
            #expect(try nulls.decode(String?.self, column: "s") == nil)
            #expect(try nulls.decode(Data?.self, column: "d") == nil)
            #expect(try nulls.decode(Date?.self, column: "at") == nil)
            #expect(try nulls.decode(UUID?.self, column: "u") == nil)
            #expect(try nulls.decode(PostgresJSONText?.self, column: "j") == nil)
            #expect(try nulls.decode(PostgresJSONText?.self, column: "jb") == nil)
            for column in ["b", "i2", "i4", "i8", "n", "f8", "d", "at", "u", "j", "jb"] {
                let error = #expect(throws: PostgresError.self, "\(column)") {
                    switch column {
                    case "b": _ = try nulls.decode(Bool.self, column: column)
                    case "i2": _ = try nulls.decode(Int16.self, column: column)
                    case "i4": _ = try nulls.decode(Int32.self, column: column)
                    case "i8": _ = try nulls.decode(Int64.self, column: column)
                    case "n": _ = try nulls.decode(Int.self, column: column)
                    case "f8": _ = try nulls.decode(Double.self, column: column)
                    case "d": _ = try nulls.decode(Data.self, column: column)
                    case "at": _ = try nulls.decode(Date.self, column: column)
                    case "u": _ = try nulls.decode(UUID.self, column: column)
                    default: _ = try nulls.decode(PostgresJSONText.self, column: column)
                    }
                }
                #expect(error?.code == .decoding)
                #expect(error?.columnName == column)
            }

            let edges = try connection.query("SELECT * FROM t WHERE k = 2").single()
            #expect(try edges.decode(Bool?.self, column: "b") == false)
            #expect(try edges.decode(Int16.self, column: "i2") == Int16.max)
            #expect(try edges.decode(Int32.self, column: "i4") == Int32.min)
            #expect(try edges.decode(Int64.self, column: "i8") == Int64.max)
            #expect(try edges.decode(Int.self, column: "n") == Int.min)
            #expect(try edges.decode(Double.self, column: "f8") == .infinity)
            // Empty is not NULL, for text and bytea alike.
            #expect(try edges.decode(String?.self, column: "s") == "")
            #expect(try edges.decode(Data?.self, column: "d") == Data())
            #expect(try edges.decode(Date.self, column: "at") == date)
            #expect(try edges.decode(UUID.self, column: "u") == uuid)
            #expect(try edges.decode(PostgresJSONText.self, column: "j").text == "{\"é\": \"🚀\"}")
            #expect(try edges.decode(PostgresJSONText.self, column: "jb").text == "{}")

            let floats = try connection.query("SELECT f8 FROM t WHERE k >= 3 ORDER BY k").map { try $0.decode(Double.self, at: 0) }
            #expect(floats.count == 3)
            #expect(floats[0].isNaN)
            #expect(floats[1] == -.infinity)
            #expect(floats[2] == 0 && floats[2].sign == .minus)
        }
    }

    @Test("timestamptz keeps microseconds, before and after 1970 and across a leap day")
    func microsecondPrecision() async throws {
        try await withFreshConnection { connection throws in
            let samples = [
                Date(timeIntervalSince1970: 1_763_863_434.000001), Date(timeIntervalSince1970: -86_400.5),
                Date(timeIntervalSince1970: 951_782_400.999999),  // 2000-02-29T00:00:00.999999Z
                Date(timeIntervalSince1970: 0),
            ]
            for sample in samples {
                let back = try connection.query("SELECT \(sample)::timestamptz AS at").single().decode(Date.self, at: 0)
                let micros = { (date: Date) in Int64((date.timeIntervalSince1970 * 1_000_000).rounded()) }
                #expect(micros(back) == micros(sample))
                // The server agrees on the instant, not only our own codec.
                let epoch = try connection.query("SELECT extract(epoch FROM \(sample)::timestamptz)::text")
                    .single().decode(String.self, at: 0)
                #expect(Decimal(string: epoch) == Decimal(micros(sample)) / 1_000_000)
            }
            // Offsets other than UTC parse to the same instant.
            let shifted = try connection.query("SELECT '2026-11-23 10:00:00.5+05:30'::timestamptz::text AS at")
            let text = try shifted.single().decode(String.self, at: 0)
            #expect(text == "2026-11-23 04:30:00.5+00")
        }
    }

    @Test("a uuid's text is PostgreSQL's: lowercase 8-4-4-4-12, the same as uuidString lowercased")
    func uuidText() async throws {
        try await withFreshConnection { connection throws in
            for uuid in (0..<50).map({ _ in UUID() }) + [UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
                                                          UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255))] {
                #expect(uuid.lowercasedText == uuid.uuidString.lowercased())
                let printed = try connection.query("SELECT \(uuid)::text").single().decode(String.self, at: 0)
                #expect(printed == uuid.lowercasedText)
            }
        }
    }

    @Test("unicode and a 1 MiB JSON value survive")
    func unicodeAndLargeJSON() async throws {
        try await withFreshConnection { connection throws in
            try connection.run(script: "CREATE TABLE docs (body jsonb, note text)")
            let note = "Ünïcödé 🚀 中文 العربية \u{200D} e\u{301}"
            let element = "{\"k\":\"\(String(repeating: "é🚀", count: 40))\"}"
            var items: [String] = []
            var size = 0
            while size < 1_048_576 {
                items.append(element)
                size += element.utf8.count + 1
            }
            let json = "[" + items.joined(separator: ",") + "]"
            #expect(json.utf8.count >= 1_048_576)
            try connection.execute("INSERT INTO docs VALUES (\(PostgresJSONB(json)), \(note))")
            let row = try connection.query("SELECT body, note, jsonb_array_length(body) AS n FROM docs").single()
            #expect(try row.decode(String.self, column: "note") == note)
            #expect(try row.decode(Int.self, column: "n") == items.count)
            let back = try row.decode(PostgresJSONText.self, column: "body").data
            let decoded = try JSONSerialization.jsonObject(with: back) as? [[String: String]]
            #expect(decoded?.count == items.count)
            #expect(decoded?.last?["k"] == String(repeating: "é🚀", count: 40))
        }
    }

    @Test("a parameter holding SQL is stored literally, never run")
    func injectionIsStoredLiterally() async throws {
        try await withFreshConnection { connection throws in
            try connection.run(script: "CREATE TABLE x (v text); CREATE TABLE victims (v text)")
            let hostile = "'; DROP TABLE victims; --"
            try connection.execute("INSERT INTO x VALUES (\(hostile))")
            #expect(try connection.query("SELECT v FROM x").single().decode(String.self, at: 0) == hostile)
            #expect(try connection.query("SELECT count(*) FROM victims").single().decode(Int.self, at: 0) == 0)
            #expect(try connection.query("SELECT v FROM x WHERE v = \(hostile)").count == 1)
            // The issue's own string, aimed at the very table it is stored in (prepared, too).
            let exact = "'; DROP TABLE x; --"
            try connection.execute("INSERT INTO x VALUES (\(exact))", prepare: true)
            #expect(try connection.query("SELECT count(*) FROM x WHERE v = \(exact)").single().decode(Int.self, at: 0) == 1)
            #expect(try connection.query("SELECT to_regclass('x') IS NOT NULL").single().decode(Bool.self, at: 0))
        }
    }

    @Test("decoding refuses values that do not fit, naming the column")
    func decodingErrors() async throws {
        try await withFreshConnection { connection throws in
            let row = try connection.query("SELECT 70000 AS big, 'x' AS word, '\\x00'::bytea AS blob").single()
            let overflow = #expect(throws: PostgresError.self) { try row.decode(Int16.self, column: "big") }
            #expect(overflow?.code == .decoding)
            #expect(overflow?.columnName == "big")
            #expect(throws: PostgresError.self) { try row.decode(Int.self, column: "word") }
            #expect(throws: PostgresError.self) { try row.decode(UUID.self, column: "word") }
            #expect(throws: PostgresError.self) { try row.decode(Int.self, column: "missing") }
            #expect(try row.decode(Data.self, column: "blob") == Data([0]))
        }
    }

    @Test("a text parameter with a NUL byte is refused before it is sent")
    func nulByteRefused() async throws {
        try await withFreshConnection { connection throws in
            let error = #expect(throws: PostgresError.self) { try connection.query("SELECT \("a\u{0}b")") }
            #expect(error?.code == .encoding)
            #expect(try connection.query("SELECT 1").count == 1)
        }
    }

    @Test("prepared statements are reused and survive many executions")
    func preparedStatements() async throws {
        try await withFreshConnection { connection throws in
            try connection.run(script: "CREATE TABLE p (n bigint)")
            for n in 0..<50 { try connection.execute("INSERT INTO p VALUES (\(n))", prepare: true) }
            let prepared = try connection.query("SELECT count(*) FROM pg_prepared_statements").single().decode(Int.self, at: 0)
            #expect(prepared == 1)
            #expect(try connection.query("SELECT sum(n) FROM p").single().decode(Int.self, at: 0) == 1225)
        }
    }
}
