import Foundation
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import Testing

/// `ledger worker`'s options: refused before it touches a database (exit 64), or doing what they say.
@Suite("ledger worker options", .database)
struct WorkerCommandTests {
    // Issue 6 (leases): a try is called only with its timeout and a tenth of its lease left; a
    // lease without that room would leave every try uncalled, so it is refused at start.
    @Test("a lease that leaves no room for a call is refused")
    func leaseWithoutRoomIsRefused() async throws {
        let tight = try await LedgerProcess.runDetached(["worker", "--lease", "21", "--timeout", "20"])
        #expect(tight.status == 64)
        #expect(tight.stderr.contains("--lease must leave --timeout"), "\(tight.stderr)")
    }

    @Test("more sends ahead than slots are refused")
    func prefetchAboveSlotsIsRefused() async throws {
        let ahead = try await LedgerProcess.runDetached(["worker", "--slots", "4", "--prefetch", "5"])
        #expect(ahead.status == 64)
        #expect(ahead.stderr.contains("--prefetch must be between 0 and --slots"), "\(ahead.stderr)")
    }
    @Test("a negative --seal-every is refused")
    func negativeSealIntervalIsRefused() async throws {
        let negative = try await LedgerProcess.runDetached(["worker", "--seal-every=-1"])
        #expect(negative.status == 64)
        #expect(negative.stderr.contains("--seal-every must be 0"), "\(negative.stderr)")
    }

    // Issue 3, item 8: periodic seals commit to the global order, without a cron job.
    @Test("a running worker seals the appended events every --seal-every seconds, then stops cleanly on SIGTERM")
    func workerSeals() async throws {
        try await TestDatabase.with { database in
            let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 2, logger: TestDatabase.quietLogger)
            defer { pool.close() }
            let store = EventStore(pool: pool, logger: TestDatabase.quietLogger)
            for n in 0..<3 {
                try await store.append([NewEvent(type: "Noted", data: Data(#"{"n":\#(n)}"#.utf8), occurredAt: Date())],
                                       to: "device-app1/sealed")
            }
            let worker = try LedgerProcess.start(["worker", "--seal-every", "1", "--no-decide"], environment: [
                "LEDGER_DATABASE_URL": database.conninfo, "LEDGER_LOG_LEVEL": "critical",
            ])
            let deadline = ContinuousClock.now + .seconds(60)
            var sealed: Int64 = 0
            while sealed < 3, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
                sealed = try await pool.query("SELECT coalesce(sum(event_count), 0)::bigint FROM seals").single().decode(Int64.self, at: 0)
            }
            kill(worker.processIdentifier, SIGTERM)
            worker.waitUntilExit()
            #expect(sealed == 3)
            #expect(worker.terminationReason == .exit && worker.terminationStatus == 0)
            #expect(try await store.verify().isIntact)
        }
    }
}
