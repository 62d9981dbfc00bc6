import AsyncHTTPClient
import Foundation
import LedgerPostgres
import LedgerPrivateCluster
import LedgerTestKit
import NIOCore
import NIOHTTP1
import Synchronization
import Testing

/// `ledger serve` stays up while its PostgreSQL restarts under load, on a cluster of the test's
/// own (the shared test cluster is never restarted: other tests run against it meanwhile).
@Suite("ledger serve through PostgreSQL restarts", .database, .serialized)
struct ServeRestartTests {
    static let app = "com.example.game"
    static let key = "test-key-restart-not-a-real-credential"

    /// A `ledger serve` process, its stderr kept in a file.
    struct Server {
        let process: Process
        let logPath: String
        var baseURL = ""

        /// Everything the server has written to stderr so far.
        func log() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

        /// Its log lines about the loops' connections (`db.loop=…`), for a failure's message.
        func loopLines() -> String {
            log().split(separator: "\n").filter { $0.contains("db.loop=") }.joined(separator: "\n")
        }

        /// Its log lines of the loop named `loop` (`db.loop=…`) at `level`.
        func lines(loop: String, level: String) -> [Substring] {
            log().split(separator: "\n").filter { $0.contains(" \(level) ") && $0.contains("db.loop=\(loop) ") }
        }
    }

    /// Appends acknowledged with 2xx (the events' ids), and how the others ended.
    final class Load: Sendable {
        let acknowledged = Mutex<[UUID]>([])
        let refused = Atomic<Int>(0)
        /// The statuses of refused appends: only 503 (the database away), never a 500.
        let refusedStatuses = Mutex<Set<Int>>([])
        let failed = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        var count: Int { acknowledged.withLock { $0.count } }
    }

    static func status(_ method: HTTPMethod, _ url: String, body: String? = nil) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let body {
            request.headers.add(name: "Authorization", value: "Bearer \(key)")
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        _ = try await response.body.collect(upTo: 1_048_576)
        return Int(response.status.code)
    }

    static func ready(_ server: Server) async -> Int {
        (try? await status(.GET, server.baseURL + "/ready")) ?? 0
    }

    /// One client: new devices' SKAN registrations, one request each, until told to stop.
    static func drive(_ load: Load, client: Int, baseURL: String) async {
        var number = 0
        while !load.stop.load(ordering: .relaxed) {
            number += 1
            let id = UUID()
            let body = #"{"events": [{"id": "\#(id.uuidString)", "type": "SKANRegistered", "device_id": "loaddev-\#(client)-\#(number)", "occurred_at": "2026-11-23T10:00:00Z", "data": {"skan_version": "4.0"}}]}"#
            do {
                let status = try await status(.POST, baseURL + "/v1/apps/\(app)/events", body: body)
                if (200..<300).contains(status) {
                    load.acknowledged.withLock { $0.append(id) }
                    continue
                }
                load.refused.add(1, ordering: .relaxed)
                load.refusedStatuses.withLock { _ = $0.insert(status) }
            } catch {
                load.failed.add(1, ordering: .relaxed)
            }
            // A refused append is retried at the pace of a client, not in a hot loop.
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Starts `ledger serve` on any free port against `conninfo`, with `arguments` and
    /// `environment` added; returns once it listens.
    static func startServe(conninfo: String, digest: String, logPath: String, arguments: [String] = [],
                           environment extra: [String: String] = [:]) async throws -> Server {
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: LedgerProcess.binary)
        process.arguments = ["serve", "--port", "0", "--database-url", conninfo] + arguments
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "LEDGER_DATABASE_URL")
        environment["LEDGER_API_KEYS"] = #"{"\#(app)": "\#(digest)"}"#
        environment["LEDGER_LOG_LEVEL"] = "notice"
        environment["LEDGER_LOG_FORMAT"] = "text"
        environment.merge(extra) { $1 }
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        try process.run()
        var server = Server(process: process, logPath: logPath)
        var port: String?
        _ = try await waitUntil(timeout: .seconds(60)) {
            let log = server.log()
            guard let range = log.range(of: "listening on http://127.0.0.1:") else { return !process.isRunning }
            port = String(log[range.upperBound...].prefix { $0.isNumber })
            return true
        }
        server.baseURL = "http://127.0.0.1:\(try #require(port, "ledger serve did not start: \(server.log())"))"
        return server
    }

