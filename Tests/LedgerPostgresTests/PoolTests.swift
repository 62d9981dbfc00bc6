import Foundation
import LedgerPostgres
import LedgerTestKit
import Logging
import ServiceLifecycle
import Testing

@Suite("Connection pool", .database, .timeLimit(.minutes(3)))
struct PoolTests {
    @Test("a pooled connection whose backend was terminated is replaced, and the next query works")
    func terminatedBackendIsReplaced() async throws {
        try await TestDatabase.with(migrated: false) { database in
            let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 1, logger: TestDatabase.quietLogger)
            defer { pool.close() }
            let firstPID = try await pool.query("SELECT pg_backend_pid()").single().decode(Int32.self, at: 0)
            let admin = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            #expect(try admin.query("SELECT pg_terminate_backend(\(firstPID))").single().decode(Bool.self, at: 0))
            // Wait for the backend to be gone (a condition, not a sleep).
            #expect(try await waitUntil { try admin.query("SELECT 1 FROM pg_stat_activity WHERE pid = \(firstPID)").count == 0 })
            let secondPID = try await pool.query("SELECT pg_backend_pid()").single().decode(Int32.self, at: 0)
            #expect(secondPID != firstPID)
            #expect(pool.openConnections == 1)
        }
    }

    /// Session settings hold on every session the pool opens, including one that replaces a
    /// terminated session and one opened outside the pool (``PostgresPool/openSession()``); a
    /// setting PostgreSQL refuses fails the caller and lends nothing.
    @Test("session settings are made on every session the pool opens, also a replacement")
    func sessionSettingsHoldOnEverySession() async throws {
        try await TestDatabase.with(migrated: false) { database in
            let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 1,
                                    sessionSettings: ["plan_cache_mode": "force_generic_plan", "application_name": "pool-test"],
                                    logger: TestDatabase.quietLogger)
            defer { pool.close() }
            let show = "SELECT current_setting('plan_cache_mode'), current_setting('application_name'), pg_backend_pid()"
            let first = try await pool.query(PostgresQuery(sql: show)).single()
            #expect(try first.decode(String.self, at: 0) == "force_generic_plan")
            #expect(try first.decode(String.self, at: 1) == "pool-test")
            let firstPID = try first.decode(Int32.self, at: 2)
            let admin = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            #expect(try admin.query("SELECT pg_terminate_backend(\(firstPID))").single().decode(Bool.self, at: 0))
            #expect(try await waitUntil { try admin.query("SELECT 1 FROM pg_stat_activity WHERE pid = \(firstPID)").count == 0 })
            let second = try await pool.query(PostgresQuery(sql: show)).single()
            #expect(try second.decode(Int32.self, at: 2) != firstPID)
            #expect(try second.decode(String.self, at: 0) == "force_generic_plan")

            // A session opened outside the pool (a rebuild's read-ahead and second writer) gets the
            // same settings, and is not counted against the pool's one session.
            let third = try await pool.withConnection { _ in
                let row = try pool.openSession().query(PostgresQuery(sql: show)).single()
                return [try row.decode(String.self, at: 0), try row.decode(String.self, at: 1)]
            }
            #expect(third == ["force_generic_plan", "pool-test"])

            let refused = PostgresPool(conninfo: database.conninfo, maxConnections: 1,
                                       sessionSettings: ["plan_cache_mode": "no_such_mode"], logger: TestDatabase.quietLogger)
            defer { refused.close() }
            #expect(throws: PostgresError.self) { _ = try refused.openSession() }
            await #expect(throws: PostgresError.self) { try await refused.query("SELECT 1") }
            // The failed session took no slot for good: the next caller is answered, not queued forever.
            await #expect(throws: PostgresError.self) { try await refused.query("SELECT 1") }
        }
    }

    /// If libpq calls ran on Swift's cooperative pool (two threads here), eight statements blocked
    /// on a lock would starve the task that releases it, and this test would never finish.
    @Test("blocking statements do not occupy Swift's cooperative thread pool")
    func blockingCallsStayOffTheCooperativePool() async throws {
        try await TestDatabase.with(migrated: false) { database in
            let holder = PostgresPool(conninfo: database.conninfo, maxConnections: 1, logger: TestDatabase.quietLogger)
            let waiters = PostgresPool(conninfo: database.conninfo, maxConnections: 8, logger: TestDatabase.quietLogger)
            let observer = PostgresPool(conninfo: database.conninfo, maxConnections: 1, logger: TestDatabase.quietLogger)
            defer { [holder, waiters, observer].forEach { $0.close() } }
            try await holder.query("SELECT pg_advisory_lock(\(42))")
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        try await waiters.query("SELECT pg_advisory_lock(\(42)), pg_advisory_unlock(\(42))")
                            .single().decode(Bool.self, at: 1)
                    }
                }
                // A waiter that failed to connect never blocks: bounded.
                let blocked = try await waitUntil(timeout: .seconds(60)) {
                    try await observer.query(
                        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                    ).single().decode(Int.self, at: 0) == 8
                }
                #expect(blocked, "waiters blocked on the lock")
                try await holder.query("SELECT pg_advisory_unlock(\(42))")
                // Once unlocked, every waiter's statement ends at once; the suite's time limit bounds
                // the wait for their results.
                #expect(try await waitUntil(timeout: .seconds(60)) {
                    try await observer.query(
                        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                    ).single().decode(Int.self, at: 0) == 0
                }, "every waiter got the lock")
                var released = 0
                for try await unlocked in group where unlocked { released += 1 }
                #expect(released == 8)
            }
        }
    }

    @Test("cancelling the calling task cancels the statement; the connection is reused")
    func taskCancellation() async throws {
        try await TestDatabase.with(migrated: false) { database in
            let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 1, logger: TestDatabase.quietLogger)
            let observer = PostgresPool(conninfo: database.conninfo, maxConnections: 1, logger: TestDatabase.quietLogger)
            defer { [pool, observer].forEach { $0.close() } }
            let pid = try await pool.query("SELECT pg_backend_pid()").single().decode(Int32.self, at: 0)
            let sleeper = Task { try await pool.query("SELECT pg_sleep(30)") }
            #expect(try await waitUntil {
                try await observer.query("SELECT 1 FROM pg_stat_activity WHERE pid = \(pid) AND state = 'active'").count > 0
            })
            sleeper.cancel()
            let error = await #expect(throws: PostgresError.self) { try await sleeper.value }
            #expect(error?.sqlState == SQLState.queryCanceled)
            let samePID = try await pool.query("SELECT pg_backend_pid()").single().decode(Int32.self, at: 0)
            #expect(samePID == pid)
        }
    }

    @Test("a connection handed back inside a transaction is rolled back first")
    func abandonedTransactionIsRolledBack() async throws {
        try await TestDatabase.with(migrated: false) { database in
            let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 1, logger: TestDatabase.quietLogger)
            defer { pool.close() }
            try await pool.query("CREATE TABLE t (n int)")
            try await pool.withConnection { connection in
                try connection.run(script: "BEGIN")
                try connection.execute("INSERT INTO t VALUES (\(1))")
            }
            let inTransaction = try await pool.withConnection { $0.isInTransaction }
            #expect(!inTransaction)
            #expect(try await pool.query("SELECT count(*) FROM t").single().decode(Int.self, at: 0) == 0)
        }
    }

    @Test("more callers than connections wait their turn; a closed pool refuses work")
    func waitersAndClose() async throws {
        try await TestDatabase.with(migrated: false) { database in
            let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 2, logger: TestDatabase.quietLogger)
            let sum = try await withThrowingTaskGroup(of: Int.self) { group in
                for n in 1...20 {
                    group.addTask { try await pool.query("SELECT \(n)::int + 0").single().decode(Int.self, at: 0) }
                }
                return try await group.reduce(0, +)
            }
            #expect(sum == 210)
            #expect(pool.openConnections <= 2)
            pool.close()
            let error = await #expect(throws: PostgresError.self) { try await pool.query("SELECT 1") }
            #expect(error?.code == .poolClosed)
        }
    }

    /// The pool as a swift-service-lifecycle `Service`: it lends sessions while its group runs,
    /// and closes when the group shuts down gracefully (or is cancelled), returning normally.
    @Test("as a Service, the pool closes when its group shuts down gracefully or is cancelled")
    func closesWithItsServiceGroup() async throws {
        try await TestDatabase.with(migrated: false) { database in
            for stop in ["graceful shutdown", "cancellation"] {
                let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 1, logger: TestDatabase.quietLogger)
                let group = ServiceGroup(services: [pool], logger: Logger(label: "test.group"))
                let running = Task { try await group.run() }
                #expect(try await pool.query("SELECT 41 + 1").single().decode(Int.self, at: 0) == 42, "\(stop)")
                if stop == "cancellation" { running.cancel() } else { await group.triggerGracefulShutdown() }
                try await running.value
                let error = await #expect(throws: PostgresError.self, "\(stop)") { try await pool.query("SELECT 1") }
                #expect(error?.code == .poolClosed, "\(stop)")
            }
        }
    }

    @Test("a pool pointed at nothing reports connectionFailed")
    func unreachable() async {
        let pool = PostgresPool(conninfo: "host=127.0.0.1 port=1 connect_timeout=2", logger: TestDatabase.quietLogger)
        let error = await #expect(throws: PostgresError.self) { try await pool.query("SELECT 1") }
        #expect(error?.code == .connectionFailed)
    }
}
