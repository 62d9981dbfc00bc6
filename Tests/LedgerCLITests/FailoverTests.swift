import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import LedgerPostgres
import LedgerPrivateCluster
import LedgerProviders
import LedgerStore
import LedgerTestKit
import Synchronization
import Testing

/// Failover without loss: `ledger serve` and `ledger worker` (real processes) run against a
/// primary whose commits wait for a synchronous standby (PostgreSQL: "Synchronous Replication",
/// `synchronous_standby_names`, `synchronous_commit = on`), through a multi-host conninfo with
/// `target_session_attrs=read-write` (libpq: "Connection Strings", "Specifying Multiple Hosts").
/// The primary is killed (`pg_ctl stop -m immediate`) under load and the standby promoted
/// (`pg_ctl promote`), as an operator would (docs/operations.md, "Failing over").
@Suite("Failover to a synchronous standby", .database,
       .disabled(if: TestDatabase.partitionsEvents, "runs on clusters of its own, which the partitioned run does not change"),
       .serialized)
struct FailoverTests {
    static let sends = 400

    static func count(_ sql: String, _ pool: PostgresPool) async throws -> Int {
        try await pool.query(PostgresQuery(sql: sql)).single().decode(Int.self, at: 0)
    }

    /// Starts `ledger worker` against `conninfo` and the fakes, its stderr kept in `logPath`.
    static func startWorker(conninfo: String, fakes: FakeProviders, logPath: String, masterKey: String) throws -> Process {
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: LedgerProcess.binary)
        process.arguments = ["worker", "--slots", "4", "--lease", "5", "--timeout", "2", "--worker-id", "failover"]
        process.environment = LedgerProcess.baseEnvironment.merging([
            "LEDGER_DATABASE_URL": conninfo, "LEDGER_ADSERVICES_URL": fakes.baseURL, "LEDGER_LOG_LEVEL": "notice",
            "LEDGER_MASTER_KEY": masterKey,
        ]) { $1 }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        try process.run()
        return process
    }

    /// `count` Apple AdServices token lookups, pending: a first open per device and its send.
    static func enqueueTokenLookups(count: Int, store: EventStore, fakes: FakeProviders) async throws {
        let start = Date()
        for index in 0..<count {
            let device = "device-app1/failover\(index)"
            let token = Data("failover-token-\(index)".utf8).base64EncodedString()
            fakes.apple.register(token: token, issuedAt: start)
            let open = FirstOpen(
                appID: try AppID("app1"),
                device: DeviceContext(platform: .ios, idfv: UUID().uuidString, limitAdTracking: false, ip: "8.8.\(index % 200).1",
                                      userAgent: UserAgentParts(appName: "App", appVersion: "1.0", osName: "iOS", osVersion: "17.1",
                                                                locale: "en_US", deviceModel: "iPhone15,2", build: "21B74"),
                                      osVersion: "17.1", appVersion: "1.0", bundleID: "com.example.app"),
                adServicesToken: LedgerDomain.AdServicesToken(token: token, issuedAt: start))
            let data = try EventCatalog.standard.encode(open)
            try await store.pool.withConnection { connection in
                try connection.transaction { connection in
                    let appended = try store.append([NewEvent(type: FirstOpen.eventType, data: data, occurredAt: start)],
                                                    to: device, on: connection)
                    let cause = RecordedEvent(position: appended.events[0].position, transactionID: 0, streamID: device,
                                              streamVersion: 1, id: appended.events[0].id, type: FirstOpen.eventType,
                                              schemaVersion: 1, data: data, metadata: Data(), occurredAt: start,
                                              recordedAt: start, hash: Data())
                    let request = try Outbox.request(provider: .appleAdServices, kind: .tokenLookup, cause: cause,
                                                     deviceStreamID: try StreamID(device), idempotencyKey: "apple:\(cause.id)")
                    _ = try Outbox.enqueue(request, store: store, now: start, on: connection)
                }
            }
        }
    }

    /// Appends through `ledger serve` and a send drain by `ledger worker` go on while the primary
    /// is killed and the standby promoted. Both processes stay up and carry on by themselves on
    /// the new primary; every append acknowledged with a 2xx is on it; every send ends with
    /// exactly one terminal outcome; `ledger verify` passes on the new primary; and seals go on
    /// there, covering the events appended after the failover.
    @Test("a killed primary loses no acknowledged append and no send outcome; serve and worker reconnect",
          .timeLimit(.minutes(5)))
    func failoverToTheSynchronousStandby() async throws {
        let began = ContinuousClock.now
        let pair = try await TestDatabase.offThePool { try ReplicatedPair.start(synchronous: true) }
        defer { pair.remove() }
        let conninfo = pair.conninfo
        let observerOfPrimary = try PostgresConnection(conninfo: pair.primary.conninfo(database: "postgres"), logger: TestDatabase.quietLogger)
        #expect(try await waitUntil(timeout: .seconds(30), every: .milliseconds(25)) {
            try observerOfPrimary.query("""
                SELECT count(*) FROM pg_stat_replication WHERE application_name = \(ReplicatedPair.standbyName) AND sync_state = 'sync'
                """).single().decode(Int.self, at: 0) == 1
        }, "the standby streams synchronously")

        let migrated = try await LedgerProcess.runDetached(["migrate", "--database-url", conninfo])
        try #require(migrated.status == 0, "\(migrated.stderr)")
        let keyFile = URL(fileURLWithPath: pair.directory + "/api-key")
        try Data(ServeRestartTests.key.utf8).write(to: keyFile)
        let digest = try await LedgerProcess.runDetached(["serve", "--hash-key"], stdin: keyFile).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)

        let pool = PostgresPool(conninfo: conninfo, maxConnections: 2, logger: TestDatabase.quietLogger)
        defer { pool.close() }
        // A multi-host conninfo is not the private cluster's: the personal fields' master key is
        // given, as in production.
        let masterKey = MasterKeys.generateText()
        let keyEnvironment = ["LEDGER_MASTER_KEY": masterKey]
        let store = EventStore(pool: pool, privacy: .configured(conninfo: conninfo, environment: keyEnvironment),
                               logger: TestDatabase.quietLogger)
        try await withCheckedFakeProviders { fakes in
            fakes.apple.setDelay(.milliseconds(40))
            try await Self.enqueueTokenLookups(count: Self.sends, store: store, fakes: fakes)

            let server = try await ServeRestartTests.startServe(conninfo: conninfo, digest: digest, logPath: pair.directory + "/serve.log",
                                                                arguments: ["--seal-every", "1"], environment: keyEnvironment)
            defer { if server.process.isRunning { server.process.terminate() } }
            #expect(try await waitUntil(timeout: .seconds(30), every: .milliseconds(25)) { await ServeRestartTests.ready(server) == 200 })
            let load = ServeRestartTests.Load()
            let baseURL = server.baseURL
            let loadStarted = ContinuousClock.now
            let clients = (0..<4).map { client in Task { await ServeRestartTests.drive(load, client: client, baseURL: baseURL) } }
            defer { load.stop.store(true, ordering: .relaxed) }
            #expect(try await waitUntil(timeout: .seconds(60), every: .milliseconds(10)) {
                guard load.count >= 50 else { return false }
                return try await Self.count("SELECT count(*) FROM seals", pool) > 0
            }, "appends and seals before the failover")

            // The worker starts once the load runs, so that the kill lands mid-drain however
            // slowly the appends began: a fifth of the sends made, most still to come.
            let workerLog = pair.directory + "/worker.log"
            let worker = try Self.startWorker(conninfo: conninfo, fakes: fakes, logPath: workerLog, masterKey: masterKey)
            defer { if worker.isRunning { kill(worker.processIdentifier, SIGKILL) } }
            func workerLogText() -> String { (try? String(contentsOfFile: workerLog, encoding: .utf8)) ?? "" }
            #expect(try await waitUntil(timeout: .seconds(60), every: .milliseconds(5)) { fakes.apple.requestCount >= Self.sends / 5 },
                    "sends before the failover: \(workerLogText().suffix(2000))")
            let callsBeforeKill = fakes.apple.requestCount

            // The failover: the primary crashes; the operator promotes the standby and, until a
            // new standby is attached, lets the new primary commit without waiting for one.
            let killed = ContinuousClock.now
            try await TestDatabase.offThePool { try pair.primary.stop(mode: .immediate) }
            let acknowledgedAtKill = load.count
            let loadBeforeKill = killed - loadStarted
            try await TestDatabase.offThePool {
                try pair.standby.promote()
                let promoted = try PostgresConnection(conninfo: pair.standbyConninfo, logger: TestDatabase.quietLogger)
                try promoted.run(script: "ALTER SYSTEM SET synchronous_standby_names = ''")
                try promoted.execute("SELECT pg_reload_conf()")
            }
            let promotedAfter = ContinuousClock.now - killed
            #expect(callsBeforeKill < Self.sends, "the drain was under way at the kill")

            let newPrimary = try PostgresConnection(conninfo: pair.standbyConninfo, logger: TestDatabase.quietLogger)
            let sealsAtPromotion = try newPrimary.query("SELECT coalesce(max(seal_number), 0) FROM seals").single().decode(Int64.self, at: 0)

            // Both processes carry on by themselves: /ready, new appends, the drain's end.
            #expect(try await waitUntil(timeout: .seconds(60), every: .milliseconds(25)) { await ServeRestartTests.ready(server) == 200 },
                    "/ready after the failover: \(server.loopLines())")
            #expect(try await waitUntil(timeout: .seconds(60), every: .milliseconds(25)) { load.count >= acknowledgedAtKill + 50 },
                    "appends after the failover")
            let appendsBackAfter = ContinuousClock.now - killed
            #expect(try await waitUntil(timeout: .seconds(120), every: .milliseconds(25)) {
                try newPrimary.query("SELECT count(*) FROM send_queue").single().decode(Int.self, at: 0) == 0
            }, "the worker drains the queue on the new primary: \(workerLogText().suffix(2000))")
            let drainedAfter = ContinuousClock.now - killed
            load.stop.store(true, ordering: .relaxed)
            for client in clients { await client.value }
            #expect(server.process.isRunning && worker.isRunning, "serve and worker stayed up")

            // Every acknowledged append is on the new primary.
            let acknowledged = load.acknowledged.withLock { $0 }
            let ids = "{" + acknowledged.map { $0.uuidString.lowercased() }.joined(separator: ",") + "}"
            let stored = try newPrimary.query("SELECT count(*) FROM events WHERE event_id = ANY(\(ids)::uuid[])").single()
                .decode(Int.self, at: 0)
            #expect(stored == acknowledged.count, "acknowledged appends missing from the new primary")

            // Every send has exactly one terminal outcome.
            let perSend = try newPrimary.query("""
                SELECT count(*) FILTER (WHERE ends = 1), count(*) FILTER (WHERE ends <> 1) FROM (
                    SELECT r.stream_id, (SELECT count(*) FROM events t WHERE t.stream_id = r.stream_id
                                          AND t.event_type IN ('SendSucceeded', 'SendFailed', 'SendCancelled')) AS ends
                    FROM events r WHERE r.event_type = 'SendRequested') AS sends
                """).single()
            let (oneEnd, otherThanOneEnd) = (try perSend.decode(Int.self, at: 0), try perSend.decode(Int.self, at: 1))
            #expect(oneEnd == Self.sends && otherThanOneEnd == 0, "sends with one terminal outcome: \(oneEnd), with none or more: \(otherThanOneEnd)")

            // Seals go on on the new primary and cover what was appended after the failover.
            let headAfter = try newPrimary.query("SELECT max(position) FROM events").single().decode(Int64.self, at: 0)
            #expect(try await waitUntil(timeout: .seconds(30), every: .milliseconds(50)) {
                try newPrimary.query("""
                    SELECT count(*) FROM seals WHERE seal_number > \(sealsAtPromotion) AND up_to_position >= \(headAfter)
                    """).single().decode(Int.self, at: 0) > 0
            }, "a seal on the new primary covers the events appended after the failover")

            server.process.terminate()
            kill(worker.processIdentifier, SIGTERM)
            worker.waitUntilExit()
            #expect(worker.terminationReason == .exit && worker.terminationStatus == 0, "\(workerLogText().suffix(2000))")
            let verified = try await LedgerProcess.runDetached(["verify", "--database-url", conninfo], environment: keyEnvironment)
            #expect(verified.status == 0, "\(verified.stdout)\n\(verified.stderr)")

            print("""
                failover figures: \(acknowledged.count) appends acknowledged (\(acknowledgedAtKill) in the \
                \(ServeRestartTests.seconds(loadBeforeKill)) before the kill, each committed on both servers), \
                \(Self.sends) sends (\(callsBeforeKill) calls before the kill, \(fakes.apple.requestCount) in all); promoted \
                \(ServeRestartTests.seconds(promotedAfter)) after the kill; 50 more appends \(ServeRestartTests.seconds(appendsBackAfter)) \
                and the queue drained \(ServeRestartTests.seconds(drainedAfter)) after it; whole test \
                \(ServeRestartTests.seconds(ContinuousClock.now - began))
                """)
        }
    }
}
