import Foundation
@testable import LedgerDomain
import Testing

/// Runs `validate` and returns the error it must throw.
func validationError(_ type: String, version: Int = 1, _ data: Data) -> EventValidationError? {
    let fromBytes: EventValidationError?
    do {
        _ = try EventCatalog.standard.validate(type: type, schemaVersion: version, data: data)
        fromBytes = nil
    } catch {
        fromBytes = error
    }
    // The same JSON already parsed (as the HTTP API gives it) must meet the same refusal.
    if let json = try? JSONDecoder().decode(JSONValue.self, from: data), case .object = json {
        var fromJSON: EventValidationError?
        do {
            _ = try EventCatalog.standard.validateEncoding(type: type, schemaVersion: version, json: json)
        } catch {
            fromJSON = error
        }
        #expect(fromJSON?.kind == fromBytes?.kind && fromJSON?.field == fromBytes?.field && fromJSON?.rule == fromBytes?.rule,
                "\(type): from bytes \(String(describing: fromBytes)), from parsed JSON \(String(describing: fromJSON))")
    }
    return fromBytes
}

@Suite("The catalog's gate: envelope-level rules")
struct CatalogGateTests {
    @Test("an unknown type is refused, naming the type")
    func unknownType() throws {
        let error = try #require(validationError("FirstInstall", Data("{}".utf8)))
        #expect(error.kind == .unknownType)
        #expect(error.eventType == "FirstInstall")
        #expect(error.rule == "unknown_type")
        #expect(error.message.contains("FirstInstall"))
        #expect(error.field == nil)
    }

    @Test("an unknown schema version is refused, naming the known ones")
    func unknownSchemaVersion() throws {
        let data = try EventCatalog.standard.encode(Samples.firstOpen())
        let error = try #require(validationError("FirstOpen", version: 2, data))
        #expect(error.kind == .unknownSchemaVersion)
        #expect(error.rule == "unknown_schema_version")
        #expect(error.message.contains("known: 1"))
        #expect(validationError("FirstOpen", version: 0, data)?.kind == .unknownSchemaVersion)
    }