    /// The `--json` line of `ledger projections status` for `name`.
    static func projectionStatus(_ name: String, conninfo: String) async throws -> [String: Any]? {
        let result = try await LedgerProcess.runDetached(["projections", "status", "--json", "--database-url", conninfo])
        for line in result.stdout.split(separator: "\n") {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            if object?["name"] as? String == name { return object }
        }
        return nil
    }

    static func seconds(_ duration: Duration) -> String {
        let parts = duration.components
        return String(format: "%.2f s", Double(parts.seconds) + Double(parts.attoseconds) / 1e18)
    }

    /// A server under load from four clients sees its PostgreSQL restarted twice: once with
    /// `pg_ctl restart -m immediate` (a crash and recovery, over in about a second), then stopped
    /// the same way until `/ready` says 503 and the projection runner has met the outage, and
    /// started again. The process stays up, `/ready` comes back to 200, appends succeed again,
    /// the projection runner catches up with the log, and every append acknowledged with a 2xx is
    /// in the log.
    @Test("ledger serve stays up through PostgreSQL restarts under load and loses no acknowledged append",
          .timeLimit(.minutes(8)))
    func serveSurvivesRestartsUnderLoad() async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("ledger-serve-restart-\(UUID().uuidString.prefix(8))").path
        let cluster = try await TestDatabase.offThePool {
            try PrivateCluster.startOrReuse(directory: directory, logger: TestDatabase.quietLogger)
        }
        defer {
            try? cluster.stop(mode: .immediate)
            try? FileManager.default.removeItem(atPath: directory)
        }
        try cluster.createDatabaseIfMissing("ledger", logger: TestDatabase.quietLogger)
        let conninfo = cluster.conninfo(database: "ledger")
        let migrated = try await LedgerProcess.runDetached(["migrate", "--database-url", conninfo])
        try #require(migrated.status == 0, "\(migrated.stderr)")
        let keyFile = URL(fileURLWithPath: directory + "/api-key")
        try Data(Self.key.utf8).write(to: keyFile)
        let digest = try await LedgerProcess.runDetached(["serve", "--hash-key"], stdin: keyFile).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)

        let server = try await Self.startServe(conninfo: conninfo, digest: digest, logPath: directory + "/serve.log")
        defer { if server.process.isRunning { server.process.terminate() } }
        #expect(try await waitUntil(timeout: .seconds(30), every: .milliseconds(25)) { await Self.ready(server) == 200 })

        let load = Load()
        let baseURL = server.baseURL
        let clients = (0..<4).map { client in Task { await Self.drive(load, client: client, baseURL: baseURL) } }
        defer { load.stop.store(true, ordering: .relaxed) }
        #expect(try await waitUntil(timeout: .seconds(60), every: .milliseconds(25)) { load.count >= 50 }, "appends before the restarts")
        // The projection runner follows the log (its tables made, its listener listening, appends
        // applied) before the database goes: its first steps take a few seconds on a fresh cluster.
        let probe = try PostgresConnection(conninfo: conninfo, logger: TestDatabase.quietLogger)
        #expect(try await waitUntil(timeout: .seconds(60), every: .milliseconds(25)) {
            let listening = try probe.query("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN%'").single()
                .decode(Int.self, at: 0)
            let applied = try await Self.projectionStatus("skan_devices", conninfo: conninfo)?["eventsApplied"] as? Int ?? 0
            return listening == 1 && applied > 0
        }, "the projection runner follows the log")

        // 1. pg_ctl restart -m immediate under load.
        let restartStarted = ContinuousClock.now
        try await TestDatabase.offThePool { try cluster.restart(mode: .immediate) }
        let restartTook = ContinuousClock.now - restartStarted
        let beforeSecond = load.count
        #expect(try await waitUntil(timeout: .seconds(60), every: .milliseconds(25)) { load.count >= beforeSecond + 50 }, "appends after the restart")
        let appendsBackAfterRestart = ContinuousClock.now - restartStarted
        #expect(server.process.isRunning)

        // 2. An outage long enough to observe: stopped until /ready says 503 and the projection
        // runner has met it (its one warning), then started.
        let stopped = ContinuousClock.now
        try await TestDatabase.offThePool { try cluster.stop(mode: .immediate) }
        #expect(try await waitUntil(timeout: .seconds(30), every: .milliseconds(25)) { await Self.ready(server) == 503 }, "/ready during the outage")
        let notReadyAfter = ContinuousClock.now - stopped
        #expect(try await waitUntil(timeout: .seconds(30), every: .milliseconds(25)) {
            server.lines(loop: "projection runner", level: "warning").count >= 1
        }, "the projection runner met the outage")
        #expect(server.process.isRunning)
        let ackedDuringOutage = load.count
        let starting = ContinuousClock.now
        try await TestDatabase.offThePool { try cluster.start() }
        let started = ContinuousClock.now
        #expect(try await waitUntil(timeout: .seconds(60), every: .milliseconds(25)) { await Self.ready(server) == 200 }, "/ready after the outage")
        let readyAfterStart = ContinuousClock.now - started
        #expect(try await waitUntil(timeout: .seconds(60), every: .milliseconds(25)) { load.count >= ackedDuringOutage + 50 }, "appends after the outage")
        let appendsBackAfterStart = ContinuousClock.now - started

        load.stop.store(true, ordering: .relaxed)
        for client in clients { await client.value }
        let refusedStatuses = load.refusedStatuses.withLock { $0 }
        #expect(refusedStatuses.isSubset(of: [503]), "appends refused while the database was away: \(refusedStatuses.sorted())")
        #expect(server.process.isRunning, "ledger serve is still running")

        // Every acknowledged append is in the log.
        let acknowledged = load.acknowledged.withLock { $0 }
        let observer = try PostgresConnection(conninfo: conninfo, logger: TestDatabase.quietLogger)
        let ids = "{" + acknowledged.map { $0.uuidString.lowercased() }.joined(separator: ",") + "}"
        let stored = try observer.query("SELECT count(*) FROM events WHERE event_id = ANY(\(ids)::uuid[])").single()
            .decode(Int.self, at: 0)
        #expect(stored == acknowledged.count, "acknowledged appends missing from the log")

        // The projection runner catches up with the log's head.
        let inLog = try observer.query("SELECT count(*) FROM events WHERE event_type = 'SKANRegistered'").single()
            .decode(Int.self, at: 0)
        let catchUpStarted = ContinuousClock.now
        var status: [String: Any]?
        let caughtUp = try await waitUntil(timeout: .seconds(60), every: .milliseconds(25)) {
            status = try await Self.projectionStatus("skan_devices", conninfo: conninfo)
            return status?["eventsBehind"] as? Int == 0 && status?["eventsApplied"] as? Int == inLog
        }
        #expect(caughtUp, "skan_devices: \(String(describing: status)), \(inLog) registrations in the log")
        let caughtUpAfter = ContinuousClock.now - catchUpStarted
        #expect(server.process.isRunning)

        // What an operator sees: each loop's outage once per outage at most (two outages), its
        // reconnection, and never a statement or a row value in those lines.
        for loop in ["projection runner", "listener"] {
            let warnings = server.lines(loop: loop, level: "warning")
            #expect((1...2).contains(warnings.count), "\(loop):\n\(server.loopLines())")
        }
        #expect(!server.lines(loop: "projection runner", level: "notice").isEmpty)
        let loopLines = server.loopLines()
        #expect(!loopLines.contains("SELECT") && !loopLines.contains("INSERT") && !loopLines.contains("loaddev-"), "\(loopLines)")

        // SIGTERM still stops it promptly, cleanly.
        let stopping = ContinuousClock.now
        server.process.terminate()
        let exited = try await waitUntil(timeout: .seconds(30), every: .milliseconds(25)) { !server.process.isRunning }
        #expect(exited)
        if exited {
            #expect(server.process.terminationReason == .exit && server.process.terminationStatus == 0, "\(server.log())")
        }
        let stopTook = ContinuousClock.now - stopping

        print("""
            ledger serve restart figures: \(acknowledged.count) appends acknowledged, \(load.refused.load(ordering: .relaxed)) \
            refused, \(load.failed.load(ordering: .relaxed)) unanswered; pg_ctl restart -m immediate took \
            \(Self.seconds(restartTook)), 50 more appends acknowledged \(Self.seconds(appendsBackAfterRestart)) after it began; \
            after pg_ctl stop -m immediate /ready said 503 within \(Self.seconds(notReadyAfter)); after pg_ctl start \
            (\(Self.seconds(started - starting))) /ready said 200 within \(Self.seconds(readyAfterStart)), 50 more appends \
            within \(Self.seconds(appendsBackAfterStart)); projections caught up \(Self.seconds(caughtUpAfter)) after the load \
            stopped; SIGTERM stopped serve in \(Self.seconds(stopTook))
            """)
    }
}
