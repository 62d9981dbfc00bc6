import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import Testing

/// A `ledger worker` process killed with SIGKILL while its Singular call is out (the fake Singular
/// holds the answer): the next `ledger worker` parks the send instead of requesting it again
/// (Singular SKAdNetwork 4 implementation guide: "In case of retrying an event, avoid calling this
/// method so the same revenue will not be counted twice"), and `ledger sends retry` then has it
/// sent once.
@Suite("A parked send after a worker is killed", .database, .serialized)
struct ParkedSendCrashTests {
    static let sdkKey = "singular-sdk-crash"

    static func environment(_ conninfo: String, _ fakes: FakeProviders) -> [String: String] {
        ["LEDGER_DATABASE_URL": conninfo, "LEDGER_SINGULAR_SDK_KEY": sdkKey, "LEDGER_SINGULAR_URL": fakes.baseURL,
         "LEDGER_LOG_LEVEL": "critical"]
    }

    static func count(_ sql: String, _ pool: PostgresPool) async throws -> Int {
        try await pool.query(PostgresQuery(sql: sql)).single().decode(Int.self, at: 0)
    }

    @Test func aKilledWorkersSingularSendIsParkedThenSentOnceAfterRetry() async throws {
        try await TestDatabase.with { database in
            let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 2, logger: TestDatabase.quietLogger)
            defer { pool.close() }
            let store = EventStore(pool: pool, catalog: .standard, logger: TestDatabase.quietLogger)
            try await withCheckedFakeProviders(configuration: .init(credentials: .init(singularSDKKey: Self.sdkKey))) { fakes in
                // A device's first open and its SKAN registration, and the open's Singular call.
                let now = Date()
                let stream = "device-com.example.game/crash-singular"
                let open = FirstOpen(
                    appID: try AppID("com.example.game"),
                    device: DeviceContext(platform: .ios, idfv: "21DB6612-09B3-4ECC-84AC-B353B0AF1334", limitAdTracking: false,
                                          ip: "203.0.113.7",
                                          userAgent: UserAgentParts(appName: "Game", appVersion: "1.0", osName: "iOS", osVersion: "17.1",
                                                                    locale: "en_US", deviceModel: "iPhone15,2", build: "21B74"),
                                          osVersion: "17.1", appVersion: "1.0", bundleID: "com.example.game"))
                let appended = try await store.append([
                    NewEvent(type: FirstOpen.eventType, data: try EventCatalog.standard.encode(open), occurredAt: now),
                    NewEvent(type: SKANRegistered.eventType, data: try EventCatalog.standard.encode(SKANRegistered()), occurredAt: now),
                ], to: stream)
                let cause = try #require(try await store.event(id: appended.events[0].id))
                let request = try Outbox.request(provider: .singular, kind: .conversionValue, cause: cause,
                                                 deviceStreamID: try StreamID(stream), idempotencyKey: "singular:crash")
                try await pool.withConnection { connection in
                    try connection.transaction { _ = try Outbox.enqueue(request, store: store, now: now, on: $0) }
                }
                let sendStream = StreamID.send(id: request.sendID).rawValue

                // The worker is killed while Singular holds its answer: the request has left.
                let held = FakeGate()
                fakes.singular.hold(held)
                let doomed = try LedgerProcess.start(["worker", "--lease", "60", "--timeout", "20", "--worker-id", "doomed",
                                                      "--no-decide", "--seal-every", "0"],
                                                     environment: Self.environment(database.conninfo, fakes))
                #expect(try await waitUntil(timeout: .seconds(60), every: .milliseconds(5)) { held.held > 0 }, "the call is out")
                kill(doomed.processIdentifier, SIGKILL)
                doomed.waitUntilExit()
                fakes.singular.hold(nil)
                held.open()

                // The next worker finds the dead worker's try: parked, not requested again.
                let survivor = try await LedgerProcess.runDetached(
                    ["worker", "--drain", "--no-decide", "--worker-id", "survivor"], environment: Self.environment(database.conninfo, fakes))
                #expect(survivor.status == 0, "\(survivor.stderr)")
                #expect(fakes.singular.requestCount == 1, "no second request reached Singular")
                #expect(try await store.readStream(sendStream).map(\.type) == [
                    "SendRequested", "SendAttempted", "SendOutcomeUnknown", "SendParked",
                ])
                #expect(try await Self.count("SELECT count(*) FROM send_queue WHERE state = 'parked'", pool) == 1)
                let again = try await LedgerProcess.runDetached(
                    ["worker", "--drain", "--no-decide", "--worker-id", "survivor"], environment: Self.environment(database.conninfo, fakes))
                #expect(again.status == 0 && fakes.singular.requestCount == 1, "a parked send stays parked")

                // The operator settles it: one more request, and the send succeeds.
                let retry = try await LedgerProcess.runDetached(
                    ["sends", "retry", request.sendID.lowercasedText, "--reason", "not in Singular's event log", "--by", "ops"],
                    environment: ["LEDGER_DATABASE_URL": database.conninfo])
                #expect(retry.status == 0, "\(retry.stderr)")
                let after = try await LedgerProcess.runDetached(
                    ["worker", "--drain", "--no-decide", "--worker-id", "survivor"], environment: Self.environment(database.conninfo, fakes))
                #expect(after.status == 0, "\(after.stderr)")
                #expect(fakes.singular.requestCount == 2, "sent once after the retry")
                #expect(try await store.readStream(sendStream).map(\.type).suffix(4) == [
                    "SendUnparked", "SendAttempted", "ResponseReceived", "SendSucceeded",
                ])
                #expect(try await Self.count("SELECT count(*) FROM send_queue", pool) == 0)
            }
        }
    }
}
