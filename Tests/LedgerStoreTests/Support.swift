import Foundation
import LedgerPostgres
import LedgerStore
import LedgerTestSupport

/// Runs `body` with an event store on a fresh migrated database.
func withStore<T>(_ body: (EventStore, TestDatabase.Handle) async throws -> T) async throws -> T {
    try await TestDatabase.with { database throws in
        let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 8, logger: TestDatabase.quietLogger)
        defer { pool.close() }
        return try await body(EventStore(pool: pool, logger: TestDatabase.quietLogger), database)
    }
}

/// A small valid event.
func sampleEvent(_ n: Int, type: String = "SessionStarted", id: UUID = UUID(), at: Date = Date(timeIntervalSince1970: 1_763_000_000))
    -> NewEvent
{
    NewEvent(id: id, type: type, data: Data("{\"n\":\(n),\"note\":\"é\"}".utf8),
             metadata: Data("{\"actor\":\"test\"}".utf8), occurredAt: at.addingTimeInterval(Double(n)))
}

/// The number of rows in `events`, read directly.
func eventCount(_ database: TestDatabase.Handle) throws -> Int {
    let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
    return try connection.query("SELECT count(*) FROM events").single().decode(Int.self, at: 0)
}

/// Waits until the gap-safe horizon has passed `count` events. The horizon is the oldest
/// transaction still running anywhere on the server, so other tests' appends in flight hold it
/// back for a moment; this waits for that condition, with a bound.
func waitForHorizon(_ store: EventStore, count: Int) async throws {
    for _ in 0..<1000 {
        let readable = try await store.pool.query(
            "SELECT count(*) FROM events WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())"
        ).single().decode(Int.self, at: 0)
        if readable >= count { return }
        try await Task.sleep(for: .milliseconds(10))
    }
    throw HorizonStalled(count: count)
}

struct HorizonStalled: Error { var count: Int }
