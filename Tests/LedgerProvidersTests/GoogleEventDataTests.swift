import Foundation
import LedgerProviders
import LedgerTestKit
import Testing

/// Google App Conversion Tracking API, "Event Data Encoding".
struct GoogleEventDataTests {
    func encoded(_ value: GoogleEventValue) throws -> String {
        let object = try GoogleEventData(["k": value]).encodedObject()
        return String(object.dropFirst(#"{"k":"#.count).dropLast())
    }

    @Test("Google App Conversion Tracking API, \"Event Data Encoding\" Float: dot separator, no exponent, no grouping (-0.5, 2.99, 1000000.123)")
    func floats() throws {
        #expect(try encoded(.float(Decimal(string: "-0.5")!)) == "-0.5")
        #expect(try encoded(.float(Decimal(string: "2.99")!)) == "2.99")
        #expect(try encoded(.float(Decimal(string: "1000000.123")!)) == "1000000.123")
        // What "\(double)" would print as 1e-05 or 2e+09:
        #expect(try encoded(.float(Decimal(string: "0.00001")!)) == "0.00001")
        #expect(try encoded(.float(Decimal(string: "2E+9")!)) == "2000000000")
        gaExpectError(field: "app_event_data.k", rule: "finite_number") { try GoogleEventData(["k": .float(Decimal.nan)]).encodedObject() }
    }

    @Test("Google App Conversion Tracking API, \"Event Data Encoding\": money has two decimals (2.99)")
    func money() throws {
        #expect(try encoded(.money(Decimal(string: "2.99")!)) == "2.99")
        #expect(try encoded(.money(Decimal(3))) == "3.00")
        #expect(try encoded(.money(Decimal(string: "2.9")!)) == "2.90")
        #expect(try encoded(.money(Decimal(string: "2.995")!)) == "3.00")
        #expect(try encoded(.money(Decimal(string: "-0.5")!)) == "-0.50")
        #expect(try encoded(.money(Decimal(string: "1000000")!)) == "1000000.00")
        #expect(try encoded(.money(Decimal(string: "0.001")!)) == "0.00")
    }

    @Test("Google App Conversion Tracking API, \"Event Data Encoding\" Integer: whole values, no decimals, no grouping (1000, -11, 0)")
    func integers() throws {
        #expect(try encoded(.integer(1000)) == "1000")
        #expect(try encoded(.integer(-11)) == "-11")
        #expect(try encoded(.integer(0)) == "0")
        #expect(try encoded(.integer(Int64.max)) == "9223372036854775807")
    }

    @Test("Google App Conversion Tracking API, \"Event Data Encoding\" Date: yyyy-mm-dd, always all digits (\"2016-09-23\", 5th → 05)")
    func dates() throws {
        #expect(try encoded(.date(GoogleDate(text: "2016-09-23"))) == #""2016-09-23""#)
        #expect(try encoded(.date(GoogleDate(year: 1990, month: 12, day: 31))) == #""1990-12-31""#)
        #expect(try encoded(.date(GoogleDate(year: 2016, month: 9, day: 5))) == #""2016-09-05""#)
        #expect(try GoogleDate(Date(timeIntervalSince1970: 1_478_713_087)).text == "2016-11-09")
        for bad in ["2016-9-23", "16-09-23", "2016-02-30", "2016/09/23", "2016-13-01", "2016-09-23T00:00"] {
            gaExpectError(field: "app_event_data", rule: "yyyy_mm_dd") { try GoogleDate(text: bad) }
        }
        gaExpectError(field: "app_event_data", rule: "yyyy_mm_dd") { try GoogleDate(year: 10_000, month: 1, day: 1) }
        #expect(try GoogleDate(text: "2016-02-29").day == 29)
    }

    @Test("Google App Conversion Tracking API, \"Event Data Encoding\" Timestamp: Unix UTC with up to µs (1478713087, 1073513982.123000)")
    func timestamps() throws {
        #expect(try encoded(.timestamp(GoogleTimestamp(text: "1478713087"))) == "1478713087")
        #expect(try encoded(.timestamp(GoogleTimestamp(text: "1073513982.123"))) == "1073513982.123000")
        #expect(try encoded(.timestamp(GoogleTimestamp(microsecondsSince1970: 1_073_513_982_123_000))) == "1073513982.123000")
    }

    @Test("Google App Conversion Tracking API, \"Event Data Encoding\" Arrays: only arrays of primitives ([123, 456, 789], [\"abc\"])")
    func arrays() throws {
        #expect(try encoded(.array([.integer(123), .integer(456), .integer(789)])) == "[123,456,789]")
        #expect(try encoded(.array([.string("abc")])) == #"["abc"]"#)
        #expect(try encoded(.array([.bool(true), .money(1), .string("x")])) == #"[true,1.00,"x"]"#)
        gaExpectError(field: "app_event_data.k[1]", rule: "array_of_primitives_only") {
            try GoogleEventData(["k": .array([.integer(1), .array([.integer(2)])])]).encodedObject()
        }
        gaExpectError(field: "app_event_data.k[0]", rule: "array_of_primitives_only") {
            try GoogleEventData(["k": .array([.object([GoogleEventField("a", .integer(1))])])]).encodedObject()
        }
    }

    @Test("Google App Conversion Tracking API: app_event_data is \"a simple JSON object\": nested objects refused")
    func nestedObjectsRefused() {
        gaExpectError(field: "app_event_data.k", rule: "nested_object_refused") {
            try GoogleEventData(["k": .object([GoogleEventField("a", .integer(1))])]).encodedObject()
        }
        gaExpectError(field: "app_event_data.k", rule: "duplicate_key") {
            try GoogleEventData(["k": .integer(1), "k": .integer(2)]).encodedObject()
        }
        gaExpectError(field: "app_event_data", rule: "non_empty_key") { try GoogleEventData(["": .integer(1)]).encodedObject() }
        // The builder applies the same checks.
        gaExpectError(field: "app_event_data.k", rule: "nested_object_refused") {
            try GASamples.builder.conversionRequest(
                for: GASamples.event(.firstOpen, eventData: GoogleEventData(["k": .object([])])))
        }
    }

    @Test("strings are escaped as JSON; '/' and non-ASCII are kept; key order is kept")
    func stringsAndOrder() throws {
        let data = GoogleEventData(["z": .string("a\"b\\c/d\né ✓\u{01}"), "a": .integer(1)])
        #expect(try data.encodedObject() == #"{"z":"a\"b\\c/d\né ✓\u0001","a":1}"#)
        #expect(try data.requestBody()?.gaText == #"{"app_event_data":{"z":"a\"b\\c/d\né ✓\u0001","a":1}}"#)
        #expect(try GoogleEventData().requestBody() == nil)
    }

    @Test("The Google App Conversion Tracking API's own example {\"level\": 5, \"attempts\": 20} imports from JSON and is sent as is")
    func importFromJSON() throws {
        let data = try GoogleEventData.fromJSON(Data(#"{"level": 5, "attempts": 20, "ratio": 1e-5, "ids": ["a", 2, true]}"#.utf8))
        #expect(data.fields.map(\.key) == ["level", "attempts", "ratio", "ids"])
        #expect(data.fields[0].value == .integer(5))
        #expect(try data.encodedObject() == #"{"level":5,"attempts":20,"ratio":0.00001,"ids":["a",2,true]}"#)
        gaExpectError(field: "app_event_data.o", rule: "nested_object_refused") { try GoogleEventData.fromJSON(Data(#"{"o":{"a":1}}"#.utf8)) }
        gaExpectError(field: "app_event_data.a[0]", rule: "array_of_primitives_only") { try GoogleEventData.fromJSON(Data(#"{"a":[[1]]}"#.utf8)) }
        gaExpectError(field: "app_event_data.n", rule: "primitive_values_only") { try GoogleEventData.fromJSON(Data(#"{"n":null}"#.utf8)) }
        gaExpectError(field: "app_event_data.h", rule: "finite_number") { try GoogleEventData.fromJSON(Data(#"{"h":1e400}"#.utf8)) }
        gaExpectError(field: "app_event_data", rule: "wrong_type") { try GoogleEventData.fromJSON(Data("[1]".utf8)) }
        gaExpectError(field: "app_event_data", rule: "not_json") { try GoogleEventData.fromJSON(Data("{".utf8)) }
        let huge = try GoogleEventData.fromJSON(Data(#"{"h":99999999999999999999999}"#.utf8))
        #expect(try huge.encodedObject() == #"{"h":99999999999999999999999}"#)
    }

    @Test("event data round-trips through Codable keeping types, order and exact decimals")
    func codable() throws {
        let data = GoogleEventData([
            "money": .money(Decimal(string: "2.90")!), "float": .float(Decimal(string: "0.00001")!), "int": .integer(-11),
            "date": .date(try GoogleDate(text: "2016-09-23")), "ts": .timestamp(try GoogleTimestamp(text: "1073513982.123")),
            "list": .array([.string("a"), .bool(false)]),
        ])
        let decoded = try JSONDecoder().decode(GoogleEventData.self, from: JSONEncoder().encode(data))
        #expect(decoded == data)
        #expect(try decoded.encodedObject() == data.encodedObject())
    }
}
