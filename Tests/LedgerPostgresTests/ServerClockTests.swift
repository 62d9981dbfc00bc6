import Foundation
@testable import LedgerPostgres
import LedgerTestKit
import Testing

/// The server's clock as a session estimates it (`PostgresConnection.serverClock()`): the event
/// store stamps `recorded_at` with it, so it must track the server's `clock_timestamp()`.
@Suite("The server's clock, as a session estimates it", .database)
struct ServerClockTests {
    /// How far two reads of one clock may disagree beyond what the timing explains: the server
    /// prints microseconds, and the test server runs on this machine's clock.
    static let tolerance: TimeInterval = 0.002

    @Test("measured when the session connects, it agrees with clock_timestamp() read just after")
    func measuredAtConnect() async throws {
        try await TestDatabase.with(migrated: false) { database throws in
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            let clock = try #require(connection.measuredClock)
            let before = ContinuousClock.now
            let estimate = clock.now()
            let server = try connection.query("SELECT clock_timestamp()").single().decode(Date.self, at: 0)
            let elapsed = ServerClock.seconds(before.duration(to: .now))
            // The server read its clock after the estimate was taken, before the answer came back;
            // the estimate itself is good to within its uncertainty. However slow the machine is.
            #expect(server.timeIntervalSince(estimate) > -(clock.uncertainty + Self.tolerance))
            #expect(server.timeIntervalSince(estimate) < elapsed + clock.uncertainty + Self.tolerance)
            if clock.uncertainty <= PostgresConnection.serverClockWantedUncertainty {
                #expect(try connection.serverClock() == clock)  // fresh and certain: not measured again
            }
        }
    }

    @Test("carried forward by the monotonic clock, not the wall clock")
    func carriedByTheMonotonicClock() {
        let reading = Date(timeIntervalSince1970: 1_000_000_000)
        let readAt = ContinuousClock.now - .seconds(2)
        let clock = ServerClock(reading: reading, readAt: readAt, uncertainty: 0)
        let elapsed = clock.now().timeIntervalSince(reading)
        let upper = ServerClock.seconds(readAt.duration(to: .now))
        #expect(elapsed >= 2 && elapsed <= upper)
    }

    /// A fresh measurement agrees with this machine's clock to within its own uncertainty.
    func expectFresh(_ clock: ServerClock, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(abs(clock.offset) <= clock.uncertainty + Self.tolerance, "\(clock)", sourceLocation: sourceLocation)
    }

    @Test("measured again when too old, when the local clocks moved apart, or when uncertain and last tried long enough ago")
    func measuredAgain() async throws {
        try await TestDatabase.with(migrated: false) { database throws in
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            let wrong = Date().addingTimeInterval(3_600)
            // Too old: replaced by a fresh measurement.
            connection.measuredClock = ServerClock(reading: wrong, readAt: .now - .seconds(601), uncertainty: 0)
            expectFresh(try connection.serverClock())
            // Uncertain, but tried a moment ago: kept.
            connection.measuredClock = ServerClock(reading: wrong, readAt: .now, uncertainty: 600)
            connection.clockMeasuredAt = .now
            #expect(try connection.serverClock().offset > 3_599)
            // Uncertain and tried long enough ago: measured again, and the fresh one (a round trip
            // far shorter than twenty minutes) is more certain.
            connection.clockMeasuredAt = .now - .seconds(31)
            expectFresh(try connection.serverClock())
            // Certain and fresh, but this machine's wall clock moved an hour since (a step, or a
            // pause the monotonic clock did not count): measured again.
            connection.measuredClock = ServerClock(reading: wrong, readAt: .now, uncertainty: 0,
                                                   localAtRead: Date().addingTimeInterval(-3_600))
            connection.clockMeasuredAt = .now
            expectFresh(try connection.serverClock())
        }
    }
}
