import Foundation
import LedgerDomain
import LedgerFolds
import LedgerPostgres
import LedgerProjections
import LedgerStore
import LedgerTestKit
import Logging
import Testing

/// The runner's loop (``ProjectionRunner/run()``) through a database outage.
@Suite("Projection runner through a database outage", .database)
struct RunnerOutageTests {
    /// Appends a SKAN registration for each of `devices` new devices.
    static func register(_ devices: Range<Int>, store: EventStore) async throws {
        for index in devices {
            try await store.append([NewEvent(type: SKANRegistered.eventType, data: try EventCatalog.standard.encode(SKANRegistered()),
                                             occurredAt: History.epoch)],
                                   to: "device-app1-outage\(index)")
        }
    }

    /// The runner keeps going while its database refuses sessions (every session ended, new ones
    /// refused, as during a server restart): it logs the outage once at warning, without any
    /// statement's text, survives it, and once the database is back applies what was appended
    /// since, from its checkpoint, exactly once.
    @Test("the runner survives an outage, logs it once and catches up from its checkpoint", .timeLimit(.minutes(2)))
    func runnerSurvivesAnOutage() async throws {
        try await withStore(catalog: .standard) { store, database in
            let skan = SKANDeviceProjection(SKANDeviceReducer())
            let logs = LogCapture()
            let runner = ProjectionRunner(store: store, projections: [skan], batchSize: 50, pollInterval: .milliseconds(100),
                                          logger: logs.logger())
            let running = Task { try await runner.run() }
            defer { running.cancel() }
            func applied() async throws -> Int64 {
                try await store.pool.withConnection { try ProjectionStatus.read([skan], on: $0) }.first?.eventsApplied ?? -1
            }

            try await Self.register(0..<10, store: store)
            #expect(try await waitUntil(timeout: .seconds(60)) { try await applied() == 10 })

            try await TestDatabase.offThePool { try database.refuseConnections() }
            let loop = { logs.entries(where: "db.loop", is: "projection runner") }
            #expect(try await waitUntil(timeout: .seconds(30)) { !loop().isEmpty }, "the runner met the outage")
            try await TestDatabase.offThePool { try database.acceptConnections() }

            try await Self.register(10..<25, store: store)
            #expect(try await waitUntil(timeout: .seconds(60)) { try await applied() == 25 }, "caught up after the outage")
            #expect(!running.isCancelled)
            let rows = try await store.pool.query("SELECT count(*) FROM skan_devices").single().decode(Int.self, at: 0)
            #expect(rows == 25)

            #expect(loop().filter { $0.level == .warning }.count == 1, "\(loop())")
            #expect(try await waitUntil(timeout: .seconds(10)) { loop().contains { $0.level == .notice } })
            #expect(logs.all.filter { $0.level >= .warning }.allSatisfy {
                !$0.line.contains("SELECT") && !$0.line.contains("INSERT") && !$0.line.contains("outage1")
            }, "\(logs.all)")
            // The listener it runs reconnected too, and said so once.
            let listener = logs.entries(where: "db.loop", is: "listener")
            #expect(listener.filter { $0.level == .warning }.count == 1, "\(listener)")
        }
    }
}
