import Foundation
import LedgerPostgres
import LedgerTestKit
import Logging
import Synchronization
import Testing

@Suite("Connection loss: back-off, retries, the pool after an outage", .database)
struct ConnectionLossRetryTests {
    @Test("the back-off doubles from 100 ms to 5 s, each wait up to a fifth shorter")
    func backoffDoublesToItsCap() {
        let backoff = ReconnectBackoff.standard
        let full = (1...9).map { backoff.delay(attempt: $0, random: 0) }
        #expect(full == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .milliseconds(1600),
                         .milliseconds(3200), .seconds(5), .seconds(5), .seconds(5)])
        #expect(backoff.delay(attempt: 1_000, random: 0) == .seconds(5))
        let shortest = backoff.delay(attempt: 1, random: 0.999_999)
        #expect(shortest >= .milliseconds(80) && shortest < .microseconds(80_001))
        let halfCut = backoff.delay(attempt: 20, random: 0.5)
        #expect(halfCut > .milliseconds(4499) && halfCut < .milliseconds(4501))
    }

    @Test("connection losses are told from other failures")
    func classification() {
        let losses = [
            PostgresError(code: .connectionFailed, message: "no such file"),
            PostgresError(code: .connectionClosed, message: "server closed the connection unexpectedly"),
            PostgresError(code: .server, message: "x", sqlState: "08006"),
            PostgresError(code: .server, message: "x", sqlState: SQLState.adminShutdown),
            PostgresError(code: .server, message: "x", sqlState: SQLState.crashShutdown),
            PostgresError(code: .server, message: "x", sqlState: SQLState.cannotConnectNow),
        ]
        #expect(losses.allSatisfy { ConnectionLossRetry.isConnectionLoss($0) })
        let others: [any Error] = [
            PostgresError(code: .server, message: "x", sqlState: SQLState.uniqueViolation),
            PostgresError(code: .server, message: "x", sqlState: SQLState.queryCanceled),
            PostgresError(code: .poolClosed, message: "closed"),
            PostgresError(code: .decoding, message: "x"),
            CancellationError(),
        ]
        #expect(others.allSatisfy { !ConnectionLossRetry.isConnectionLoss($0) })
    }

    /// An outage of three failed tries: one warning naming the loop and the error (neither the
    /// statement nor the row values it carried), silence while it lasts, one notice when it ends.
    @Test("retrying logs an outage once, without statement or values, and goes on when it ends")
    func retryingLogsOnce() async throws {
        let logs = LogCapture()
        let retry = ConnectionLossRetry(loop: "test loop", logger: logs.logger(),
                                        backoff: ReconnectBackoff(initial: .milliseconds(1), maximum: .milliseconds(4)))
        let tries = Atomic<Int>(0)
        let lost = PostgresError(code: .connectionClosed, message: "server closed the connection unexpectedly",
                                 detail: "Key (device)=(secret-device-id) already exists.",
                                 query: "SELECT secret_column FROM events WHERE device = $1")
        let value = try await retry.retrying { () throws -> Int in
            let number = tries.add(1, ordering: .relaxed).newValue
            if number <= 3 { throw lost }
            return number
        }
        #expect(value == 4)
        let warnings = logs.all.filter { $0.level == .warning }
        #expect(warnings.count == 1)
        #expect(warnings.first?.metadata["db.loop"] == "test loop")
        #expect(warnings.first?.line.contains("server closed the connection unexpectedly") == true)
        #expect(logs.all.allSatisfy { !$0.line.contains("secret") && !$0.line.contains("SELECT") })
        let notices = logs.all.filter { $0.level == .notice }
        #expect(notices.count == 1)
        #expect(notices.first?.metadata["db.failed_tries"] == "3")
        #expect(!retry.isInOutage)

        // The next outage is logged again, once.
        _ = retry.delay(after: lost)
        _ = retry.delay(after: lost)
        #expect(logs.all.filter { $0.level == .warning }.count == 2)
        retry.succeeded()
        #expect(logs.all.filter { $0.level == .notice }.count == 2)
    }

    @Test("other failures are thrown at once, unlogged")
    func otherFailuresAreThrown() async throws {
        let logs = LogCapture()
        let retry = ConnectionLossRetry(loop: "test loop", logger: logs.logger())
        let tries = Atomic<Int>(0)
        await #expect(throws: PostgresError.self) {
            try await retry.retrying { () throws -> Void in
                tries.add(1, ordering: .relaxed)
                throw PostgresError(code: .server, message: "duplicate key", sqlState: SQLState.uniqueViolation)
            }
        }
        #expect(tries.load(ordering: .relaxed) == 1)
        #expect(logs.all.isEmpty)
    }

    /// A stop (SIGTERM cancels the loop's task) does not wait for the database: the back-off's
    /// wait ends at once.
    @Test("cancelling the task ends a retry's wait at once", .timeLimit(.minutes(1)))
    func cancellationEndsTheWait() async throws {
        let retry = ConnectionLossRetry(loop: "test loop", logger: TestDatabase.quietLogger,
                                        backoff: ReconnectBackoff(initial: .seconds(60), maximum: .seconds(60)))
        let waiting = Atomic<Bool>(false)
        let task = Task {
            try await retry.retrying { () throws -> Void in
                waiting.store(true, ordering: .relaxed)
                throw PostgresError(code: .connectionFailed, message: "no such file")
            }
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while !waiting.load(ordering: .relaxed), ContinuousClock.now < deadline { await Task.yield() }
        let cancelled = ContinuousClock.now
        task.cancel()
        let result = await task.result
        #expect(throws: CancellationError.self) { try result.get() }
        // The back-off is a minute: ending in well under half of it is ending at once. A tighter
        // wall-clock bound would measure how loaded the machine is (5.1 s was seen while the whole
        // suite started at once).
        #expect(ContinuousClock.now - cancelled < .seconds(30))
    }

    /// While the database refuses sessions, each caller gets `.connectionFailed` at once (the
    /// pool logs it once); once it accepts again, the same pool serves on fresh sessions.
    @Test("the pool fails fast while the database is away and serves fresh sessions after", .timeLimit(.minutes(1)))
    func poolAcrossAnOutage() async throws {
        try await TestDatabase.with(migrated: false) { database in
            let logs = LogCapture()
            let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 2, logger: logs.logger())
            defer { pool.close() }
            let before = try await pool.query("SELECT pg_backend_pid()").single().decode(Int32.self, at: 0)
            try await TestDatabase.offThePool { try database.refuseConnections() }
            for _ in 0..<3 {
                await #expect {
                    try await pool.query("SELECT 1")
                } throws: { ConnectionLossRetry.isConnectionLoss($0) }
            }
            let warnings = logs.entries(where: "db.loop", is: "connection pool").filter { $0.level == .warning }
            #expect(warnings.count == 1)
            #expect(warnings.first?.message.contains("each caller fails") == true, "the pool does not wait: \(warnings)")
            try await TestDatabase.offThePool { try database.acceptConnections() }
            let after = try await pool.query("SELECT pg_backend_pid()").single().decode(Int32.self, at: 0)
            #expect(after != before)
            #expect(logs.entries(where: "db.loop", is: "connection pool").filter { $0.level == .notice }.count == 1)
        }
    }

    /// A statement that failed with a connection loss drops its session even when libpq has not
    /// read the end of the stream yet: the next caller gets a fresh one.
    @Test("a session whose statement lost its connection is not lent again")
    func lostSessionIsDropped() async throws {
        try await TestDatabase.with(migrated: false) { database in
            let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 1, logger: TestDatabase.quietLogger)
            defer { pool.close() }
            let first = try await pool.query("SELECT pg_backend_pid()").single().decode(Int32.self, at: 0)
            await #expect(throws: PostgresError.self) {
                try await pool.withConnection { _ in
                    throw PostgresError(code: .server, message: "terminating connection due to administrator command",
                                        sqlState: SQLState.adminShutdown)
                }
            }
            let second = try await pool.query("SELECT pg_backend_pid()").single().decode(Int32.self, at: 0)
            #expect(second != first)
            // Any other failure keeps the session.
            await #expect(throws: PostgresError.self) {
                try await pool.withConnection { _ in throw PostgresError(code: .decoding, message: "x") }
            }
            #expect(try await pool.query("SELECT pg_backend_pid()").single().decode(Int32.self, at: 0) == second)
        }
    }
}
