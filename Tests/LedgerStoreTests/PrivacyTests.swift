import Foundation
import LedgerDomain
import LedgerPostgres
@testable import LedgerStore
import LedgerTestKit
import Testing

/// Crypto-shredding in the store (issue 9, docs/privacy.md): personal fields sealed per device on
/// append, opened on read, erased when the device's keys are destroyed.
@Suite("Privacy: personal fields sealed per device", .database)
struct PrivacyTests {
    static let keyA = "q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80="
    static let keyB = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
    static let idfa = "EA7583CD-A667-48BC-B806-42ECB2B48606"
    static let ip = "203.0.113.7"
    static let customUser = "user-private-771"
    static let device = "device-com.example.game/install-42"

    static let deviceContext = DeviceContext(
        platform: .ios, idfa: idfa, limitAdTracking: false, attStatus: .authorized, ip: ip,
        userAgent: UserAgentParts(appName: "ExampleGame", appVersion: "3.2.0", osName: "iOS", osVersion: "17.4.1",
                                  locale: "en_US", deviceModel: "iPhone15,2", build: "21E236"),
        osVersion: "17.4.1", appVersion: "3.2.0", bundleID: "com.example.game", customUserID: customUser)

    static func firstOpen() throws -> NewEvent {
        let event = FirstOpen(appID: try AppID("com.example.game"), device: deviceContext)
        return NewEvent(type: FirstOpen.eventType, data: try EventCatalog.standard.encode(event),
                        occurredAt: Date(timeIntervalSince1970: 1_763_000_000))
    }

    static func protection(_ current: String, previous: [String] = []) throws -> PersonalDataProtection {
        PersonalDataProtection(masterKeys: try MasterKeys(base64: current, previous: previous))
    }

    /// A store with explicit master keys on the database.
    static func store(_ database: TestDatabase.Handle, key: String = keyA, previous: [String] = []) throws -> EventStore {
        EventStore(pool: PostgresPool(conninfo: database.conninfo, maxConnections: 2, logger: TestDatabase.quietLogger),
                   validator: EventStore.catalogValidator(), privacy: try protection(key, previous: previous),
                   logger: TestDatabase.quietLogger)
    }

    static func rawData(_ database: TestDatabase.Handle) throws -> [String] {
        let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        return try connection.query("SELECT data::text FROM events ORDER BY position").map { try $0.decode(String.self, at: 0) }
    }

    static func destroyKeys(_ database: TestDatabase.Handle, subject: String) throws {
        let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        try connection.execute("""
            UPDATE privacy_keys SET wrapped_key = NULL, destroyed_at = now() WHERE subject = \(subject)
            """)
    }

    @Test("personal fields are stored sealed, and read back exactly as appended")
    func sealedAtRestOpenOnRead() async throws {
        try await TestDatabase.with { database in
            let store = try Self.store(database)
            defer { store.pool.close() }
            let event = try Self.firstOpen()
            try await store.append([event], to: Self.device)
            let raw = try Self.rawData(database).joined()
            for secret in [Self.idfa, Self.ip, Self.customUser, "iPhone15,2"] {
                #expect(!raw.contains(secret), "\(secret) is stored in clear")
            }
            #expect(raw.contains("\"ledger_personal\""))
            #expect(raw.contains("\"os_version\": \"17.4.1\""), "non-personal fields stay in clear")
            let read = try await store.readStream(Self.device)
            let decoded = try LedgerJSON.makeDecoder().decode(FirstOpen.self, from: read[0].data)
            #expect(decoded == FirstOpen(appID: try AppID("com.example.game"), device: Self.deviceContext))
            #expect(try await store.readHistory(of: .deviceHistory(Self.device))[0].data == read[0].data)
            #expect(try await store.event(id: event.id)?.data == read[0].data)
        }
    }

