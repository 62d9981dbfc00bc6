import AsyncHTTPClient
import Foundation
import LedgerDomain
import LedgerFakeProviders
import LedgerPostgres
import LedgerProviders
import LedgerTestKit
import NIOCore
import NIOHTTP1
import Testing

/// The series docs/operations.md ("Metrics") tells operators to watch, scraped from the real
/// `ledger worker` and `ledger serve` processes against PostgreSQL after they did the work each
/// series counts, and the `ledger_…` series every panel of the Grafana dashboard queries. The
/// table and the dashboard are read from the repository: a series added to either without its
/// export, or an export renamed, fails here.
@Suite("Metrics every process exports", .database, .serialized)
struct MetricsExportTests {
    static let app = "com.example.metrics"
    /// Google App Conversion Tracking API: the `dev_token` and `link_id` the fake accepts.
    static let credentials = FakeProviders.Credentials(
        googleDevToken: "metrics-dev-token-SECRET", googleLinkID: "CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC", branchKey: "key_live_metrics",
        branchSecret: "metrics-branch-secret")

    /// A status and body.
    struct Answer {
        var status: Int
        var body: String
    }

    static func request(_ url: String, method: HTTPMethod = .GET, key: String? = nil, body: String? = nil) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let key { request.headers.add(name: "Authorization", value: "Bearer \(key)") }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        let bytes = try await response.body.collect(upTo: 8 * 1_048_576)
        return Answer(status: Int(response.status.code), body: String(buffer: bytes))
    }

    /// A `ledger` process with its stderr in `logPath`, and the address it printed after `marker`.
    static func start(_ arguments: [String], environment extra: [String: String], logPath: String, marker: String) async throws
        -> (process: Process, baseURL: String)
    {
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: LedgerProcess.binary)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "LEDGER_DATABASE_URL")
        for (key, value) in extra { environment[key] = value }
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        try process.run()
        var port: String?
        let log = { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
        _ = try await waitUntil(timeout: .seconds(60)) {
            let text = log()
            guard let range = text.range(of: marker) else { return !process.isRunning }
            port = String(text[range.upperBound...].prefix { $0.isNumber })
            return true
        }
        let found = try #require(port, "\(arguments.first ?? "") did not print '\(marker)': \(log())")
        return (process, "http://127.0.0.1:\(found)")
    }

    static func temporaryFolder(_ name: String) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-\(name)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    @Test("the dashboard queries only series of the table, and has a Prometheus data source variable")
    func dashboardQueriesDocumentedSeries() throws {
        let table = try MetricsDocument.table()
        #expect(table.count >= 10, "the table of docs/operations.md, Metrics, was not found")
        #expect(Set(table.map(\.exportedBy)).isSubset(of: ["serve", "worker"]), "\(table.map(\.exportedBy))")
        let dashboard = try MetricsDocument.dashboard()
        let variables = (dashboard["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? []
        #expect(variables.contains { $0["name"] as? String == "datasource" && $0["type"] as? String == "datasource"
            && $0["query"] as? String == "prometheus" })
        let queried = try MetricsDocument.dashboardSeries()
        #expect(!queried.isEmpty)
        for (panel, name) in queried {
            #expect(MetricsDocument.row(for: name, in: table) != nil, "panel '\(panel)' queries \(name), which the table does not list")
        }
        for panel in MetricsDocument.panels(of: dashboard) where panel["type"] as? String != "row" {
            let datasource = (panel["datasource"] as? [String: Any])?["uid"] as? String
            #expect(datasource == "${datasource}", "panel '\(panel["title"] ?? "?")' does not use the datasource variable")
        }
    }

    // Issue 33: `ledger worker --metrics-port` serves /metrics, /health and /ready; the queue
    // gauges drop to 0 once the queue is empty; /ready follows the database.
    @Test("ledger worker exports every series the table names for it, and /ready follows the database",
          .timeLimit(.minutes(4)))
    func workerExportsItsSeries() async throws {
        let table = try MetricsDocument.table()
        try await TestDatabase.with { database in
            let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 2, logger: TestDatabase.quietLogger)
            defer { pool.close() }
            try await withCheckedFakeProviders(configuration: .init(credentials: Self.credentials)) { fakes in
                fakes.branch.setRapidRepeatInterval(.zero)
                // Branch v1/open server-to-server guide: `branch_secret` must be the app's; the
                // worker is given another, so each open is refused and fails for good (a send
                // needing people).
                fakes.expectAnomaly(.branch, "wrong_credential", count: 2)
                let folder = try Self.temporaryFolder("worker-metrics")
                defer { try? FileManager.default.removeItem(at: folder) }
                let environment = [
                    "LEDGER_DATABASE_URL": database.conninfo,
                    "LEDGER_GOOGLE_DEV_TOKEN": Self.credentials.googleDevToken, "LEDGER_GOOGLE_LINK_ID": Self.credentials.googleLinkID,
                    "LEDGER_GOOGLE_URL": fakes.baseURL, "LEDGER_BRANCH_KEY": Self.credentials.branchKey,
                    "LEDGER_BRANCH_SECRET": "not-the-configured-secret", "LEDGER_BRANCH_URL": fakes.baseURL,
                    "LEDGER_LOG_LEVEL": "warning",
                ]
                // Two Android first opens: a Google and a Branch send each, pending.
                let facts = folder.appendingPathComponent("facts.jsonl")
                let lines = try [0, 1].map { try AppsFileWorkerTests.firstOpenLine(app: Self.app, device: $0) }
                try Data(lines.joined(separator: "\n").utf8).write(to: facts)
                let append = try await LedgerProcess.runDetached(["append"], environment: environment, stdin: facts)
                #expect(append.status == 0, "\(append.stdout) \(append.stderr)")
                let pending = try await pool.query("SELECT count(*) FROM send_queue").single().decode(Int.self, at: 0)
                #expect(pending == 4)

                let (worker, baseURL) = try await Self.start(
                    ["worker", "--metrics-port", "0", "--seal-every", "0"], environment: environment,
                    logPath: folder.appendingPathComponent("worker.log").path, marker: "metrics on http://127.0.0.1:")
                defer { if worker.isRunning { kill(worker.processIdentifier, SIGKILL); worker.waitUntilExit() } }

                // Every series of the table, once the sends are done and the decisions made.
                var scrape = ""
                let complete = try await waitUntil(timeout: .seconds(90), every: .milliseconds(200)) {
                    scrape = try await Self.request(baseURL + "/metrics").body
                    return MetricsDocument.missing(from: scrape, process: "worker", table: table).isEmpty
                }
                #expect(complete, "missing from the worker's scrape: \(MetricsDocument.missing(from: scrape, process: "worker", table: table))")
                #expect(try MetricsDocument.dashboardMissing(from: scrape, process: "worker", table: table).isEmpty)
                #expect(scrape.contains(#"ledger_sends_needing_people_total{provider="branch",app="com.example.metrics",state="failed""#),
                        "\(scrape)")

                // Once the queue is empty, the depth says 0 for every provider rather than its last value.
                #expect(try await waitUntil(timeout: .seconds(60), every: .milliseconds(100)) {
                    try await pool.query("SELECT count(*) FROM send_queue").single().decode(Int.self, at: 0) == 0
                })
                let drained = try await waitUntil(timeout: .seconds(10), every: .milliseconds(100)) {
                    scrape = try await Self.request(baseURL + "/metrics").body
                    return ["google", "branch", "apple_adservices", "singular"].allSatisfy {
                        scrape.contains("ledger_send_queue_depth{provider=\"\($0)\"} 0")
                    }
                }
                #expect(drained, "\(scrape.split(separator: "\n").filter { $0.hasPrefix("ledger_send_queue_depth") })")

                #expect(try await Self.request(baseURL + "/health").status == 200)
                let ready = try await Self.request(baseURL + "/ready")
                #expect(ready.status == 200 && ready.body.contains(#""ready""#), "\(ready)")

                // The queue cannot be read (the table is gone from under the worker): not ready.
                _ = try await pool.query("ALTER TABLE send_queue RENAME TO send_queue_away")
                var unreadable = Answer(status: 0, body: "")
                #expect(try await waitUntil(timeout: .seconds(10), every: .milliseconds(100)) {
                    unreadable = try await Self.request(baseURL + "/ready")
                    return unreadable.status == 503
                })
                #expect(unreadable.body.contains("send_queue_unreadable"), "\(unreadable)")
                _ = try await pool.query("ALTER TABLE send_queue_away RENAME TO send_queue")
                #expect(try await Self.request(baseURL + "/ready").status == 200)

                // The database refuses new sessions and ends the worker's: /ready says so, /health not.
                let admin = PostgresPool(conninfo: try TestDatabase.server.get().adminConninfo, maxConnections: 1,
                                         logger: TestDatabase.quietLogger)
                defer { admin.close() }
                let name = PostgresQuery.quoteIdentifier(database.name)
                _ = try await admin.query(PostgresQuery(sql: "ALTER DATABASE \(name) WITH ALLOW_CONNECTIONS false"))
                _ = try await admin.query(PostgresQuery(sql: """
                    SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(database.name)'
                    """))
                var notReady = Answer(status: 0, body: "")
                #expect(try await waitUntil(timeout: .seconds(30), every: .milliseconds(100)) {
                    notReady = try await Self.request(baseURL + "/ready")
                    return notReady.status == 503
                })
                #expect(notReady.body.contains(#""reason":"database_unreachable""#) || notReady.body.contains(#""reason": "database_unreachable""#),
                        "\(notReady)")
                #expect(try await Self.request(baseURL + "/health").status == 200)
                _ = try await admin.query(PostgresQuery(sql: "ALTER DATABASE \(name) WITH ALLOW_CONNECTIONS true"))
                #expect(try await waitUntil(timeout: .seconds(30), every: .milliseconds(100)) {
                    try await Self.request(baseURL + "/ready").status == 200
                }, "ready again once the database takes sessions")

                kill(worker.processIdentifier, SIGTERM)
                worker.waitUntilExit()
                #expect(worker.terminationReason == .exit && worker.terminationStatus == 0)
            }
        }
    }

    @Test("ledger worker serves nothing without --metrics-port, and refuses it with --drain")
    func workerMetricsOptions() async throws {
        let drain = try await LedgerProcess.runDetached(["worker", "--drain", "--metrics-port", "0"])
        #expect(drain.status == 64)
        #expect(drain.stderr.contains("--metrics-port is for a running worker"), "\(drain.stderr)")
        let range = try await LedgerProcess.runDetached(["worker", "--metrics-port", "70000"])
        #expect(range.status == 64)
        #expect(range.stderr.contains("--metrics-port must be 0–65535"), "\(range.stderr)")
    }

    @Test("ledger serve exports every series the table names for it", .timeLimit(.minutes(3)))
    func serveExportsItsSeries() async throws {
        let table = try MetricsDocument.table()
        try await TestDatabase.with { database in
            let folder = try Self.temporaryFolder("serve-metrics")
            defer { try? FileManager.default.removeItem(at: folder) }
            let key = "test-key-metrics-not-a-real-credential"
            let keyFile = folder.appendingPathComponent("key")
            try Data(key.utf8).write(to: keyFile)
            let digest = try await LedgerProcess.runDetached(["serve", "--hash-key"], stdin: keyFile).stdout
                .trimmingCharacters(in: .whitespacesAndNewlines)
            // The database fails every append to one device (SQLSTATE 53100, disk full), as a
            // database in trouble would: that fact fails rather than being refused.
            let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 1, logger: TestDatabase.quietLogger)
            defer { pool.close() }
            _ = try await pool.query(PostgresQuery(sql: """
                CREATE FUNCTION metrics_test_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN RAISE EXCEPTION 'could not extend file' USING ERRCODE = '53100'; END $$
                """))
            _ = try await pool.query(PostgresQuery(sql: """
                CREATE TRIGGER metrics_test_disk_full BEFORE INSERT ON events FOR EACH ROW
                    WHEN (NEW.stream_id = 'device-\(Self.app)/full') EXECUTE FUNCTION metrics_test_disk_full()
                """))
            let (server, baseURL) = try await Self.start(
                ["serve", "--port", "0", "--database-url", database.conninfo],
                environment: ["LEDGER_API_KEYS": #"{"\#(Self.app)": "\#(digest)"}"#, "LEDGER_LOG_LEVEL": "critical"],
                logPath: folder.appendingPathComponent("serve.log").path, marker: "listening on http://127.0.0.1:")
            defer {
                kill(server.processIdentifier, SIGTERM)
                server.waitUntilExit()
            }
            let events = baseURL + "/v1/apps/\(Self.app)/events"
            func fact(_ id: UUID, device: String, hour: Int = 10) -> String {
                #"{"events": [{"id": "\#(id.uuidString)", "type": "SKANRegistered", "device_id": "\#(device)", "occurred_at": "2026-11-23T\#(hour):00:00Z", "data": {"skan_version": "4.0"}}]}"#
            }
            let id = UUID()
            let appended = try await Self.request(events, method: .POST, key: key, body: fact(id, device: "d1"))
            #expect(appended.status == 200 || appended.status == 201, "\(appended)")
            // The same id with other content: refused (`id_conflict`).
            let conflict = try await Self.request(events, method: .POST, key: key, body: fact(id, device: "d1", hour: 11))
            #expect((400..<500).contains(conflict.status), "\(conflict)")
            let failed = try await Self.request(events, method: .POST, key: key, body: fact(UUID(), device: "full"))
            #expect(failed.status == 500, "\(failed)")
            let unauthenticated = try await Self.request(events, method: .POST, key: "not-a-key", body: fact(UUID(), device: "d2"))
            #expect(unauthenticated.status == 401)
            // Apple's SKAdNetwork postback without its fields: refused and kept as refused.
            let postback = try await Self.request(baseURL + "/v1/apps/\(Self.app)/skan/postbacks?network=metrics-test", method: .POST, key: key,
                                                  body: #"{"version": "4.0"}"#)
            #expect(postback.status == 422 || postback.status == 400, "\(postback)")

            var scrape = ""
            let complete = try await waitUntil(timeout: .seconds(60), every: .milliseconds(200)) {
                scrape = try await Self.request(baseURL + "/metrics").body
                return MetricsDocument.missing(from: scrape, process: "serve", table: table).isEmpty
            }
            #expect(complete, "missing from serve's scrape: \(MetricsDocument.missing(from: scrape, process: "serve", table: table))")
            #expect(try MetricsDocument.dashboardMissing(from: scrape, process: "serve", table: table).isEmpty)
        }
    }
}
