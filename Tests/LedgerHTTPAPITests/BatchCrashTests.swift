import AsyncHTTPClient
import Foundation
import LedgerHTTPAPI
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import NIOCore
import NIOHTTP1
import Testing

/// `ledger serve` as a process of its own, killed with SIGKILL while it records a batch.
@Suite("A batch is all or nothing, even when the server is killed mid-batch", .database)
struct BatchCrashTests {
    /// The `ledger` executable beside the test bundle (ops/test builds every product first).
    static let binary: String = {
        let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return testBinary.deletingLastPathComponent().appendingPathComponent("ledger").path
    }()

    /// Starts `ledger serve --port 0` on `conninfo` and returns the process and its port, read
    /// from the line it prints once it listens.
    static func startServer(conninfo: String) throws -> (Process, Int) {
        try #require(FileManager.default.isExecutableFile(atPath: binary), "build the ledger product first: swift build")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve", "--port", "0", "--no-projections"]
        var environment = ProcessInfo.processInfo.environment
        environment["LEDGER_DATABASE_URL"] = conninfo
        environment["LEDGER_API_KEYS"] = #"{"\#(appA)": "\#(APIKeys.digest(of: keyA))"}"#
        environment["LEDGER_LOG_LEVEL"] = "error"
        process.environment = environment
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        var seen = Data()
        while true {
            let chunk = err.fileHandleForReading.availableData
            if chunk.isEmpty { break }  // the process ended before listening
            seen.append(chunk)
            let text = String(decoding: seen, as: UTF8.self)
            if let range = text.range(of: "listening on http://127.0.0.1:") {
                let digits = text[range.upperBound...].prefix(while: \.isNumber)
                if let port = Int(digits), text[range.upperBound...].dropFirst(digits.count).first != nil {
                    return (process, port)
                }
            }
        }
        process.terminate()
        Issue.record("ledger serve did not start: \(String(decoding: seen, as: UTF8.self))")
        throw CancellationError()
    }

    /// Whether a backend of the database waits for a lock: the batch, blocked on the row the test
    /// holds, is mid-transaction.
    static func batchBlocked(_ pool: PostgresPool) async throws -> Bool {
        try await pool.query("""
            SELECT EXISTS (SELECT 1 FROM pg_stat_activity
                           WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'
                             AND backend_xid IS NOT NULL)
            """).single().decode(Bool.self, at: 0)
    }

    /// Whether a backend of the database still holds a write transaction open.
    static func batchOpen(_ pool: PostgresPool) async throws -> Bool {
        try await pool.query("""
            SELECT EXISTS (SELECT 1 FROM pg_stat_activity
                           WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_xid IS NOT NULL)
            """).single().decode(Bool.self, at: 0)
    }

    @Test("kill -9 while a 500-event batch is being recorded: none of it is stored; the same batch again stores all, once")
    func killMidBatch() async throws {
        try await TestDatabase.with { database in
            let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 2, logger: TestDatabase.quietLogger)
            defer { pool.close() }
            let ids = (0..<500).map { _ in UUID() }
            let body = batch(ids.enumerated().map { index, id in firstOpenJSON(id: id, device: "crash-\(index)") }.joined(separator: ","))
            let idList = "{" + ids.map { $0.uuidString.lowercased() }.joined(separator: ",") + "}"
            func stored() async throws -> Int {
                try await pool.query("SELECT count(*) FROM events WHERE event_id = ANY(\(idList)::uuid[])").single().decode(Int.self, at: 0)
            }

            // The test holds, uncommitted, the first event of the batch's last device: the batch's
            // transaction blocks there, with the 499 events before it written, until the kill.
            let holder = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try holder.execute("BEGIN")
            try EventStore(pool: pool, logger: TestDatabase.quietLogger).append(
                [NewEvent(type: "Held", data: Data("{}".utf8), occurredAt: Date())], to: "device-\(appA)/crash-499", expected: .noStream,
                on: holder)
            let (server, port) = try Self.startServer(conninfo: database.conninfo)
            defer { if server.isRunning { server.terminate() } }
            let request = Task {
                var post = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/apps/\(appA)/events")
                post.method = .POST
                post.headers.add(name: "Authorization", value: "Bearer \(keyA)")
                post.headers.add(name: "Content-Type", value: "application/json")
                post.body = .bytes(ByteBuffer(string: body))
                return try await HTTPClient.shared.execute(post, timeout: .seconds(60)).status.code
            }
            // Kill only once the batch waits on the held row: the kill lands mid-batch.
            let deadline = ContinuousClock.now + .seconds(60)
            var blocked = false
            while ContinuousClock.now < deadline, !blocked {
                blocked = try await Self.batchBlocked(pool)
                if !blocked { try await Task.sleep(for: .milliseconds(5)) }
            }
            #expect(blocked, "the batch never reached the held row")
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
            #expect(server.terminationReason == .uncaughtSignal)
            let answer = await request.result
            #expect((try? answer.get()) != 200, "the killed server answered 200")
            // The held row goes; the batch's statement then ends, its backend finds the client gone
            // and rolls the transaction back (no COMMIT ever came).
            try holder.execute("ROLLBACK")
            while ContinuousClock.now < deadline, try await Self.batchOpen(pool) { try await Task.sleep(for: .milliseconds(5)) }
            #expect(try await stored() == 0, "a batch killed mid-transaction left part of itself")

            let (again, secondPort) = try Self.startServer(conninfo: database.conninfo)
            defer { if again.isRunning { again.terminate() } }
            var retry = HTTPClientRequest(url: "http://127.0.0.1:\(secondPort)/v1/apps/\(appA)/events")
            retry.method = .POST
            retry.headers.add(name: "Authorization", value: "Bearer \(keyA)")
            retry.headers.add(name: "Content-Type", value: "application/json")
            retry.body = .bytes(ByteBuffer(string: body))
            let response = try await HTTPClient.shared.execute(retry, timeout: .seconds(60))
            let text = String(buffer: try await response.body.collect(upTo: 16 * 1_048_576))
            #expect(response.status == .ok, "\(text.prefix(300))")
            #expect(try await stored() == ids.count)
            again.terminate()
            again.waitUntilExit()
        }
    }
}
