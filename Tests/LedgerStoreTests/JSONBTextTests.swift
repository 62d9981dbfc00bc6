import Foundation
import LedgerPostgres
import LedgerTestKit
import Testing

@testable import LedgerStore

/// ``JSONBText`` must print exactly what PostgreSQL prints for `$1::jsonb::text`, or answer nil:
/// an event's hash covers that text, and `ledger verify` recomputes it in the database.
@Suite("jsonb's printing, worked out by the store", .database)
struct JSONBTextTests {
    /// Texts chosen for the rules: key order (length, then bytes, not Unicode order), escapes in
    /// and out, numbers kept as written, nesting, whitespace, non-ASCII.
    static let chosen = [
        #"{}"#, #"[]"#, #"{"a":1}"#, #" { "b" : [ 1 , 2 ] , "a" : { } } "#,
        #"{"bb":1,"a":2,"ccc":3,"ab":4,"B":5,"é":6,"z":7}"#,
        #"{"n":-12.50,"m":0,"o":0.000,"p":123456789012345678901234567890.123456789,"q":-0.5,"r":1.0}"#,
        #"{"s":"tab\there","t":"quote \" and \\ and \/","u":"\u00e9\u4e2d\ud83d\ude00","v":"\u001f\u0001\b\f\n\r"}"#,
        #"{"w":"raw é 中 😀","x":"\u007f","y":"<\u2028>"}"#,
        #"{"k":true,"l":false,"m":null,"deep":[[[{"a":[{}]}]]]}"#,
        #"[1,"two",{"3":3},[4],null,true,false,-0.25]"#,
        #"{"app_id":"com.example.app","platform":"ios","idfv":"21DB6612-09B3-4ECC-84AC-B353B0AF1334","ip":"216.58.194.174","session":{"count":3,"source":"push"}}"#,
        #""just a string""#, #"42"#, #"{"\u0041":1,"B":2}"#, #"{"k\"q":1,"k\\q":2}"#,
    ]

    /// Texts it must decline: PostgreSQL rewrites them (exponents, negative zero, a repeated
    /// key), refuses them (`\u0000`, lone surrogates, raw control characters), or they are not JSON.
    static let declined = [
        #"{"a":1e3}"#, #"{"a":1.5E-2}"#, #"{"a":-0}"#, #"{"a":-0.00}"#, #"{"a":1,"a":2}"#, #"{"a":"\u0000"}"#,
        #"{"a":"\ud800"}"#, #"{"a":"\udc00x"}"#, "{\"a\":\"\u{01}\"}", #"{"a":01}"#, #"{"a":1.}"#, #"{"a":.5}"#,
        #"{"a":tru}"#, #"{"a":1,}"#, #"{"a" 1}"#, #"{"a":1} x"#, #"[1,]"#, #"{"a":"\x"}"#, "",
    ]

    @Test("agrees with PostgreSQL's ::jsonb::text on texts chosen for each rule, and declines what it cannot be sure of")
    func chosenTexts() async throws {
        try await TestDatabase.with(migrated: false) { database throws in
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            for text in Self.chosen {
                let expected = try connection.query("SELECT \(text)::jsonb::text").single().decode(String.self, at: 0)
                let printed = try #require(JSONBText.canonical(text), "\(text)")
                #expect(String(decoding: printed, as: UTF8.self) == expected, "\(text)")
            }
            for text in Self.declined {
                #expect(JSONBText.canonical(text) == nil, "\(text)")
            }
        }
    }

    @Test("agrees with PostgreSQL on 2,000 random documents (seeded)")
    func randomDocuments() async throws {
        var random = SplitMix64(seed: 0x4A53_4F4E_4254_5854)
        let documents = (0..<2_000).map { _ in Self.randomValue(&random, depth: 0, object: true) }
        try await TestDatabase.with(migrated: false) { database throws in
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            var checked = 0
            for document in documents {
                let expected = try connection.query("SELECT \(document)::jsonb::text").single().decode(String.self, at: 0)
                guard let printed = JSONBText.canonical(document) else { continue }  // e.g. a repeated key
                #expect(String(decoding: printed, as: UTF8.self) == expected, "\(document)")
                checked += 1
            }
            #expect(checked > 1_500)  // the rest repeat a key (short random keys collide)
        }
    }

    /// A random JSON text: short keys that collide in length (and sometimes repeat), strings with
    /// escapes, control characters and non-ASCII, numbers of many shapes, random whitespace.
    static func randomValue(_ random: inout SplitMix64, depth: Int, object: Bool = false) -> String {
        func space() -> String { ["", " ", "\n", "\t ", ""][Int(random.next(upTo: 5))] }
        let kind = object ? 0 : depth > 3 ? 2 + Int(random.next(upTo: 3)) : Int(random.next(upTo: 6))  // scalars only, deep down
        switch kind {
        case 0:
            let count = Int(random.next(upTo: 7))
            let members = (0..<count).map { _ in
                space() + randomString(&random, key: true) + space() + ":" + randomValue(&random, depth: depth + 1)
            }
            return space() + "{" + members.joined(separator: ",") + space() + "}"
        case 1:
            let count = Int(random.next(upTo: 5))
            return "[" + (0..<count).map { _ in randomValue(&random, depth: depth + 1) }.joined(separator: "," + space()) + "]"
        case 2: return randomString(&random, key: false)
        case 3:
            let integer = ["0", "7", "-3", "42", "1000000", "-98765432109876543210"][Int(random.next(upTo: 6))]
            let fraction = ["", ".0", ".5", ".250", ".000001", ".123456789012"][Int(random.next(upTo: 6))]
            return integer + fraction
        case 4: return ["true", "false", "null"][Int(random.next(upTo: 3))]
        default: return randomValue(&random, depth: depth + 1, object: true)
        }
    }

    static func randomString(_ random: inout SplitMix64, key: Bool) -> String {
        let pieces = ["a", "b", "Z", "é", "中", "😀", "\\n", "\\t", "\\\"", "\\\\", "\\/", "\\u00e9", "\\u001f", "\\ud83d\\ude00",
                      "\\b", "\\f", "\\r", " ", "\u{7f}", "0", "_"]
        let count = Int(random.next(upTo: key ? 3 : 8)) + (key ? 1 : 0)
        return "\"" + (0..<count).map { _ in pieces[Int(random.next(upTo: UInt64(pieces.count)))] }.joined() + "\""
    }
}
