import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import LedgerPostgres
import LedgerProviders
import LedgerStore
import LedgerTestKit
import Testing

/// Issue 6, crash safety: `ledger worker` processes are killed with SIGKILL while they drain sends
/// against the fake providers — each while calls of its own are out (the fake Apple holds its
/// answers at the moment of the kill), at a random point of the drain. In the end every send has
/// exactly one terminal outcome, the queue is empty, every call the fakes saw has a recorded
/// attempt, duplicate calls never exceed the tries recorded as outcome-unknown, and each anomaly
/// the fakes noted is a repeat that an outcome-unknown try explains.
@Suite("Worker crash safety", .database, .serialized)
struct WorkerCrashTests {
    static let sends = 1000
    static let branchKey = "key_test_crash"
    static let branchSecret = "secret_test_crash"

    /// Starts `ledger worker` in the background, its output discarded.
    static func startWorker(conninfo: String, fakes: FakeProviders, id: String) throws -> Process {
        try LedgerProcess.start(["worker", "--slots", "8", "--lease", "5", "--timeout", "2", "--worker-id", id], environment: [
            "LEDGER_DATABASE_URL": conninfo, "LEDGER_ADSERVICES_URL": fakes.baseURL, "LEDGER_BRANCH_KEY": branchKey,
            "LEDGER_BRANCH_SECRET": branchSecret, "LEDGER_BRANCH_URL": fakes.baseURL, "LEDGER_LOG_LEVEL": "critical",
        ])
    }

    static func count(_ sql: String, _ pool: PostgresPool) async throws -> Int {
        try await pool.query(PostgresQuery(sql: sql)).single().decode(Int.self, at: 0)
    }

