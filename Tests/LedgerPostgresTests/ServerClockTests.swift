import Foundation
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

/// The server's clock as a session estimates it (`PostgresConnection.serverClock()`): the event
/// store stamps `recorded_at` with it, so it must track the server's `clock_timestamp()`.
@Suite("The server's clock, as a session estimates it")
struct ServerClockTests {
    @Test("measured when the session connects, it agrees with clock_timestamp() read just after")
    func measuredAtConnect() async throws {
        try await TestDatabase.with(migrated: false) { database throws in
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            let clock = try #require(connection.measuredClock)
            let estimate = clock.now()
            let server = try connection.query("SELECT clock_timestamp()").single().decode(Date.self, at: 0)
            // The server read its clock after the estimate was taken, within a round trip.
            #expect(server.timeIntervalSince(estimate) > -(clock.uncertainty + 0.002))
            #expect(server.timeIntervalSince(estimate) < 0.5)
            #expect(try connection.serverClock() == clock)  // fresh and certain: not measured again
        }
    }

    @Test("carried forward by the monotonic clock, not the wall clock")
    func carriedByTheMonotonicClock() {
        let reading = Date(timeIntervalSince1970: 1_000_000_000)
        let clock = ServerClock(reading: reading, readAt: ContinuousClock.now - .seconds(2), uncertainty: 0)
        let elapsed = clock.now().timeIntervalSince(reading)
        #expect(elapsed >= 2 && elapsed < 2.5)
    }

    @Test("measured again when too old, when the local clocks moved apart, or when uncertain and last tried long enough ago")
    func measuredAgain() async throws {
        try await TestDatabase.with(migrated: false) { database throws in
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            let wrong = Date().addingTimeInterval(3_600)
            // Too old: replaced by a fresh measurement.
            connection.measuredClock = ServerClock(reading: wrong, readAt: .now - .seconds(601), uncertainty: 0)
            #expect(abs(try connection.serverClock().offset) < 1)
            // Uncertain, but tried a moment ago: kept.
            connection.measuredClock = ServerClock(reading: wrong, readAt: .now, uncertainty: 1)
            connection.clockMeasuredAt = .now
            #expect(try connection.serverClock().offset > 3_599)
            // Uncertain and tried long enough ago: measured again, and the fresh one is more certain.
            connection.clockMeasuredAt = .now - .seconds(31)
            #expect(abs(try connection.serverClock().offset) < 1)
            // Certain and fresh, but this machine's wall clock moved an hour since (a step, or a
            // pause the monotonic clock did not count): measured again.
            connection.measuredClock = ServerClock(reading: wrong, readAt: .now, uncertainty: 0,
                                                   localAtRead: Date().addingTimeInterval(-3_600))
            connection.clockMeasuredAt = .now
            #expect(abs(try connection.serverClock().offset) < 1)
        }
    }
}
