import AsyncHTTPClient
import AttributionLedger
import Foundation
import LedgerHTTPAPI
import LedgerPostgres
import LedgerTestKit
import Logging
import NIOCore
import NIOHTTP1
import Prometheus
import ServiceLifecycle
import Synchronization
import Testing

/// The server as a swift-service-lifecycle `Service`, the way `ledger serve` runs it: in one
/// `ServiceGroup` after its pool, whose graceful shutdown (SIGTERM in `ledger serve`) stops the
/// server first.
@Suite(.database) struct GracefulShutdownTests {
    /// An append held by a lock on `events` is in flight when the group shuts down: the server
    /// stops accepting connections, the append still finishes and is answered, then the group's
    /// run returns without an error and the pool is closed after the server.
    @Test("graceful shutdown lets a request in flight finish, then stops the server and the pool", .timeLimit(.minutes(2)))
    func requestInFlightFinishes() async throws {
        try await TestDatabase.with { database in
            let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 4, logger: TestDatabase.quietLogger)
            defer { pool.close() }
            let ledger = AttributionLedger(pool: pool, logger: TestDatabase.quietLogger)
            let keys = try APIKeys(digests: [appA: [APIKeys.digest(of: keyA)]])
            let (ports, continuation) = AsyncStream<Int>.makeStream()
            let server = LedgerHTTPServer(
                ledger: ledger, keys: keys, configuration: LedgerHTTPConfiguration(host: "127.0.0.1", port: 0),
                metrics: PrometheusCollectorRegistry(), logger: TestDatabase.quietLogger,
                onServerRunning: { port in continuation.yield(port) })
            let group = ServiceGroup(services: [pool, server], logger: Logger(label: "test.group"))
            let returned = Atomic<Bool>(false)
            let running = Task {
                try await group.run()
                returned.store(true, ordering: .sequentiallyConsistent)
            }
            defer { running.cancel() }
            var iterator = ports.makeAsyncIterator()
            let port = try #require(await iterator.next())
            let api = RunningAPI(baseURL: "http://127.0.0.1:\(port)", port: port, pool: pool, metrics: PrometheusCollectorRegistry())

            // An append that waits for a lock another session holds on the log (briefly: while
            // it waits, its transaction holds the cluster's read horizon back for other tests).
            let blocker = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try blocker.execute("BEGIN")
            try blocker.execute("LOCK TABLE events IN SHARE MODE")
            let append = Task { try await api.send(.POST, "/v1/apps/\(appA)/events", json: batch(firstOpenJSON(device: "graceful1"))) }
            let observer = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            #expect(try await waitUntil(timeout: .seconds(30), every: .milliseconds(10)) {
                try observer.query("""
                    SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
                    WHERE NOT l.granted AND d.datname = current_database()
                    """).single().decode(Int.self, at: 0) > 0
            }, "the append waits for the lock")

            await group.triggerGracefulShutdown()
            // The server stops accepting connections while the append is still in flight.
            // (A plain TCP connect: an HTTP client would keep trying to connect until its deadline.)
            #expect(try await waitUntil(timeout: .seconds(30), every: .milliseconds(10)) {
                (try? await RawConnection.with(port: port) { _ in }) == nil
            }, "new connections are refused")
            let returnedEarly = returned.load(ordering: .sequentiallyConsistent)
            #expect(!returnedEarly, "the group waits for the request in flight")

            try blocker.execute("ROLLBACK")
            let answer = try await append.value
            #expect((200..<300).contains(answer.status), "\(String(decoding: answer.body, as: UTF8.self))")
            try await running.value
            #expect(try observer.query("SELECT count(*) FROM events WHERE event_type = 'FirstOpen'").single().decode(Int.self, at: 0) == 1)
            // The pool, listed first, was shut down last: it refuses new work.
            await #expect(throws: PostgresError.self) { try await pool.query("SELECT 1") }
        }
    }
}