    /// Polls `condition` every 5 ms for at most `timeout`; returns whether it held.
    @Test func killedWorkersLoseNothingAndRecordEveryCall() async throws {
        try await TestDatabase.with { database in
            let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 4, logger: TestDatabase.quietLogger)
            defer { pool.close() }
            let store = EventStore(pool: pool, catalog: .standard, logger: TestDatabase.quietLogger)
            let credentials = FakeProviders.Credentials(branchKey: Self.branchKey, branchSecret: Self.branchSecret)
            try await withCheckedFakeProviders(configuration: .init(credentials: credentials)) { fakes in
                fakes.branch.setRapidRepeatInterval(.zero)
                fakes.apple.setDelay(.milliseconds(20))

                // 1,000 pending sends: a token lookup per device, and every tenth device a Branch open.
                let start = Date()
                var deviceByIDFV: [String: String] = [:]
                for index in 0..<(Self.sends * 10 / 11) {
                    let device = "device-app1/crash\(index)"
                    let idfv = UUID().uuidString
                    deviceByIDFV[idfv.lowercased()] = device
                    let token = Data("token-\(index)".utf8).base64EncodedString()
                    fakes.apple.register(token: token, issuedAt: start)
                    let open = FirstOpen(
                        appID: try AppID("app1"),
                        device: DeviceContext(platform: .ios, idfv: idfv, limitAdTracking: false, ip: "8.8.\(index % 200).\(index % 250)",
                                              userAgent: UserAgentParts(appName: "App", appVersion: "1.0", osName: "iOS", osVersion: "17.1",
                                                                        locale: "en_US", deviceModel: "iPhone15,2", build: "21B74"),
                                              osVersion: "17.1", appVersion: "1.0", bundleID: "com.example.app"),
                        adServicesToken: LedgerDomain.AdServicesToken(token: token, issuedAt: start))
                    let data = try EventCatalog.standard.encode(open)
                    try await pool.withConnection { connection in
                        try connection.transaction { connection in
                            let appended = try store.append([NewEvent(type: FirstOpen.eventType, data: data, occurredAt: start)],
                                                            to: device, on: connection)
                            let cause = RecordedEvent(position: appended.events[0].position, transactionID: 0, streamID: device,
                                                      streamVersion: 1, id: appended.events[0].id, type: FirstOpen.eventType,
                                                      schemaVersion: 1, data: data, metadata: Data(), occurredAt: start,
                                                      recordedAt: start, hash: Data())
                            var kinds: [(SendProvider, SendKind)] = [(.appleAdServices, .tokenLookup)]
                            if index % 10 == 0 { kinds.append((.branch, .open)) }
                            for (provider, kind) in kinds {
                                let request = try Outbox.request(provider: provider, kind: kind, cause: cause,
                                                                 deviceStreamID: try StreamID(device),
                                                                 idempotencyKey: "\(provider.rawValue):\(cause.id)")
                                _ = try Outbox.enqueue(request, store: store, now: start, on: connection)
                            }
                        }
                    }
                }
                let total = try await Self.count("SELECT count(*) FROM send_queue", pool)
                #expect(total >= Self.sends)

                // Ten workers killed with SIGKILL mid-drain: each runs freely until it has made a
                // random number of calls, then the fake Apple holds the answers to its next calls,
                // and the kill comes once at least one of them is out.
                var generator = SystemRandomNumberGenerator()
                var callsByKilledWorker: [Int] = []
                for round in 0..<10 {
                    let callsBefore = fakes.apple.requestCount + fakes.branch.requestCount
                    let freeCalls = Int.random(in: 1...60, using: &generator)
                    let worker = try Self.startWorker(conninfo: database.conninfo, fakes: fakes, id: "crash-\(round)")
                    #expect(try await waitUntil(timeout: .seconds(120), every: .milliseconds(5)) {
                        fakes.apple.requestCount + fakes.branch.requestCount - callsBefore >= freeCalls
                    }, "round \(round): the worker made its calls")
                    let held = FakeGate()
                    fakes.apple.hold(held)
                    #expect(try await waitUntil(timeout: .seconds(60), every: .milliseconds(5)) { held.held > 0 }, "round \(round): a call is out")
                    kill(worker.processIdentifier, SIGKILL)
                    worker.waitUntilExit()
                    #expect(worker.terminationReason == .uncaughtSignal && worker.terminationStatus == SIGKILL)
                    fakes.apple.hold(nil)
                    held.open()
                    callsByKilledWorker.append(fakes.apple.requestCount + fakes.branch.requestCount - callsBefore)
                }
                // A last worker finishes the job, then stops on SIGTERM. It is sent only once the worker
                // holds its liveness lock (it catches signals before taking it): a SIGTERM before the
                // worker set up its handlers (while it reads its configuration) is not what this test
                // is about.
                let last = try Self.startWorker(conninfo: database.conninfo, fakes: fakes, id: "finisher")
                #expect(try await waitUntil(timeout: .seconds(120), every: .milliseconds(5)) {
                    try await Self.count("""
                        SELECT count(*) FROM pg_locks
                        WHERE locktype = 'advisory' AND granted
                          AND ((classid::bigint << 32) | objid::bigint) = hashtextextended('ledger.worker.finisher', 0)
                        """, pool) > 0
                })
                #expect(try await waitUntil(timeout: .seconds(240), every: .milliseconds(5)) {
                    try await Self.count("SELECT count(*) FROM send_queue", pool) == 0
                })
                kill(last.processIdentifier, SIGTERM)
                last.waitUntilExit()
                #expect(last.terminationReason == .exit && last.terminationStatus == 0)

                #expect(try await Self.count("SELECT count(*) FROM send_queue", pool) == 0)
                let terminals = try await Self.count("""
                    SELECT count(*) FROM events WHERE event_type IN ('SendSucceeded', 'SendFailed', 'SendCancelled')
                    """, pool)
                let requested = try await Self.count("SELECT count(*) FROM events WHERE event_type = 'SendRequested'", pool)
                #expect(terminals == requested && requested == total)
                let withoutTerminal = try await Self.count("""
                    SELECT count(*) FROM events r WHERE r.event_type = 'SendRequested' AND NOT EXISTS (
                        SELECT 1 FROM events t WHERE t.stream_id = r.stream_id AND t.event_type IN ('SendSucceeded', 'SendFailed'))
                    """, pool)
                #expect(withoutTerminal == 0)
                let attempts = try await Self.count("SELECT count(*) FROM events WHERE event_type = 'SendAttempted'", pool)
                let unknown = try await Self.count("SELECT count(*) FROM events WHERE event_type = 'SendOutcomeUnknown'", pool)
                let calls = fakes.apple.requestCount + fakes.branch.requestCount
                // The kills landed mid-send: every killed worker had made calls, and tries were lost
                // with their workers.
                #expect(callsByKilledWorker.count == 10 && callsByKilledWorker.allSatisfy { $0 > 0 }, "\(callsByKilledWorker)")
                #expect(unknown >= 10, "each kill loses at least the try whose answer was held")
                #expect(calls <= attempts, "every call the fakes saw has a recorded attempt")
                #expect(calls - requested <= unknown, "duplicate calls (\(calls - requested)) exceed outcome-unknown tries (\(unknown))")

                // A first open whose outcome was lost to a kill is sent again: Branch then sees a
                // known device's open without the token it issued to the lost answer. Each such
                // anomaly must be explained by an outcome-unknown try of that device's open.
                let unknownByDevice = try await pool.query("""
                    SELECT r.data ->> 'device_stream_id', count(u.*) FROM events r
                    JOIN events u ON u.stream_id = r.stream_id AND u.event_type = 'SendOutcomeUnknown'
                    WHERE r.event_type = 'SendRequested' AND r.data ->> 'provider' = 'branch'
                    GROUP BY 1
                    """).reduce(into: [String: Int]()) { counts, row in
                    counts[try row.decode(String.self, at: 0)] = try row.decode(Int.self, at: 1)
                }
                var unexplained = unknownByDevice
                let branchRequests = Dictionary(fakes.branch.requests.map { ($0.sequenceNumber, $0) }) { first, _ in first }
                var explained: [ExpectedAnomaly] = []
                for anomaly in fakes.anomalies {
                    let body = branchRequests[anomaly.requestSequenceNumber].flatMap {
                        try? JSONSerialization.jsonObject(with: $0.body) as? [String: Any]
                    }
                    let device = (body?["ios_vendor_id"] as? String).flatMap { deviceByIDFV[$0.lowercased()] }
                    guard anomaly.provider == .branch, anomaly.rule == "missing_randomized_bundle_token", let device,
                        let left = unexplained[device], left > 0
                    else {
                        Issue.record("an anomaly no outcome-unknown try explains: \(anomaly)")
                        continue
                    }
                    unexplained[device] = left - 1
                    explained.append(ExpectedAnomaly(anomaly.provider, anomaly.rule))
                }
                fakes.expectAnomalies(explained)
            }
        }
    }
}
