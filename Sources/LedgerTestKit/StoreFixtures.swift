import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerStore
import LedgerTestSupport

/// The instant test events happen around (2025-11-13 02:13:20 UTC): fixed, so that encodings,
/// hashes and golden texts are the same on every run.
public let testEpoch = Date(timeIntervalSince1970: 1_763_000_000)

/// Runs `body` with an event store on a fresh migrated database, its pool of `maxConnections`
/// closed afterwards. With a `catalog` the store checks every event against it and keeps the
/// catalog's personal fields apart, as the service runs it; without, it takes any type and data
/// (the store's own tests).
public func withStore<T>(
    catalog: EventCatalog? = nil, maxConnections: Int = 8, _ body: (EventStore, TestDatabase.Handle) async throws -> T
) async throws -> T {
    try await TestDatabase.with { database throws in
        let pool = PostgresPool(conninfo: database.conninfo, maxConnections: maxConnections, logger: TestDatabase.quietLogger)
        defer { pool.close() }
        let store = if let catalog {
            EventStore(pool: pool, catalog: catalog, logger: TestDatabase.quietLogger)
        } else {
            EventStore(pool: pool, logger: TestDatabase.quietLogger)
        }
        return try await body(store, database)
    }
}

/// ``withStore(catalog:maxConnections:_:)`` for a test that needs only the store.
public func withStore<T>(
    catalog: EventCatalog? = nil, maxConnections: Int = 8, _ body: (EventStore) async throws -> T
) async throws -> T {
    try await withStore(catalog: catalog, maxConnections: maxConnections) { store, _ in try await body(store) }
}

/// Waits until the gap-safe read horizon has passed every event appended so far, or at least
/// `count` events when given. The horizon is the oldest transaction still running anywhere on
/// the server, so other tests' transactions in flight hold it back for a moment; this waits for
/// that, at most a minute.
/// - Throws: ``HorizonStalled`` when the minute passes first.
public func waitForHorizon(_ store: EventStore, count: Int? = nil) async throws {
    let deadline = ContinuousClock.now + .seconds(60)
    while ContinuousClock.now < deadline {
        let counts = try await store.eventCounts()
        if counts.readable >= count ?? counts.stored { return }
        try await Task.sleep(for: .milliseconds(10))
    }
    throw HorizonStalled(count: count)
}

/// The read horizon did not pass the events a test waited for within its bound.
public struct HorizonStalled: Error {
    /// The events waited for; nil for every event appended.
    public var count: Int?

    /// A stall while waiting for `count` events (nil: all of them).
    public init(count: Int?) { self.count = count }
}
