import Foundation
import LedgerDecisions
import LedgerDomain
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import Logging
import Testing

/// The decider's loop (``AttributionDecider/run(interval:clock:)``) through a database outage.
@Suite("Decider through a database outage", .database)
struct DeciderOutageTests {
    /// Its database refuses sessions for a while (every session ended, new ones refused, as during
    /// a server restart): the loop logs the outage once at warning, never as an error, and goes on
    /// once the database is back (the reconnection logged at notice); cancelling it stops it at once.
    @Test("the decider survives an outage and logs it once", .timeLimit(.minutes(2)))
    func deciderSurvivesAnOutage() async throws {
        try await TestDatabase.with { database in
            let logs = LogCapture()
            let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 2, logger: logs.logger())
            defer { pool.close() }
            let store = EventStore(pool: pool, catalog: .standard, logger: logs.logger())
            let decider = AttributionDecider(store: store, logger: logs.logger())
            let running = Task { try await decider.run(interval: .milliseconds(50)) }
            let loop = { logs.entries(where: "db.loop", is: "attribution decider") }
            func waitUntil(_ condition: () -> Bool) async throws -> Bool {
                let deadline = ContinuousClock.now + .seconds(30)
                while !condition(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
                return condition()
            }
            // The first round has opened its sessions.
            #expect(try await waitUntil { pool.openConnections > 0 })

            try await TestDatabase.offThePool { try database.refuseConnections() }
            #expect(try await waitUntil { loop().contains { $0.level == .warning } }, "the decider met the outage")
            try await TestDatabase.offThePool { try database.acceptConnections() }
            #expect(try await waitUntil { loop().contains { $0.level == .notice } }, "the decider went on")

            #expect(loop().filter { $0.level == .warning }.count == 1, "\(loop())")
            #expect(logs.all.filter { $0.level >= .error }.isEmpty, "\(logs.all)")
            let stopping = ContinuousClock.now
            running.cancel()
            try await running.value
            #expect(ContinuousClock.now - stopping < .seconds(5))
        }
    }
}
