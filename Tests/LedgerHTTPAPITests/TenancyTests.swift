import AsyncHTTPClient
import AttributionLedger
import Foundation
import LedgerDomain
import LedgerHTTPAPI
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import NIOCore
import NIOHTTP1
import Prometheus
import Testing

/// Two apps whose ids, with a device id each, spelled the same stream under the old
/// `device-<app>-<device>` encoding: `com.acme.game` + `lite-x` and `com.acme.game-lite` + `x`.
let gameApp = "com.acme.game"
let liteApp = "com.acme.game-lite"
let gameKey = "test-key-game-not-a-real-credential"
let liteKey = "test-key-lite-not-a-real-credential"
/// The IDFA the lite app records for its device `x`: it must never reach the game app's key.
let liteIDFA = "0E4C0F6A-3A6B-4C8E-9D3E-7A1B2C3D4E5F"

/// A server with keys for `gameApp` and `liteApp` over a fresh database.
func withTenantAPI<T: Sendable>(_ body: (RunningAPI, AttributionLedger) async throws -> T) async throws -> T {
    try await TestDatabase.with { database throws in
        let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 4, logger: TestDatabase.quietLogger)
        defer { pool.close() }
        let ledger = AttributionLedger(pool: pool, logger: TestDatabase.quietLogger)
        let keys = try APIKeys(digests: [gameApp: [APIKeys.digest(of: gameKey)], liteApp: [APIKeys.digest(of: liteKey)]])
        let registry = PrometheusCollectorRegistry()
        let server = LedgerHTTPServer(
            ledger: ledger, keys: keys, configuration: LedgerHTTPConfiguration(host: "127.0.0.1", port: 0),
            metrics: registry, logger: TestDatabase.quietLogger)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let running = Task { try await server.runUntilCancelled { port in continuation.yield(port) } }
        defer { running.cancel() }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())
        return try await body(RunningAPI(baseURL: "http://127.0.0.1:\(port)", port: port, pool: pool, metrics: registry), ledger)
    }
}

@Suite("Tenancy: a key of one app can neither read nor write another's", .database)
struct TenancyTests {
    /// The lite app records its device `x` (IDFA, IP) and returns the event id.
    static func recordLiteDevice(_ api: RunningAPI) async throws -> UUID {
        let id = UUID()
        let (status, body) = try await api.send(
            .POST, "/v1/apps/\(liteApp)/events", key: liteKey,
            json: batch(firstOpenJSON(id: id, device: "x", app: liteApp, idfa: liteIDFA)))
        #expect(status == 200, "\(String(decoding: body, as: UTF8.self))")
        return id
    }

    @Test("reading game/lite-x with the game key never returns lite/x's events")
    func crossTenantRead() async throws {
        try await withTenantAPI { api, _ in
            _ = try await Self.recordLiteDevice(api)
            for route in ["history", "state", "skan", "attribution"] {
                let (status, body) = try await api.send(.GET, "/v1/apps/\(gameApp)/devices/lite-x/\(route)", key: gameKey)
                #expect(status == 200, "\(route)")
                let text = String(decoding: body, as: UTF8.self)
                #expect(!text.contains(liteIDFA), "\(route) leaked the other app's IDFA")
                #expect(!text.contains("203.0.113.7"), "\(route) leaked the other app's IP")
            }
            let history = try json(try await api.send(.GET, "/v1/apps/\(gameApp)/devices/lite-x/history", key: gameKey).body)
            #expect(history["count"] as? Int == 0)
            // The lite app still reads its own device in full.
            let own = try await api.send(.GET, "/v1/apps/\(liteApp)/devices/x/history", key: liteKey)
            #expect(String(decoding: own.body, as: UTF8.self).contains(liteIDFA))
        }
    }

    @Test("appending for game/lite-x with the game key writes the game's device, never lite/x's stream")
    func crossTenantWrite() async throws {
        try await withTenantAPI { api, ledger in
            _ = try await Self.recordLiteDevice(api)
            let liteStream = try DeviceRef(app: liteApp, device: "x").streamID.rawValue
            let before = try await ledger.store.streamVersion(liteStream)
            let (status, _) = try await api.send(
                .POST, "/v1/apps/\(gameApp)/events", key: gameKey,
                json: batch(skanRegisteredJSON(device: "lite-x")))
            #expect(status == 200)
            #expect(try await ledger.store.streamVersion(liteStream) == before)
            let gameStream = try DeviceRef(app: gameApp, device: "lite-x").streamID.rawValue
            #expect(try await ledger.store.streamVersion(gameStream) == 1)
            #expect(gameStream != liteStream)
        }
    }

