import Foundation
import LedgerDomain
import Testing

/// Whether `decoded` is a value of `Event` equal to `event`.
func same<Event: LedgerEvent>(_ event: Event, _ decoded: any LedgerEvent) -> Bool { (decoded as? Event) == event }

/// The canonical JSON text of an event.
func json<Event: LedgerEvent>(_ event: Event) throws -> String {
    String(decoding: try EventCatalog.standard.encode(event), as: UTF8.self)
}

@Suite("Round trips and stable encodings")
struct RoundTripTests {
    let catalog = EventCatalog.standard

    @Test("every sample round-trips through encode and validate to an equal value")
    func everyTypeRoundTrips() throws {
        for sample in try Samples.all() {
            try roundTrip(sample)
        }
    }

    private func roundTrip<Event: LedgerEvent>(_ event: Event) throws {
        let data = try catalog.encode(event)
        let validated = try catalog.validate(type: Event.eventType, schemaVersion: Event.schemaVersion, data: data)
        #expect(same(event, validated), "\(Event.eventType) changed through a round trip")
        let decoded = try catalog.decode(type: Event.eventType, schemaVersion: Event.schemaVersion, data: data)
        #expect(same(event, decoded))
        // Canonical: encoding the decoded value gives the same bytes.
        #expect(try catalog.encode(validated) == data)
        // The canonical JSON validation returns is those bytes too, from input spaced otherwise.
        let spaced = Data(" \n".utf8) + data + Data("\n ".utf8)
        let checked = try catalog.validateEncoding(type: Event.eventType, schemaVersion: Event.schemaVersion, data: spaced)
        #expect(same(event, checked.event))
        #expect(checked.canonical == data, "\(Event.eventType): validateEncoding's canonical JSON is encode's")
        // And from the same JSON already parsed, as the HTTP API reads it.
        let parsed = try JSONDecoder().decode(JSONValue.self, from: data)
        let fromJSON = try catalog.validateEncoding(type: Event.eventType, schemaVersion: Event.schemaVersion, json: parsed)
        #expect(same(event, fromJSON.event))
        #expect(fromJSON.canonical == data, "\(Event.eventType): the parsed JSON's canonical JSON is encode's")
    }

    @Test("the samples cover every type of the standard catalog")
    func samplesCoverCatalog() throws {
        let sampled = Set(try Samples.all().map { type(of: $0).eventType })
        let catalogued = Set(catalog.entries.map(\.eventType))
        #expect(sampled == catalogued)
        #expect(catalog.entries.count == 26)
    }

    @Test("FirstOpen has a stable encoding")
    func firstOpenGolden() throws {
        let actual = try json(Samples.firstOpen())
        #expect(actual == Golden.firstOpen)
    }

    @Test("SendAttempted has a stable encoding")
    func sendAttemptedGolden() throws {
        let actual = try json(Samples.sendAttempted())
        #expect(actual == Golden.sendAttempted)
    }

    @Test("AttributionDecided has a stable encoding")
    func attributionDecidedGolden() throws {
        let actual = try json(Samples.attributionDecided())
        #expect(actual == Golden.attributionDecided)
    }

    @Test("DeviceUserAgentRecorded has a stable encoding")
    func deviceUserAgentRecordedGolden() throws {
        let actual = try json(Samples.deviceUserAgentRecorded)
        #expect(actual == Golden.deviceUserAgentRecorded)
    }

    @Test("money keeps its exact decimal text")
    func moneyIsExact() throws {
        let event = RevenueRecorded(
            device: Samples.iosDevice, revenue: try Samples.money("0.1"), kind: .adMonetization, transactionID: "t-1")
        let text = try json(event)
        #expect(text.contains(#""revenue":{"amount":"0.1","currency":"EUR"}"#))
        let decoded = try catalog.validate(type: "RevenueRecorded", schemaVersion: 1, data: Data(text.utf8)) as? RevenueRecorded
        #expect(decoded?.revenue.amount == Decimal(string: "0.1"))
    }

    @Test("the entry of a type names its version, categories and personal fields")
    func entries() throws {
        let entry = try #require(catalog.entry(named: "FirstOpen"))
        #expect(entry.schemaVersion == 1)
        #expect(entry.category == .device)
        #expect(entry.streamCategory == .device)
        #expect(entry.personalFields.contains("device.idfa"))
        #expect(catalog.entry(named: "FirstOpen", schemaVersion: 2) == nil)
        #expect(catalog.entry(named: "NoSuchEvent") == nil)
        #expect(catalog.entry(named: "ResponseReceived")?.category == .provider)
        #expect(catalog.entry(named: "ErasureCompleted")?.category == .privacy)
        #expect(catalog.entry(named: "SKANPostbackReceived")?.category == .skanPostback)
    }

    @Test("type names fit the store's event_type constraint and are unique")
    func typeNames() {
        let names = catalog.entries.map(\.eventType)
        #expect(Set(names).count == names.count)
        let pattern = /^[A-Za-z][A-Za-z0-9_.]{0,127}$/
        for name in names {
            #expect(name.wholeMatch(of: pattern) != nil, "\(name)")
        }
    }
}
