import Foundation
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import Logging
import Testing

/// The store's long-running loops through a database outage: every session ended and new ones
/// refused for a while (``TestDatabase/Handle/refuseConnections()``), as during a server restart.
@Suite("Store loops through a database outage", .database)
struct OutageTests {
    /// A store on `database` whose pool and store log to `logs`.
    static func store(_ database: TestDatabase.Handle, logs: LogCapture) -> EventStore {
        EventStore(pool: PostgresPool(conninfo: database.conninfo, maxConnections: 4, logger: logs.logger()), logger: logs.logger())
    }

    @Test("a subscription goes on after an outage from where it was, and logs it once", .timeLimit(.minutes(2)))
    func subscriptionSurvivesAnOutage() async throws {
        try await TestDatabase.with { database in
            let logs = LogCapture()
            let store = Self.store(database, logs: logs)
            defer { store.pool.close() }
            let before = sampleEvent(0)
            try await store.append([before], to: "device-app1-sub")
            let consumer = Task {
                var received: [UUID] = []
                for try await batch in store.subscribe(batchSize: 16, pollInterval: .milliseconds(50)) {
                    received += batch.events.map(\.id)
                    if received.count >= 2 { break }
                }
                return received
            }
            try await TestDatabase.offThePool { try database.refuseConnections() }
            let loop = { logs.entries(where: "db.loop", is: "subscription") }
            #expect(try await waitUntil(timeout: .seconds(30)) { !loop().isEmpty }, "the subscription met the outage")
            try await TestDatabase.offThePool { try database.acceptConnections() }
            let after = sampleEvent(1)
            try await store.append([after], to: "device-app1-sub")
            #expect(try await consumer.value == [before.id, after.id])
            #expect(loop().filter { $0.level == .warning }.count == 1, "\(loop())")
            #expect(loop().filter { $0.level == .notice }.count == 1, "\(loop())")
        }
    }

    @Test("the sealer goes on after an outage, logs it once, and stops at once when cancelled", .timeLimit(.minutes(2)))
    func sealerSurvivesAnOutage() async throws {
        try await TestDatabase.with { database in
            let logs = LogCapture()
            let store = Self.store(database, logs: logs)
            defer { store.pool.close() }
            let observer = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            func sealed() throws -> Int64 {
                try observer.query("SELECT coalesce(sum(event_count), 0)::bigint FROM seals").single().decode(Int64.self, at: 0)
            }
            let sealing = Task { await store.sealPeriodically(every: .milliseconds(20)) }
            for n in 0..<5 { try await store.append([sampleEvent(n)], to: "device-app1-seal") }
            #expect(try await waitUntil(timeout: .seconds(60)) { try sealed() == 5 })

            try await TestDatabase.offThePool { try database.refuseConnections() }
            let loop = { logs.entries(where: "db.loop", is: "sealer") }
            #expect(try await waitUntil(timeout: .seconds(30)) { !loop().isEmpty }, "the sealer met the outage")
            try await TestDatabase.offThePool { try database.acceptConnections() }

            let observerAgain = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            for n in 5..<10 { try await store.append([sampleEvent(n)], to: "device-app1-seal") }
            #expect(try await waitUntil(timeout: .seconds(60)) {
                try observerAgain.query("SELECT coalesce(sum(event_count), 0)::bigint FROM seals").single().decode(Int64.self, at: 0) == 10
            })
            #expect(loop().filter { $0.level == .warning }.count == 1, "\(loop())")
            #expect(logs.all.filter { $0.level >= .error }.isEmpty, "\(logs.all)")
            let stopping = ContinuousClock.now
            sealing.cancel()
            await sealing.value
            #expect(ContinuousClock.now - stopping < .seconds(5))
        }
    }
}
