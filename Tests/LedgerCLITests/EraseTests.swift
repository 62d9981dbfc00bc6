import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFolds
import LedgerPostgres
import LedgerProjections
import LedgerStore
import LedgerTestKit
import Testing

/// `ledger erase` (issue 9, docs/privacy.md): the right to erasure (GDPR art. 17) honoured by an
/// immutable log through crypto-shredding.
@Suite("ledger erase", .database)
struct EraseTests {
    static let app = "com.example.game"
    static let device = "device-com.example.game/install-erase"
    static let keptDevice = "device-com.example.game/install-kept"

    /// Every personal value of the erased device's history, as the app reported it.
    static let identifiers = [
        "EA7583CD-A667-48BC-B806-42ECB2B48606", "9B1DEB4D-3B7D-4BAD-9BDD-2B0D7B3DCB6D", "203.0.113.77",
        "user-private-771", "iPhone15,2", "gclid-PRIVATE-abc", "txn-PRIVATE-9", "secret-custom-value",
    ]
    static let keptIDFA = "11111111-2222-4333-8444-555555555555"

    static let launch = Date(timeIntervalSince1970: 1_763_000_000)

    static func context(idfa: String, ip: String) -> DeviceContext {
        DeviceContext(
            platform: .ios, idfa: idfa, idfv: "9B1DEB4D-3B7D-4BAD-9BDD-2B0D7B3DCB6D", limitAdTracking: false,
            attStatus: .authorized, ip: ip,
            userAgent: UserAgentParts(appName: "ExampleGame", appVersion: "3.2.0", osName: "iOS", osVersion: "17.4.1",
                                      locale: "en_US", deviceModel: "iPhone15,2", build: "21E236"),
            osVersion: "17.4.1", appVersion: "3.2.0", bundleID: app, customUserID: "user-private-771")
    }

    static func new<Event: LedgerEvent>(_ event: Event, _ offset: TimeInterval) throws -> NewEvent {
        NewEvent(type: Event.eventType, data: try EventCatalog.standard.encode(event), occurredAt: launch.addingTimeInterval(offset))
    }

    /// The erased device's history: install (with AdServices token and a deep link), session, an
    /// in-app event with custom data, a purchase, SKAN registration and a conversion value.
    static func history() throws -> [NewEvent] {
        let device = context(idfa: identifiers[0], ip: identifiers[2])
        return [
            try new(FirstOpen(appID: try AppID(app), device: device,
                              deepLink: DeepLink(url: "https://example.com/o?gclid=gclid-PRIVATE-abc", gclid: "gclid-PRIVATE-abc"),
                              adServicesToken: AdServicesToken(token: "YWRzZXJ2aWNlcy10b2tlbi1ub3QtcGVyc29uYWw=", issuedAt: launch)), 0),
            try new(SKANRegistered(skanVersion: "4.0"), 1),
            try new(SessionStarted(device: device), 60),
            try new(InAppEventRecorded(device: device, name: "level_up", customData: ["note": .string("secret-custom-value")]), 120),
            try new(RevenueRecorded(device: device, revenue: try Money(amount: "4.99", currency: CurrencyCode("EUR")),
                                    kind: .iap, transactionID: "txn-PRIVATE-9"), 180),
            try new(SKANConversionValueUpdated(fineValue: 12, lockWindow: false), 240),
        ]
    }

