import Foundation
import LedgerDomain
import Testing

@Suite("Decoding errors name the field path and the rule")
struct FieldErrorTests {
    @Test("a missing top-level field is named")
    func missingTopLevel() throws {
        let data = try JSONEditing.data(Samples.firstOpen(), setting: nil, at: [.key("app_id")])
        let error = try #require(validationError("FirstOpen", data))
        #expect(error.kind == .missingField)
        #expect(error.field == "app_id")
        #expect(error.rule == "required")
    }

    @Test("a missing nested field is named by its dotted path")
    func missingNested() throws {
        let data = try JSONEditing.data(Samples.firstOpen(), setting: nil, at: [.key("device"), .key("platform")])
        let error = try #require(validationError("FirstOpen", data))
        #expect(error.kind == .missingField)
        #expect(error.field == "device.platform")
    }

    // Where a key repeats, the tree the input check reads and the decoded value need not hold the
    // same string: the canonical JSON validation returns (what the store is given as checked) is
    // checked for U+0000 itself, as encode(_:) checks it.
    @Test("the canonical JSON validation returns never holds U+0000, also behind a repeated key")
    func canonicalHoldsNoNUL() throws {
        let sample = InAppEventRecorded(device: Samples.iosDevice, name: "x", customData: ["k": .string("v")])
        let text = String(decoding: try EventCatalog.standard.encode(sample), as: UTF8.self)
        #expect(text.contains(#""k":"v""#))
        for repeated in [#""k":"a\u0000","k":"v""#, #""k":"v","k":"a\u0000""#] {
            let data = Data(text.replacingOccurrences(of: #""k":"v""#, with: repeated).utf8)
            do {
                let checked = try EventCatalog.standard.validateEncoding(type: "InAppEventRecorded", schemaVersion: 1, data: data)
                #expect(!checked.canonical.contains(EventCatalog.escapedNUL))
            } catch {
                #expect(error.rule == "no_nul_character")
            }
        }
    }

    @Test("a required field set to null counts as missing")
    func nullRequired() throws {
        let data = try JSONEditing.data(Samples.firstOpen(), setting: NSNull(), at: [.key("device"), .key("os_version")])
        let error = try #require(validationError("FirstOpen", data))
        #expect(error.kind == .missingField)
        #expect(error.field == "device.os_version")
    }

    @Test("a missing field inside an array element is named with its index")
    func missingInArray() throws {
        let data = try JSONEditing.data(
            Samples.attributionDecided(), setting: nil, at: [.key("candidates"), .index(1), .key("outcome")])
        let error = try #require(validationError("AttributionDecided", data))
        #expect(error.kind == .missingField)
        #expect(error.field == "candidates[1].outcome")
    }

    @Test("a personal field required at append time is missing for validate, absent-tolerant for decode")
    func personalRequiredAtAppend() throws {
        let data = try JSONEditing.data(Samples.firstOpen(), setting: nil, at: [.key("device"), .key("ip")])
        let error = try #require(validationError("FirstOpen", data))
        #expect(error.kind == .missingField)
        #expect(error.field == "device.ip")
        // Reading stored history (for example after erasure dropped the value) still works.
        let decoded = try EventCatalog.standard.decode(type: "FirstOpen", schemaVersion: 1, data: data) as? FirstOpen
        #expect(decoded?.device.ip == nil)
        #expect(decoded?.device.osVersion == "17.4.1")
    }

    @Test("a wrong type at the top level is named with the expected JSON type")
    func wrongTypeTopLevel() throws {
        let data = try JSONEditing.data(Samples.sendAttempted(), setting: "1", at: [.key("attempt")])
        let error = try #require(validationError("SendAttempted", data))
        #expect(error.kind == .wrongType)
        #expect(error.field == "attempt")
        #expect(error.rule == "expected_number")
    }

    @Test("a wrong type in a nested object is named")
    func wrongTypeNested() throws {
        let data = try JSONEditing.data(Samples.firstOpen(), setting: "no", at: [.key("device"), .key("limit_ad_tracking")])
        let error = try #require(validationError("FirstOpen", data))
        #expect(error.kind == .wrongType)
        #expect(error.field == "device.limit_ad_tracking")
        #expect(error.rule == "expected_boolean")
    }

    @Test("a wrong type inside array elements is named with the index")
    func wrongTypeInArrays() throws {
        let event = try Samples.attributionDecided()
        var data = try JSONEditing.data(event, setting: 1_714_566_896, at: [.key("candidates"), .index(1), .key("time")])
        var error = try #require(validationError("AttributionDecided", data))
        #expect(error.kind == .wrongType)
        #expect(error.field == "candidates[1].time")
        #expect(error.rule == "expected_string")

        data = try JSONEditing.data(event, setting: "15", at: [.key("input_positions"), .index(2)])
        error = try #require(validationError("AttributionDecided", data))
        #expect(error.field == "input_positions[2]")
        #expect(error.rule == "expected_number")

        data = try JSONEditing.data(Samples.sendAttempted(), setting: 7, at: [.key("request"), .key("headers"), .index(1), .key("value")])
        error = try #require(validationError("SendAttempted", data))
        #expect(error.field == "request.headers[1].value")
    }

    @Test("an object where an array belongs, and the reverse, are wrong types")
    func containerMismatch() throws {
        let event = try Samples.attributionDecided()
        var data = try JSONEditing.data(event, setting: ["a": 1], at: [.key("candidates")])
        #expect(validationError("AttributionDecided", data)?.rule == "expected_array")
        data = try JSONEditing.data(event, setting: [1], at: [.key("winner")])
        #expect(validationError("AttributionDecided", data)?.rule == "expected_object")
    }

    @Test("a value outside an enumeration is an invalid value listing the accepted ones")
    func enumValue() throws {
        let data = try JSONEditing.data(Samples.firstOpen(), setting: "iOS", at: [.key("device"), .key("platform")])
        let error = try #require(validationError("FirstOpen", data))
        #expect(error.kind == .invalidValue)
        #expect(error.field == "device.platform")
        #expect(error.rule == "one_of")
        #expect(error.message.contains("ios, android"))
    }

    @Test("an unreadable timestamp is an invalid value")
    func badTimestamp() throws {
        for text in ["2024-05-01 12:34:56Z", "2024-02-30T00:00:00Z", "2024-05-01T12:34:56", "yesterday"] {
            let data = try JSONEditing.data(Samples.firstOpen(), setting: text, at: [.key("adservices_token"), .key("issued_at")])
            let error = try #require(validationError("FirstOpen", data))
            #expect(error.kind == .invalidValue)
            #expect(error.field == "adservices_token.issued_at")
            #expect(error.rule == "iso8601_timestamp")
        }
    }

    @Test("a value type's own rule is reported at its field")
    func valueTypeRules() throws {
        let revenue = RevenueRecorded(device: Samples.iosDevice, revenue: try Samples.money("1"), kind: .iap, transactionID: "t")
        var data = try JSONEditing.data(revenue, setting: "eur", at: [.key("revenue"), .key("currency")])
        var error = try #require(validationError("RevenueRecorded", data))
        #expect(error.kind == .invalidValue)
        #expect(error.field == "revenue.currency")
        #expect(error.rule == "currency_iso4217")

        for amount in ["1e5", "12abc", "", ".5", "1.", "NaN"] {
            data = try JSONEditing.data(revenue, setting: amount, at: [.key("revenue"), .key("amount")])
            error = try #require(validationError("RevenueRecorded", data))
            #expect(error.field == "revenue.amount")
            #expect(error.rule == "decimal_amount")
        }
        data = try JSONEditing.data(revenue, setting: 19.99, at: [.key("revenue"), .key("amount")])
        #expect(validationError("RevenueRecorded", data)?.rule == "expected_string")

        data = try JSONEditing.data(Samples.firstOpen(), setting: "", at: [.key("app_id")])
        error = try #require(validationError("FirstOpen", data))
        #expect(error.field == "app_id")
        #expect(error.rule == "non_empty")

        data = try JSONEditing.data(Samples.attributionDecided(), setting: "device com.example", at: [.key("device_stream_id")])
        #expect(validationError("AttributionDecided", data)?.rule == "stream_id_syntax")
    }

    @Test("a malformed UUID is an invalid value at its field")
    func badUUID() throws {
        let data = try JSONEditing.data(Samples.attributionDecided(), setting: "not-a-uuid", at: [.key("decision_id")])
        let error = try #require(validationError("AttributionDecided", data))
        #expect(error.kind == .invalidValue)
        #expect(error.field == "decision_id")
    }

    @Test("keys that are not plain names are quoted in paths")
    func quotedKeys() throws {
        let event = InAppEventRecorded(device: Samples.iosDevice, name: "x", customData: ["a.b": .object(["c": .number(1)])])
        let data = Data(String(decoding: try LedgerJSON.makeEncoder().encode(event), as: UTF8.self).utf8)
        let error = try #require(validationError("InAppEventRecorded", data))
        #expect(error.field == #"custom_data["a.b"]"#)
        #expect(error.rule == "primitive_or_array_of_primitives")
    }
}
