import Foundation
import LedgerDomain
import LedgerPostgres
@testable import LedgerProjections
import LedgerStore
import LedgerTestKit
import Testing

/// A rebuild that holds only a few devices in memory: it writes its states out and reads them
/// back, and ends equal to incremental application.
@Suite("Rebuild within a memory limit", .database)
struct BoundedRebuildTests {
    /// Appends `histories` event by event in turn (the first event of each, then the second, …),
    /// so that every device's events, and its sends', are spread over the whole log.
    static func appendInterleaved(_ histories: [History], to store: EventStore) async throws {
        var cursors = Array(repeating: 0, count: histories.count)
        var left = histories.reduce(0) { $0 + $1.newEvents.count }
        while left > 0 {
            for index in histories.indices where cursors[index] < histories[index].newEvents.count {
                let (stream, event) = histories[index].newEvents[cursors[index]]
                try await store.append([event], to: stream)
                cursors[index] += 1
                left -= 1
            }
        }
    }

    // Issue 37: with at most 2 devices in memory and small chunks, a rebuild of interleaved
    // devices (SKAN, revenue, tokens, and the three providers' sends and answers) writes its
    // states out many times, reads devices and send links back, and its tables equal what
    // incremental steps stored, for every standard projection.
    @Test(arguments: [UInt64(5), 6])
    func aRebuildHoldingTwoDevicesEqualsIncremental(seed: UInt64) async throws {
        try await withStore(catalog: .standard) { store, _ in
            let projections = RunnerTests.projections
            let runner = ProjectionRunner(store: store, projections: projections, batchSize: 11)
            try await runner.prepare()
            let histories = try RunnerTests.randomHistories(seed: seed, devices: 6, steps: 15)
            try await Self.appendInterleaved(histories, to: store)
            try await waitForHorizon(store)
            #expect(try await runner.catchUp() > 0)
            let incremental = try await RunnerTests.dumpAll(store)
            #expect(incremental["skan_devices"]?.count == 6)
            #expect((incremental["google_obligations_rows"]?.count ?? 0) > 0)

            let rebuilder = ProjectionRebuilder(store: store, chunkSize: 9, batchSize: 13, maxStatesInMemory: 2,
                                                logger: TestDatabase.quietLogger)
            for projection in projections {
                let report = try await rebuilder.rebuild(projection)
                #expect(report.spills > 1, "\(projection.name) wrote its states out")
            }
            #expect(try await RunnerTests.dumpAll(store) == incremental)

            // The default limit holds these six devices: no spill, the same tables.
            let unbounded = ProjectionRebuilder(store: store, chunkSize: 9, logger: TestDatabase.quietLogger)
            for projection in projections { #expect(try await unbounded.rebuild(projection).spills == 0) }
            #expect(try await RunnerTests.dumpAll(store) == incremental)
        }
    }
}
