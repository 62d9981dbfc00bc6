import Foundation
import LedgerPostgres
import LedgerTestKit
import Testing

/// `ledger serve` and `ledger worker` run their parts in one swift-service-lifecycle
/// `ServiceGroup` that SIGTERM and SIGINT shut down gracefully: SIGINT (a terminal's Ctrl-C) stops
/// each as cleanly as SIGTERM does (which the restart and crash tests send), with exit code 0.
@Suite("Stopping on SIGINT", .database, .serialized)
struct SignalTests {
    @Test("ledger serve stops on SIGINT: every part ends, exit 0", .timeLimit(.minutes(3)))
    func serveStopsOnSIGINT() async throws {
        try await TestDatabase.with { database in
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-sigint-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let server = try await ServeRestartTests.startServe(
                conninfo: database.conninfo, digest: String(repeating: "a", count: 64), logPath: directory.appendingPathComponent("serve.log").path)
            defer { if server.process.isRunning { server.process.terminate() } }
            #expect(try await waitUntil(timeout: .seconds(30), every: .milliseconds(25)) { await ServeRestartTests.ready(server) == 200 })
            let pid = server.process.processIdentifier
            kill(pid, SIGINT)
            let ended = try await waitUntil(timeout: .seconds(30), every: .milliseconds(25)) { !server.process.isRunning }
            // Still running: say what the kernel holds of it (a zombie not yet reaped, or a
            // process stuck in its exit), rather than read a termination status it has not got.
            guard ended else {
                let state = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8))?
                    .split(separator: "\n").first { $0.hasPrefix("State:") } ?? "gone"
                Issue.record("ledger serve still running 30 s after SIGINT (\(state)); log: \(server.log())")
                return
            }
            #expect(server.process.terminationReason == .exit && server.process.terminationStatus == 0, "\(server.log())")
            #expect(server.log().contains("ledger serve: stopped"), "\(server.log())")
        }
    }

    @Test("ledger worker stops on SIGINT: its liveness lock is released, exit 0", .timeLimit(.minutes(3)))
    func workerStopsOnSIGINT() async throws {
        try await TestDatabase.with { database in
            let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 1, logger: TestDatabase.quietLogger)
            defer { pool.close() }
            let worker = try LedgerProcess.start(["worker", "--worker-id", "sigint", "--seal-every", "1"], environment: [
                "LEDGER_DATABASE_URL": database.conninfo, "LEDGER_LOG_LEVEL": "critical",
            ])
            defer { if worker.isRunning { worker.terminate() } }
            let lockHeld = """
                SELECT count(*) FROM pg_locks
                WHERE locktype = 'advisory' AND granted
                  AND ((classid::bigint << 32) | objid::bigint) = hashtextextended('ledger.worker.sigint', 0)
                """
            func held() async throws -> Bool {
                try await pool.query(PostgresQuery(sql: lockHeld)).single().decode(Int.self, at: 0) > 0
            }
            #expect(try await waitUntil(timeout: .seconds(60), every: .milliseconds(10)) { try await held() })
            kill(worker.processIdentifier, SIGINT)
            #expect(try await waitUntil(timeout: .seconds(30), every: .milliseconds(25)) { !worker.isRunning })
            #expect(worker.terminationReason == .exit && worker.terminationStatus == 0)
            #expect(try await held() == false, "the liveness lock is released")
        }
    }
}