    static func pgDump(_ conninfo: String) throws -> String {
        let candidates = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? [])
            .sorted { (Int($0) ?? 0) > (Int($1) ?? 0) }.map { "/usr/lib/postgresql/\($0)/bin/pg_dump" }
        let binary = try #require(candidates.first { FileManager.default.isExecutableFile(atPath: $0) }, "pg_dump not installed")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["--dbname=\(conninfo)", "--no-owner"]
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let dump = out.fileHandleForReading.readDataToEndOfFile()
        let problems = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(String(decoding: problems, as: UTF8.self))")
        return String(decoding: dump, as: UTF8.self)
    }

    /// The text of every row of every table of the database.
    static func everyTable(_ pool: PostgresPool) async throws -> [String: String] {
        let tables = try await pool.query("""
            SELECT quote_ident(schemaname) || '.' || quote_ident(tablename) FROM pg_tables
            WHERE schemaname NOT IN ('pg_catalog', 'information_schema')
            """).map { try $0.decode(String.self, at: 0) }
        var texts: [String: String] = [:]
        for table in tables {
            texts[table] = try await pool.query(PostgresQuery(sql: "SELECT coalesce(string_agg(t::text, E'\\n'), '') FROM \(table) t"))
                .single().decode(String.self, at: 0)
        }
        return texts
    }

    @Test("erasure: no plaintext identifier in any table or in pg_dump, verify passes, projections rebuild, sends cancelled")
    func eraseDevice() async throws {
        let database = try await TestDatabase.create()
        defer { database.drop() }
        let pool = PostgresPool(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        defer { pool.close() }
        let store = EventStore(pool: pool, catalog: .standard, logger: TestDatabase.quietLogger)
        let appended = try await store.append(try Self.history(), to: Self.device)
        try await store.append([try Self.new(SessionStarted(device: Self.context(idfa: Self.keptIDFA, ip: "198.51.100.1")), 0)],
                               to: Self.keptDevice)
        // Two sends requested by the install, one of them tried (its request carries the IDFA).
        let install = try #require(try await store.event(id: appended.events[0].id))
        let sends = try await pool.withConnection { connection in
            try connection.transaction { connection in
                try [("google", SendProvider.google, SendKind.conversion), ("apple", .appleAdServices, .tokenLookup)].map {
                    key, provider, kind in
                    let request = try Outbox.request(provider: provider, kind: kind, cause: install,
                                                     deviceStreamID: StreamID(Self.device), idempotencyKey: "erase-\(key)")
                    return try Outbox.enqueue(request, store: store, now: Self.launch, on: connection).sendID
                }
            }
        }
        let tried = "send-" + (try #require(sends.first)).uuidString.lowercased()
        let attempt = SendAttempted(attempt: 1, request: RecordedRequest(
            method: "GET", url: "https://www.googleadservices.com/pagead/conversion/app/1.0?rdid=\(Self.identifiers[0])",
            headers: [HTTPHeader("X-Forwarded-For", Self.identifiers[2])]))
        try await store.append([try Self.new(attempt, 5)], to: tried)

        let runner = ProjectionRunner(store: store, projections: ProjectionCatalog.standard, logger: TestDatabase.quietLogger)
        try await runner.prepare()
        let tokens = AdServicesTokenProjection(AdServicesTokenReducer())
        let skan = SKANDeviceProjection(SKANDeviceReducer())
        let deadline = ContinuousClock.now + .seconds(60)
        // Each projection reads up to the gap-safe horizon of its own step: wait for both.
        while ContinuousClock.now < deadline {
            try await runner.catchUp()
            if try await skan.storedState(of: Self.device, pool: pool)?.updatesApplied ?? 0 > 0,
               try await tokens.storedState(of: Self.device, pool: pool) != nil { break }
        }
        let tokensBefore = try #require(try await tokens.storedState(of: Self.device, pool: pool))
        let skanBefore = try #require(try await skan.storedState(of: Self.device, pool: pool))
        #expect(skanBefore.updatesApplied == 1)

        // Before: sealed at rest already, readable through the store.
        let before = try await Self.everyTable(pool).values.joined(separator: "\n")
        #expect(!before.contains(Self.identifiers[0]), "personal fields are never stored in clear")

        let erased = try await LedgerProcess.runDetached([
            "erase", "--device", Self.device, "--requested-by", "dsar-portal", "--requested-at", "2026-05-01T12:00:00Z",
            "--json", "--database-url", database.conninfo,
        ])
        #expect(erased.status == 0, "\(erased.stderr)")
        let outcome = try #require(try JSONSerialization.jsonObject(with: Data(erased.stdout.utf8)) as? [String: String])
        #expect(outcome["already_erased"] == "false" && outcome["sends_cancelled"] == "2" && outcome["keys_destroyed"] == "1")

        // No identifier of the device anywhere: every table's rows, and pg_dump's text.
        let tables = try await Self.everyTable(pool)
        #expect(tables.keys.contains("public.events") && tables.keys.contains("public.privacy_keys"))
        for (table, text) in tables {
            for identifier in Self.identifiers {
                #expect(!text.contains(identifier), "\(identifier) remains in clear in \(table)")
            }
        }
        let dump = try Self.pgDump(database.conninfo)
        #expect(dump.contains("ErasureCompleted") && dump.contains("dsar-portal"))
        for identifier in Self.identifiers {
            #expect(!dump.contains(identifier), "\(identifier) remains in pg_dump's output")
        }

        // The log verifies: hashes cover the ciphertext, which did not change.
        let verified = try await LedgerProcess.runDetached(["verify", "--database-url", database.conninfo])
        #expect(verified.status == 0 && verified.stdout.hasPrefix("OK: "), "\(verified.stdout)\(verified.stderr)")

        // Reads show the erasure; typed decoding still works; the auditor sees who and when.
        let history = try await store.readHistory(of: .deviceHistory(Self.device))
        for event in history {
            _ = try EventCatalog.standard.decode(type: event.type, schemaVersion: event.schemaVersion, data: event.data)
        }
        let first = try #require(history.first)
        let firstOpen = try LedgerJSON.makeDecoder().decode(FirstOpen.self, from: first.data)
        #expect(firstOpen.device.idfa == nil && firstOpen.device.ip == nil && firstOpen.deepLink?.gclid == nil)
        #expect(firstOpen.device.osVersion == "17.4.1" && firstOpen.adServicesToken?.token == "YWRzZXJ2aWNlcy10b2tlbi1ub3QtcGVyc29uYWw=")
        let marker = try #require(try JSONSerialization.jsonObject(with: first.data) as? [String: Any])
        #expect((marker["ledger_erased"] as? [String])?.contains("device.idfa") == true)
        let erasure = try #require(history.last { $0.type == ErasureCompleted.eventType })
        let record = try LedgerJSON.makeDecoder().decode(ErasureCompleted.self, from: erasure.data)
        #expect(record.requestedBy == "dsar-portal" && record.deviceStreamID.rawValue == Self.device)

        // Pending sends cancelled, in their streams; the queue holds nothing of the device.
        let queued = try await pool.query("SELECT count(*) FROM send_queue WHERE device_stream_id = \(Self.device)")
            .single().decode(Int.self, at: 0)
        #expect(queued == 0)
        for sendID in sends {
            let events = try await store.readStream("send-" + sendID.uuidString.lowercased())
            let last = try #require(events.last as RecordedEvent?)
            #expect(last.type == SendCancelled.eventType)
            #expect(try LedgerJSON.makeDecoder().decode(SendCancelled.self, from: last.data).reason == "erasure")
        }

        // Projections rebuilt from the log keep the device's non-personal state. (A rebuild reads
        // gap-safely: wait until other tests' transactions no longer hold the horizon back.)
        let total = try await pool.query("SELECT count(*) FROM events").single().decode(Int.self, at: 0)
        let horizon = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < horizon, try await pool.query(
            "SELECT count(*) FROM events WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())"
        ).single().decode(Int.self, at: 0) < total {
            try await Task.sleep(for: .milliseconds(10))
        }
        let rebuilder = ProjectionRebuilder(store: store, logger: TestDatabase.quietLogger)
        for projection in ProjectionCatalog.standard { _ = try await rebuilder.rebuild(projection) }
        let tokensAfter = try #require(try await tokens.storedState(of: Self.device, pool: pool))
        #expect(tokensAfter == (try await tokens.state(of: Self.device, store: store)), "rebuild = replay of the log")
        // The tokens' states are kept; their digests (derived from a personal value) are renamed.
        #expect(tokensAfter.tokens.count == tokensBefore.tokens.count && !tokensAfter.tokens.isEmpty)
        #expect(tokensAfter.tokens.keys.allSatisfy { $0.hasPrefix("erased-") })
        #expect(Set(tokensAfter.tokenOfEvent.keys) == Set(tokensBefore.tokenOfEvent.keys))
        #expect(Set(tokensAfter.tokenOfEvent.values).isSubset(of: Set(tokensAfter.tokens.keys)))
        // SKAN keeps the revenue and conversion values; only the digest of the store transaction id
        // (derived from a personal field, used to count each purchase once) is gone.
        #expect(skanBefore.countedTransactions.count == 1)
        var skanExpected = skanBefore
        skanExpected.countedTransactions = [:]
        #expect(try await skan.storedState(of: Self.device, pool: pool) == skanExpected)

        // Another device is untouched.
        let kept = try await store.readStream(Self.keptDevice)
        #expect(try LedgerJSON.makeDecoder().decode(SessionStarted.self, from: try #require(kept.first).data).device.idfa == Self.keptIDFA)

        // Erasing twice is harmless: nothing new is written.
        let count = try await pool.query("SELECT count(*) FROM events").single().decode(Int.self, at: 0)
        let again = try await LedgerProcess.runDetached(["erase", "--device", Self.device, "--database-url", database.conninfo])
        #expect(again.status == 0 && again.stdout.hasPrefix("already erased at "), "\(again.stdout)\(again.stderr)")
        #expect(try await pool.query("SELECT count(*) FROM events").single().decode(Int.self, at: 0) == count)
    }

    @Test("erasing a device the ledger has never seen is a clear error (exit 8), and writes nothing")
    func unknownDevice() async throws {
        let database = try await TestDatabase.create()
        defer { database.drop() }
        let result = try await LedgerProcess.runDetached(
            ["erase", "--app", Self.app, "--device", "nobody", "--database-url", database.conninfo])
        #expect(result.status == 8, "\(result.stdout)\(result.stderr)")
        #expect(result.stderr.contains("no device device-com.example.game/nobody in the ledger"), "\(result.stderr)")
        let pool = PostgresPool(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        defer { pool.close() }
        let written = try await pool.query("SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM privacy_erasures)")
            .single().decode(Int.self, at: 0)
        #expect(written == 0)
        let notDevice = try await LedgerProcess.runDetached(["erase", "--device", "send-1", "--database-url", database.conninfo])
        #expect(notDevice.status == 8, "\(notDevice.stderr)")
    }

    @Test("the Swift API: DeviceEraser erases once, then answers 'already erased'; unknown devices are typed errors")
    func eraserAPI() async throws {
        let database = try await TestDatabase.create()
        defer { database.drop() }
        let pool = PostgresPool(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        defer { pool.close() }
        let store = EventStore(pool: pool, catalog: .standard, logger: TestDatabase.quietLogger)
        try await store.append(try Self.history(), to: Self.device)
        let eraser = DeviceEraser(store: store)
        let first = try await eraser.erase(device: try StreamID(Self.device), requestedBy: "support", requestedAt: Self.launch)
        #expect(!first.alreadyErased && first.keysDestroyed == 1 && first.sendsCancelled.isEmpty)
        let second = try await eraser.erase(device: try StreamID(Self.device), requestedBy: "support", requestedAt: Self.launch)
        #expect(second.alreadyErased && second.erasureEventID == first.erasureEventID && second.keysDestroyed == 0)
        await #expect(throws: PrivacyError.unknownDevice("device-com.example.game/ghost")) {
            try await eraser.erase(device: try StreamID("device-com.example.game/ghost"), requestedBy: "support", requestedAt: Self.launch)
        }
        // Appends after the erasure record no personal data of the device.
        try await store.append([try Self.new(SessionStarted(device: Self.context(idfa: Self.keptIDFA, ip: "198.51.100.1")), 900)],
                               to: Self.device)
        let raw = try await pool.query("SELECT string_agg(data::text, ' ') FROM events").single().decode(String.self, at: 0)
        #expect(!raw.contains(Self.keptIDFA))
    }
}
