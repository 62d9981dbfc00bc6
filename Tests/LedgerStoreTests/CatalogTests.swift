import Foundation
import LedgerDomain
import LedgerPostgres
@testable import LedgerStore
import LedgerTestKit
import Testing

@Suite("Appending through the event catalog", .database)
struct CatalogTests {
    static let device = DeviceContext(
        platform: .ios, idfv: "9B1DEB4D-3B7D-4BAD-9BDD-2B0D7B3DCB6D", limitAdTracking: false, attStatus: .denied,
        ip: "203.0.113.7",
        userAgent: UserAgentParts(appName: "Game", appVersion: "3.2.0", osName: "iOS", osVersion: "17.4.1", locale: "en_US",
                                  deviceModel: "iPhone15,2", build: "21E236"),
        osVersion: "17.4.1", appVersion: "3.2.0", bundleID: "com.example.game")

    @Test("a catalog event appends; an unknown type and a wrongly typed field are refused by name, nothing stored")
    func catalogRefusals() async throws {
        try await withCatalogStore { store, database throws in
            let session = SessionStarted(device: Self.device)
            let good = NewEvent(type: SessionStarted.eventType, schemaVersion: SessionStarted.schemaVersion,
                                data: try EventCatalog.standard.encode(session), occurredAt: Date())
            try await store.append([good], to: "device-com.example.game/install-1")

            let unknown = NewEvent(type: "Teleported", data: Data("{}".utf8), occurredAt: Date())
            let unknownError = await #expect(throws: EventStoreError.self) {
                try await store.append([unknown], to: "device-com.example.game/install-1")
            }
            guard case .invalidEvent(0, "Teleported", _, let rule, _)? = unknownError else {
                Issue.record("expected the unknown type to be refused, got \(String(describing: unknownError))")
                return
            }
            #expect(rule.contains("unknown"))

            // The platform is a string in the catalog; a number there names the field.
            var object = try #require(try JSONSerialization.jsonObject(with: good.data) as? [String: Any])
            var deviceObject = try #require(object["device"] as? [String: Any])
            deviceObject["platform"] = 7
            object["device"] = deviceObject
            var wrongType = good
            wrongType.id = UUID()
            wrongType.data = try JSONSerialization.data(withJSONObject: object)
            let typeError = await #expect(throws: EventStoreError.self) {
                try await store.append([wrongType], to: "device-com.example.game/install-1")
            }
            guard case .invalidEvent(0, "SessionStarted", let field, _, _)? = typeError else {
                Issue.record("expected the wrong field type to be refused, got \(String(describing: typeError))")
                return
            }
            #expect(field == "device.platform")
            #expect(try eventCount(database) == 1)
        }
    }

    // docs/events.md, "The envelope": metadata is EventMetadata, or empty.
    @Test("metadata that is neither empty nor EventMetadata is refused with its field named, also on a typed event")
    func metadataIsChecked() async throws {
        try await withCatalogStore { store, database throws in
            let stream = "device-com.example.game/install-1"
            let refused: [(metadata: String, field: String)] = [
                (#"{"app_id":"com.example.game"}"#, "metadata.actor"),
                (#"{"actor":"importer","correlation_id":"not-a-uuid"}"#, "metadata.correlation_id"),
                (#"{"actor":"importer","who":"x"}"#, "metadata.who"),
            ]
            for (metadata, field) in refused {
                let event = try NewEvent(SessionStarted(device: Self.device), metadata: Data(metadata.utf8), occurredAt: Date())
                let error = await #expect(throws: EventStoreError.self) { try await store.append([event], to: stream) }
                guard case .invalidEvent(0, SessionStarted.eventType, let named, _, _)? = error else {
                    Issue.record("\(metadata): expected a refusal, got \(String(describing: error))")
                    continue
                }
                #expect(named == field, "\(metadata)")
            }
            #expect(try eventCount(database) == 0)
            for metadata in ["{}", " { }\n", #"{"actor":"importer","app_id":"com.example.game"}"#] {
                try await store.append([try NewEvent(SessionStarted(device: Self.device), metadata: Data(metadata.utf8),
                                                     occurredAt: Date())], to: stream)
            }
            #expect(try eventCount(database) == 3)
        }
    }

    @Test("metadata the catalog wrote from a checked EventMetadata is trusted; changed bytes are checked again")
    func encodedMetadataIsCheckedOnce() async throws {
        try await withCatalogStore { store, database throws in
            let stream = "device-com.example.game/install-1"
            var event = try NewEvent(SessionStarted(device: Self.device), occurredAt: Date())
            try event.setMetadata(EventMetadata(actor: "importer", appID: try AppID("com.example.game")))
            #expect(event.metadataWasEncoded(by: .standard))
            #expect(!event.metadataWasEncoded(by: EventCatalog([SessionStarted.self])))
            try await store.append([event], to: stream)
            // The bytes changed afterwards: the store checks them, and refuses the unknown field.
            var changed = try NewEvent(SessionStarted(device: Self.device), occurredAt: Date())
            try changed.setMetadata(EventMetadata(actor: "importer"))
            changed.metadata = Data(#"{"actor":"importer","who":"x"}"#.utf8)
            #expect(!changed.metadataWasEncoded(by: .standard))
            let error = await #expect(throws: EventStoreError.self) { try await store.append([changed], to: stream) }
            guard case .invalidEvent(0, SessionStarted.eventType, "metadata.who", _, _)? = error else {
                Issue.record("expected the changed metadata to be checked, got \(String(describing: error))")
                return
            }
            // A metadata rule is checked when the catalog writes it.
            var unnamed = try NewEvent(SessionStarted(device: Self.device), occurredAt: Date())
            #expect(throws: EventValidationError.self) { try unnamed.setMetadata(EventMetadata(actor: "")) }
            #expect(try eventCount(database) == 1)
        }
    }

    @Test("a typed event the catalog encoded is trusted as is; changed bytes, or another catalog's, are checked again")
    func typedEventsAreCheckedOnce() async throws {
        try await withCatalogStore { store, database throws in
            let stream = "device-com.example.game/install-1"
            let typed = try NewEvent(SessionStarted(device: Self.device), occurredAt: Date())
            #expect(typed.type == SessionStarted.eventType && typed.schemaVersion == SessionStarted.schemaVersion)
            #expect(typed.data == (try EventCatalog.standard.encode(SessionStarted(device: Self.device))))
            // Equality is the event's value: how its payload was made does not count.
            let same = NewEvent(id: typed.id, type: typed.type, schemaVersion: typed.schemaVersion, data: typed.data,
                                metadata: typed.metadata, occurredAt: typed.occurredAt)
            #expect(same == typed && same.hashValue == typed.hashValue)
            // The store's catalog validator trusts exactly these: the typed event, not the copy made
            // from its bytes, and not an event encoded by another catalog.
            #expect(typed.wasEncoded(by: .standard) && !same.wasEncoded(by: .standard))
            #expect(!typed.wasEncoded(by: EventCatalog([SessionStarted.self])))
            try await store.append([typed], to: stream)
            let stored = try #require(try await store.readStream(stream).first)
            #expect(try LedgerJSON.makeDecoder().decode(SessionStarted.self, from: stored.data) == SessionStarted(device: Self.device))

            // The typed event's bytes changed afterwards: the store checks them, and refuses.
            var changed = try NewEvent(SessionStarted(device: Self.device), occurredAt: Date())
            var object = try #require(try JSONSerialization.jsonObject(with: changed.data) as? [String: Any])
            object["device"] = "not a device"
            changed.data = try JSONSerialization.data(withJSONObject: object)
            #expect(!changed.wasEncoded(by: .standard))
            let changedError = await #expect(throws: EventStoreError.self) { try await store.append([changed], to: stream) }
            guard case .invalidEvent(0, "SessionStarted", "device", _, _)? = changedError else {
                Issue.record("expected the changed payload to be checked, got \(String(describing: changedError))")
                return
            }
            // Encoded by another catalog, which knows the type: the store's own catalog still checks
            // it. A catalog without the type refuses it, although the other catalog encoded it.
            let narrow = EventStore(pool: store.pool, catalog: EventCatalog([FirstOpen.self]), logger: TestDatabase.quietLogger)
            let foreign = try NewEvent(SessionStarted(device: Self.device), catalog: .standard, occurredAt: Date())
            let foreignError = await #expect(throws: EventStoreError.self) { try await narrow.append([foreign], to: stream) }
            guard case .invalidEvent(0, "SessionStarted", _, let rule, _)? = foreignError else {
                Issue.record("expected the narrow catalog to refuse the type, got \(String(describing: foreignError))")
                return
            }
            #expect(rule == "unknown_type")
            #expect(try eventCount(database) == 1)
        }
    }
}

/// Runs `body` with a store that checks every append against the standard catalog, on a fresh
/// migrated database.
private func withCatalogStore<T>(_ body: (EventStore, TestDatabase.Handle) async throws -> T) async throws -> T {
    try await TestDatabase.with { database throws in
        let pool = PostgresPool(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        defer { pool.close() }
        return try await body(EventStore(pool: pool, catalog: .standard, logger: TestDatabase.quietLogger), database)
    }
}