    @Test("a reader keeping only transaction_id gets it opened and none of the device's fields; other types keep all")
    func selectionKeepsOnlyNamedFields() async throws {
        try await TestDatabase.with { database in
            let store = try Self.store(database)
            defer { store.pool.close() }
            let revenue = RevenueRecorded(device: Self.deviceContext, revenue: try Money(amount: "4.99", currency: CurrencyCode("USD")),
                                          kind: .iap, transactionID: "txn-secret-1")
            try await store.append([try Self.firstOpen(),
                                    NewEvent(type: RevenueRecorded.eventType, data: try EventCatalog.standard.encode(revenue),
                                             occurredAt: Date(timeIntervalSince1970: 1_763_000_100))], to: Self.device)
            // The stored (sealed) events, read by a store that opens nothing.
            let sealedReader = EventStore(
                pool: PostgresPool(conninfo: database.conninfo, maxConnections: 1, logger: TestDatabase.quietLogger),
                privacy: PersonalDataProtection(keys: .success(try MasterKeys(base64: Self.keyA)), catalog: .standard, isEnabled: false),
                logger: TestDatabase.quietLogger)
            defer { sealedReader.pool.close() }
            var kept = try await sealedReader.readStream(Self.device)
            var all = kept
            #expect(!String(decoding: kept[1].data, as: UTF8.self).contains("txn-secret-1"))
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try store.privacy.reveal(&kept, keeping: .only([RevenueRecorded.eventType: ["transaction_id"]]), on: connection)
            try store.privacy.reveal(&all, on: connection)

            let object = try #require(try JSONSerialization.jsonObject(with: kept[1].data) as? [String: Any])
            #expect(object["transaction_id"] as? String == "txn-secret-1")
            #expect(object["ledger_personal"] == nil)
            let device = try #require(object["device"] as? [String: Any])
            for field in ["idfa", "ip", "user_agent", "custom_user_id"] { #expect(device[field] == nil, "\(field) was opened") }
            #expect(device["os_version"] as? String == "17.4.1", "non-personal fields stay")
            // Without a selection, everything; a type the selection does not list, everything too.
            let full = try LedgerJSON.makeDecoder().decode(RevenueRecorded.self, from: all[1].data)
            #expect(full.device == Self.deviceContext && full.transactionID == "txn-secret-1")
            #expect(kept[0].data == all[0].data)
            #expect(try LedgerJSON.makeDecoder().decode(FirstOpen.self, from: kept[0].data).device == Self.deviceContext)
        }
    }

    @Test("a send stream's personal fields are sealed with its device's key")
    func sendStreamUsesDeviceKey() async throws {
        try await TestDatabase.with { database in
            let store = try Self.store(database)
            defer { store.pool.close() }
            let cause = try await store.append([try Self.firstOpen()], to: Self.device)
            let sendID = UUID()
            let requested = SendRequested(
                sendID: sendID, provider: .google, kind: .conversion, causeEventID: cause.events[0].id,
                causeStreamID: try StreamID(Self.device), deviceStreamID: try StreamID(Self.device), idempotencyKey: "k1")
            let attempted = SendAttempted(attempt: 1, request: RecordedRequest(
                method: "GET", url: "https://www.googleadservices.com/pagead/conversion/app/1.0?rdid=\(Self.idfa)",
                headers: [HTTPHeader("X-Forwarded-For", Self.ip)]))
            let stream = "send-" + sendID.uuidString.lowercased()
            try await store.append([NewEvent(type: SendRequested.eventType, data: try EventCatalog.standard.encode(requested),
                                             occurredAt: Date())], to: stream)
            try await store.append([NewEvent(type: SendAttempted.eventType, data: try EventCatalog.standard.encode(attempted),
                                             occurredAt: Date())], to: stream)
            #expect(!(try Self.rawData(database).joined().contains(Self.idfa)))
            let subjects = try await store.pool.query("SELECT DISTINCT subject FROM privacy_keys")
                .map { try $0.decode(String.self, at: 0) }
            #expect(subjects == [Self.device])
            let read = try await store.readStream(stream)
            #expect(try LedgerJSON.makeDecoder().decode(SendAttempted.self, from: read[1].data) == attempted)

            // Destroying the device's key erases the send's personal fields too.
            try Self.destroyKeys(database, subject: Self.device)
            let erased = try LedgerJSON.makeDecoder().decode(SendAttempted.self, from: try await store.readStream(stream)[1].data)
            #expect(erased.request.url == nil && erased.request.headers == nil && erased.request.method == "GET")
        }
    }

    @Test("a destroyed key reads as erased: marker, typed decoding, intact hashes")
    func destroyedKeyReadsErased() async throws {
        try await TestDatabase.with { database in
            let store = try Self.store(database)
            defer { store.pool.close() }
            let appended = try await store.append([try Self.firstOpen()], to: Self.device)
            try Self.destroyKeys(database, subject: Self.device)
            let read = try await store.readStream(Self.device)
            let object = try #require(try JSONSerialization.jsonObject(with: read[0].data) as? [String: Any])
            #expect(object["ledger_personal"] == nil)
            #expect(Set(object["ledger_erased"] as? [String] ?? []) == [
                "device.idfa", "device.ip", "device.user_agent", "device.custom_user_id",
            ])
            let decoded = try LedgerJSON.makeDecoder().decode(FirstOpen.self, from: read[0].data)
            #expect(decoded.device.idfa == nil && decoded.device.ip == nil && decoded.device.customUserID == nil)
            #expect(decoded.device.osVersion == "17.4.1" && decoded.device.attStatus == .authorized)
            _ = try EventCatalog.standard.decode(type: FirstOpen.eventType, schemaVersion: 1, data: read[0].data)
            #expect(read[0].hash == appended.events[0].hash)
            let report = try await store.verify()
            #expect(report.isIntact, "\(String(describing: report.problem))")
        }
    }

    @Test("keys are wrapped by the master key: another master key is a typed error, never 'erased'")
    func wrongMasterKeyIsAnError() async throws {
        try await TestDatabase.with { database in
            let store = try Self.store(database)
            defer { store.pool.close() }
            try await store.append([try Self.firstOpen()], to: Self.device)
            let other = try Self.store(database, key: Self.keyB)
            defer { other.pool.close() }
            await #expect(throws: PrivacyError.self) { try await other.readStream(Self.device) }
            let wrapped = try await store.pool.query("SELECT wrapped_key FROM privacy_keys").single().decode(Data.self, at: 0)
            #expect(wrapped.count == 60)
        }
    }

    @Test("rotation: keys re-wrapped with the new master key open without the old one")
    func rotation() async throws {
        try await TestDatabase.with { database in
            let old = try Self.store(database)
            defer { old.pool.close() }
            try await old.append([try Self.firstOpen()], to: Self.device)
            let during = try Self.store(database, key: Self.keyB, previous: [Self.keyA])
            defer { during.pool.close() }
            #expect(try await during.readStream(Self.device).count == 1, "the previous key still opens during rotation")
            #expect(try during.privacy.rewrapDataKeys(on: PostgresConnection(conninfo: database.conninfo)) == 1)
            let after = try Self.store(database, key: Self.keyB)
            defer { after.pool.close() }
            let read = try await after.readStream(Self.device)
            #expect(try LedgerJSON.makeDecoder().decode(FirstOpen.self, from: read[0].data).device.idfa == Self.idfa)
            await #expect(throws: PrivacyError.self) { try await old.readStream(Self.device) }
        }
    }

    @Test("personal data in a stream without a device is refused, and nothing is stored")
    func noSubjectRefused() async throws {
        try await TestDatabase.with { database in
            let store = try Self.store(database)
            defer { store.pool.close() }
            await #expect(throws: PrivacyError.noDataSubject(stream: "audit-1", eventType: FirstOpen.eventType)) {
                try await store.append([try Self.firstOpen()], to: "audit-1")
            }
            #expect(try eventCount(database) == 0)
        }
    }

    @Test("after an erasure, new personal data of the device is never recorded")
    func appendAfterErasure() async throws {
        try await TestDatabase.with { database in
            let store = try Self.store(database)
            defer { store.pool.close() }
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try connection.execute("""
                INSERT INTO privacy_erasures (subject, requested_by, requested_at, event_id)
                VALUES (\(Self.device), 'test', now(), \(UUID()))
                """)
            try await store.append([try Self.firstOpen()], to: Self.device)
            let raw = try Self.rawData(database).joined()
            #expect(!raw.contains(Self.idfa) && !raw.contains(Self.ip))
            #expect(raw.contains("\"ledger_erased\""))
            #expect(try connection.query("SELECT count(*) FROM privacy_keys").single().decode(Int.self, at: 0) == 0)
        }
    }

    @Test("a device's first key is made just before its events: a refused append stores no event, and its key is the one later appends use")
    func firstKeyPrecedesItsEvents() async throws {
        try await TestDatabase.with { database in
            let store = try Self.store(database)
            defer { store.pool.close() }
            func keys() async throws -> Int {
                try await store.pool.query("SELECT count(*) FROM privacy_keys").single().decode(Int.self, at: 0)
            }
            // The stream is new, so expecting version 3 fails after the key was made (the key goes in
            // with the event's own statement, which then inserts no event): no event is stored; the
            // key may stay.
            await #expect(throws: EventStoreError.wrongExpectedVersion(stream: Self.device, expected: .exact(3), actual: 0)) {
                try await store.append([try Self.firstOpen()], to: Self.device, expected: .exact(3))
            }
            #expect(try await keys() <= 1)
            #expect(try eventCount(database) == 0)
            // Then an append that holds stores the events and uses that same key, as later appends do.
            try await store.append([try Self.firstOpen()], to: Self.device, expected: .noStream)
            try await store.append([try Self.firstOpen()], to: Self.device)
            #expect(try await keys() == 1)
            #expect(try await store.readStream(Self.device).count == 2)
        }
    }

    @Test("a device's first sealed event and its new key are stored together; a process that has not seen the device yet seals with the key it has")
    func firstKeyWithItsEvent() async throws {
        try await TestDatabase.with { database in
            let store = try Self.store(database)
            defer { store.pool.close() }
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            func keyIDs() throws -> [String] {
                try connection.query("SELECT key_id::text FROM privacy_keys ORDER BY created_at").map { try $0.decode(String.self, at: 0) }
            }
            try store.append([try Self.firstOpen()], to: Self.device, on: connection)
            let made = try keyIDs()
            #expect(made.count == 1)
            #expect(store.privacy.cachedKey(for: Self.device, now: Date())?.id.uuidString.lowercased() == made.first)
            #expect(try Self.rawData(database).joined().contains(made[0]))
            // Another process (a store without the key cached): the statement finds the key, adds
            // none, and the event is sealed with it.
            let other = try Self.store(database)
            defer { other.pool.close() }
            try other.append([try Self.firstOpen()], to: Self.device, on: connection)
            #expect(try keyIDs() == made)
            let raw = try Self.rawData(database)
            #expect(raw.count == 2 && raw.allSatisfy { $0.contains(made[0]) && !$0.contains(Self.idfa) })
            #expect(try await other.readStream(Self.device).allSatisfy { String(decoding: $0.data, as: UTF8.self).contains(Self.idfa) })
            #expect(try await store.verify().isIntact)
        }
    }

    @Test("a device's key read to open its events is remembered for appending; one read inside a transaction only once it commits")
    func readKeysServeAppends() async throws {
        try await TestDatabase.with { database in
            let writer = try Self.store(database)
            defer { writer.pool.close() }
            let appended = try await writer.append([try Self.firstOpen()], to: Self.device)
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            let keyID = try connection.query("SELECT key_id FROM privacy_keys").single().decode(UUID.self, at: 0)
            // Another process: nothing cached until it reads the device's events.
            let reader = try Self.store(database)
            defer { reader.pool.close() }
            #expect(reader.privacy.cachedKey(for: Self.device, now: Date()) == nil)
            struct Abandon: Error {}
            #expect(throws: Abandon.self) {
                try connection.transaction { connection in
                    _ = try EventStore.fetchByIDs(appended.events.map(\.id), privacy: reader.privacy, on: connection)
                    throw Abandon()
                }
            }
            #expect(reader.privacy.cachedKey(for: Self.device, now: Date()) == nil)
            _ = try await reader.readStream(Self.device)
            #expect(reader.privacy.cachedKey(for: Self.device, now: Date())?.id == keyID)
            // Its next append seals with that key and makes none.
            try await reader.append([try Self.firstOpen()], to: Self.device)
            #expect(try connection.query("SELECT count(*) FROM privacy_keys").single().decode(Int.self, at: 0) == 1)
            #expect(try Self.rawData(database).allSatisfy { $0.contains(keyID.uuidString.lowercased()) })
        }
    }

    @Test("retrying a sealed batch is recognised as the same batch")
    func idempotentRetrySealed() async throws {
        try await TestDatabase.with { database in
            let store = try Self.store(database)
            defer { store.pool.close() }
            let event = try Self.firstOpen()
            let first = try await store.append([event], to: Self.device)
            let retry = try await store.append([event], to: Self.device)
            #expect(retry.wasDuplicate && retry.events[0].position == first.events[0].position)
        }
    }

    @Test("master keys: base64 of 32 bytes, named by fingerprint; malformed keys are typed errors")
    func masterKeyConfiguration() throws {
        let keys = try MasterKeys(base64: Self.keyA)
        #expect(keys.currentID.hasPrefix("mk-") && keys.currentID.count == 19)
        #expect(!keys.currentID.contains(Self.keyA))
        #expect(throws: PrivacyError.masterKeyMalformed(source: "LEDGER_MASTER_KEY")) {
            try MasterKeys.resolve(environment: ["LEDGER_MASTER_KEY": "c2hvcnQ="], conninfo: "host=/x")
        }
        #expect(throws: PrivacyError.masterKeyMissing) {
            try MasterKeys.resolve(environment: [:], conninfo: "host=db.example.com dbname=ledger")
        }
        let resolved = try MasterKeys.resolve(environment: ["LEDGER_MASTER_KEY": Self.keyB, "LEDGER_MASTER_KEY_PREVIOUS": Self.keyA],
                                              conninfo: "host=db.example.com")
        #expect(resolved.currentID == (try MasterKeys(base64: Self.keyB)).currentID)
        #expect(resolved.previous.keys.sorted() == [keys.currentID])
    }
}