    @Test("erasing game/lite-x with the game key leaves lite/x's key and data intact")
    func crossTenantErase() async throws {
        try await withTenantAPI { api, _ in
            _ = try await Self.recordLiteDevice(api)
            let (status, body) = try await api.send(
                .POST, "/v1/apps/\(gameApp)/devices/lite-x/erase", key: gameKey, json: #"{"requested_by": "dsar-portal"}"#)
            #expect(status == 404, "\(String(decoding: body, as: UTF8.self))")
            let own = try await api.send(.GET, "/v1/apps/\(liteApp)/devices/x/history", key: liteKey)
            #expect(String(decoding: own.body, as: UTF8.self).contains(liteIDFA), "the lite device's data must still open")
            let destroyed = try await api.pool.query("SELECT count(*) FROM privacy_keys WHERE wrapped_key IS NULL")
                .single().decode(Int.self, at: 0)
            #expect(destroyed == 0)
        }
    }

    /// An event of the lite app written straight into the game app's device stream, as a slip in
    /// a stream id encoding would put it there.
    static func plantLiteEvent(in device: DeviceRef, ledger: AttributionLedger) async throws {
        let open = FirstOpen(appID: try AppID(liteApp), device: DeviceContext(
            platform: .ios, idfa: liteIDFA, limitAdTracking: false, attStatus: .authorized, ip: "203.0.113.7",
            userAgent: UserAgentParts(appName: "Lite", appVersion: "3.2.0", osName: "iOS", osVersion: "17.4.1", locale: "en_US",
                                      deviceModel: "iPhone15,2", build: "21E236"),
            osVersion: "17.4.1", appVersion: "3.2.0", bundleID: liteApp))
        let metadata = try EventCatalog.standard.encode(metadata: EventMetadata(actor: "slip", appID: try AppID(liteApp)))
        try await ledger.store.append([try NewEvent(open, metadata: metadata, occurredAt: testEpoch)], to: device.streamID.rawValue)
    }

    @Test("a stream holding another app's event is refused whole on read, write and erase: the recorded app decides, not the URL")
    func recordedAppDecides() async throws {
        try await withTenantAPI { api, ledger in
            let device = try DeviceRef(app: gameApp, device: "slipped")
            try await Self.plantLiteEvent(in: device, ledger: ledger)
            for route in ["history", "state", "skan", "timeline"] {
                let (status, body) = try await api.send(.GET, "/v1/apps/\(gameApp)/devices/slipped/\(route)", key: gameKey)
                #expect(status == 403, "\(route)")
                #expect(try apiError(body)["rule"] as? String == "recorded_app_matches")
                #expect(!String(decoding: body, as: UTF8.self).contains(liteIDFA))
                #expect(!String(decoding: body, as: UTF8.self).contains(liteApp), "the refusal names the other app")
            }
            let write = try await api.send(.POST, "/v1/apps/\(gameApp)/events", key: gameKey,
                                           json: batch(skanRegisteredJSON(device: "slipped")))
            #expect(write.status == 403)
            #expect(try apiError(write.body)["rule"] as? String == "recorded_app_matches")
            #expect(try await ledger.store.streamVersion(device.streamID.rawValue) == 1)
            let erase = try await api.send(.POST, "/v1/apps/\(gameApp)/devices/slipped/erase", key: gameKey,
                                           json: #"{"requested_by": "dsar-portal"}"#)
            #expect(erase.status == 403)
            let destroyed = try await api.pool.query("SELECT count(*) FROM privacy_keys WHERE wrapped_key IS NULL")
                .single().decode(Int.self, at: 0)
            #expect(destroyed == 0)
        }
    }

    @Test("8 clients × 200 appends to one device: no error, every id stored once, versions gapless")
    func sameDeviceContention() async throws {
        try await withTenantAPI { api, ledger in
            let clients = 8, perClient = 200
            let failures = try await withThrowingTaskGroup(of: [String].self) { group in
                for client in 0..<clients {
                    group.addTask {
                        var failures: [String] = []
                        for index in 0..<perClient {
                            let id = UUID(uuidString: String(format: "00000000-0000-4000-8000-%04d%08d", client, index))!
                            let time = String(format: "2026-11-23T10:%02d:%02d.000000Z", index / 60, index % 60)
                            let (status, body) = try await api.send(
                                .POST, "/v1/apps/\(gameApp)/events", key: gameKey,
                                json: batch(skanUpdateJSON(id: id, device: "busy", fine: index % 64, at: time)))
                            if status != 200 { failures.append("\(status) \(String(decoding: body, as: UTF8.self))") }
                        }
                        return failures
                    }
                }
                return try await group.reduce(into: [String]()) { $0 += $1 }
            }
            #expect(failures.isEmpty, "\(failures.count) failures, first: \(failures.first ?? "")")
            let stream = try DeviceRef(app: gameApp, device: "busy").streamID.rawValue
            let rows = try await api.pool.query(
                "SELECT count(*), count(DISTINCT event_id), min(stream_version), max(stream_version) FROM events WHERE stream_id = \(stream)")
                .single()
            #expect(try rows.decode(Int.self, at: 0) == clients * perClient)
            #expect(try rows.decode(Int.self, at: 1) == clients * perClient)
            #expect(try rows.decode(Int.self, at: 2) == 1)
            #expect(try rows.decode(Int.self, at: 3) == clients * perClient)
            _ = ledger
        }
    }

    @Test("a refused SKAN postback is kept under the app that sent it, bounded in size and per hour")
    func refusedPostbacksBounded() async throws {
        try await withTenantAPI { api, ledger in
            // Not JSON, 70,000 bytes: refused, and only its first bytes are kept.
            let big = String(repeating: "x", count: 70_000)
            let (status, body) = try await api.send(.POST, "/v1/apps/\(liteApp)/skan/postbacks?network=n", key: liteKey,
                                                    body: .bytes(ByteBuffer(string: big)))
            #expect(status == 400, "\(String(decoding: body, as: UTF8.self))")
            let rows = try await api.pool.query("""
                SELECT stream_id, metadata ->> 'app_id', length(data::text) FROM events WHERE event_type = 'SKANPostbackReceived'
                """)
            #expect(rows.count == 1)
            let row = try #require(rows.first)
            #expect(try row.decode(String.self, at: 0).hasPrefix("skan-\(liteApp)/rejected/"))
            #expect(try row.decode(String.self, at: 1) == liteApp)
            #expect(try row.decode(Int.self, at: 2) < 8_000)
            _ = ledger
        }
    }
}