    @Test("data over 1 MiB is refused, naming the limit")
    func tooLarge() throws {
        let padding = String(repeating: "a", count: EventCatalog.maximumDataSize)
        let data = Data(#"{"skan_version":"\#(padding)"}"#.utf8)
        let error = try #require(validationError("SKANRegistered", data))
        #expect(error.kind == .tooLarge)
        #expect(error.rule == "max_1048576_bytes")
        #expect(error.message.contains("1048576"))
    }

    @Test("data of exactly 1 MiB passes the size rule")
    func exactlyAtLimit() throws {
        let skeleton = #"{"name":"x","device":"#
        let device = String(decoding: try LedgerJSON.makeEncoder().encode(Samples.iosDevice), as: UTF8.self)
        let prefix = skeleton + device + #","custom_data":{"k":""#
        let suffix = #""}}"#
        let fill = String(repeating: "a", count: EventCatalog.maximumDataSize - prefix.utf8.count - suffix.utf8.count)
        let data = Data((prefix + fill + suffix).utf8)
        #expect(data.count == EventCatalog.maximumDataSize)
        #expect(throws: Never.self) { try EventCatalog.standard.validate(type: "InAppEventRecorded", schemaVersion: 1, data: data) }
    }

    @Test("encoding an event past 1 MiB is refused too")
    func encodeTooLarge() throws {
        let event = InAppEventRecorded(
            device: Samples.iosDevice, name: "big", customData: ["k": .string(String(repeating: "a", count: EventCatalog.maximumDataSize))])
        #expect(throws: EventValidationError.self) { try EventCatalog.standard.encode(event) }
        do {
            _ = try EventCatalog.standard.encode(event)
        } catch {
            #expect(error.kind == .tooLarge)
        }
    }

    @Test("bytes that are not UTF-8 are refused")
    func invalidUTF8() throws {
        let data = Data([0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xFF, 0xFE, 0x22, 0x7D])  // {"a":"\xFF\xFE"}
        let error = try #require(validationError("SKANRegistered", data))
        #expect(error.kind == .invalidUTF8)
        #expect(error.rule == "utf8")
    }

    @Test("text that is not JSON is refused")
    func malformedJSON() throws {
        let error = try #require(validationError("SKANRegistered", Data(#"{"skan_version": "4.0""#.utf8)))
        #expect(error.kind == .malformedJSON)
        #expect(error.rule == "json_syntax")
    }

    @Test("JSON that is not an object is refused", arguments: ["[1, 2]", "\"FirstOpen\"", "42", "null", "true"])
    func notAnObject(_ text: String) throws {
        let error = try #require(validationError("SKANRegistered", Data(text.utf8)))
        #expect(error.kind == .notAnObject)
        #expect(error.rule == "json_object")
    }

    @Test("a field the type does not know is refused, naming it")
    func unknownField() throws {
        let data = try JSONEditing.data(Samples.firstOpen(), setting: "1.2.3.4", at: [.key("device"), .key("ip_address")])
        let error = try #require(validationError("FirstOpen", data))
        #expect(error.kind == .unknownField)
        #expect(error.field == "device.ip_address")
        #expect(error.rule == "unknown_field")
    }

    @Test("an unknown field set to null is accepted, as is an optional field set to null")
    func nullFields() throws {
        var data = try JSONEditing.data(Samples.firstOpen(), setting: NSNull(), at: [.key("device"), .key("comment")])
        #expect(throws: Never.self) { try EventCatalog.standard.validate(type: "FirstOpen", schemaVersion: 1, data: data) }
        data = try JSONEditing.data(Samples.firstOpen(), setting: NSNull(), at: [.key("deep_link")])
        let event = try EventCatalog.standard.validate(type: "FirstOpen", schemaVersion: 1, data: data) as? FirstOpen
        #expect(event?.deepLink == nil)
    }

    @Test("U+0000 in a string is refused (jsonb cannot store it)")
    func nulCharacter() throws {
        // Checked text fields refuse every control character; free-form JSON is caught by this rule.
        let data = Data(#"{"details":{"Version3.1":{"iad-keyword":"a\u0000"}}}"#.utf8)
        let error = try #require(validationError("IAdAttributionDetailsReceived", data))
        #expect(error.kind == .invalidValue)
        #expect(error.field == #"details["Version3.1"].iad-keyword"#)
        #expect(error.rule == "no_nul_character")
        let event = InAppEventRecorded(device: Samples.iosDevice, name: "x", customData: ["k": .string("a\u{0}b")])
        #expect(throws: EventValidationError.self) { try EventCatalog.standard.encode(event) }
        // The text of an escape (a backslash, then `u0000`) is no U+0000: encoded and kept as is.
        let lookalike = InAppEventRecorded(device: Samples.iosDevice, name: "x", customData: ["k": .string(#"a\u0000b"#)])
        let encoded = try EventCatalog.standard.encode(lookalike)
        #expect(!EventCatalog.holdsEscapedNUL(encoded), "its backslash is escaped: no second parse")
        let decoded = try #require(try EventCatalog.standard.validate(type: "InAppEventRecorded", schemaVersion: 1, data: encoded)
            as? InAppEventRecorded)
        #expect(decoded.customData?["k"] == .string(#"a\u0000b"#))
    }

    @Test("the error's description names type, field, message and rule")
    func errorDescription() {
        let error = EventValidationError(
            .invalidValue, eventType: "SKANConversionValueUpdated", field: "fine_value", rule: "range_0_63",
            message: "The value must lie between 0 and 63.")
        #expect(error.description == "SKANConversionValueUpdated: fine_value: The value must lie between 0 and 63. [range_0_63]")
    }

    @Test("encoding a type that is not in the catalog is refused")
    func encodeUnregistered() {
        let catalog = EventCatalog([FirstOpen.self])
        #expect(throws: EventValidationError.self) { try catalog.encode(SKANRegistered(skanVersion: "4.0")) }
        #expect(catalog.entries.count == 1)
    }

    @Test("metadata round-trips and is checked like data")
    func metadata() throws {
        let catalog = EventCatalog.standard
        let metadata = EventMetadata(
            correlationID: Samples.eventID, causationID: Samples.sendID, actor: "worker", appID: try Samples.app())
        let data = try catalog.encode(metadata: metadata)
        #expect(String(decoding: data, as: UTF8.self)
            == #"{"actor":"worker","app_id":"com.example.game","causation_id":"6f9619ff-8b86-d011-b42d-00c04fc964ff","correlation_id":"3d2c1b0a-0000-4000-8000-000000000001"}"#)
        #expect(try catalog.validateMetadata(data) == metadata)
        do {
            _ = try catalog.validateMetadata(Data(#"{"app_id":"com.example.game"}"#.utf8))
            Issue.record("metadata without actor was accepted")
        } catch {
            #expect(error.kind == .missingField)
            #expect(error.field == "actor")
            #expect(error.eventType == "EventMetadata")
        }
        #expect(throws: EventValidationError.self) { try catalog.validateMetadata(Data(#"{"actor":"cli","user":"bob"}"#.utf8)) }
    }
}
