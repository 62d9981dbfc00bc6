import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerStore
import LedgerTestSupport
import Testing

@Suite("Appending through the event catalog")
struct CatalogTests {
    static let device = DeviceContext(
        platform: .ios, idfv: "9B1DEB4D-3B7D-4BAD-9BDD-2B0D7B3DCB6D", limitAdTracking: false, attStatus: .denied,
        ip: "203.0.113.7",
        userAgent: UserAgentParts(appName: "Game", appVersion: "3.2.0", osName: "iOS", osVersion: "17.4.1", locale: "en_US",
                                  deviceModel: "iPhone15,2", build: "21E236"),
        osVersion: "17.4.1", appVersion: "3.2.0", bundleID: "com.example.game")

    @Test("a catalog event appends; an unknown type and a wrongly typed field are refused by name, nothing stored")
    func catalogRefusals() async throws {
        try await TestDatabase.with { database throws in
            let pool = PostgresPool(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            defer { pool.close() }
            let store = EventStore(pool: pool, catalog: .standard, logger: TestDatabase.quietLogger)
            let session = SessionStarted(device: Self.device)
            let good = NewEvent(type: SessionStarted.eventType, schemaVersion: SessionStarted.schemaVersion,
                                data: try EventCatalog.standard.encode(session), occurredAt: Date())
            try await store.append([good], to: "device-com.example.game-install-1")

            let unknown = NewEvent(type: "Teleported", data: Data("{}".utf8), occurredAt: Date())
            let unknownError = await #expect(throws: EventStoreError.self) {
                try await store.append([unknown], to: "device-com.example.game-install-1")
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
                try await store.append([wrongType], to: "device-com.example.game-install-1")
            }
            guard case .invalidEvent(0, "SessionStarted", let field, _, _)? = typeError else {
                Issue.record("expected the wrong field type to be refused, got \(String(describing: typeError))")
                return
            }
            #expect(field == "device.platform")
            #expect(try eventCount(database) == 1)
        }
    }
}
