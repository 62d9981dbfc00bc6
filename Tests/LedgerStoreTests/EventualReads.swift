import Foundation
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import Testing

/// Another store on `database`, as another process would have it (hints of its own), on a pool
/// of `maxConnections`; close its pool when done.
func anotherStore(_ database: TestDatabase.Handle, maxConnections: Int) -> EventStore {
    EventStore(pool: PostgresPool(conninfo: database.conninfo, maxConnections: maxConnections, logger: TestDatabase.quietLogger),
               logger: TestDatabase.quietLogger)
}

/// A small valid event.
func sampleEvent(_ n: Int, type: String = "SessionStarted", id: UUID = UUID(), at: Date = testEpoch) -> NewEvent {
    NewEvent(id: id, type: type, data: Data("{\"n\":\(n),\"note\":\"é\"}".utf8),
             metadata: Data("{\"actor\":\"test\"}".utf8), occurredAt: at.addingTimeInterval(Double(n)))
}

/// The number of rows in `events`, read directly.
func eventCount(_ database: TestDatabase.Handle) throws -> Int {
    let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
    return try connection.query("SELECT count(*) FROM events").single().decode(Int.self, at: 0)
}

/// Seals until the seals cover `count` events in all, waiting for the horizon between tries
/// (it can stand still for a moment while other tests' transactions run). Returns the new seals.
func sealCovering(_ store: EventStore, count: Int64, alreadySealed: Int64 = 0, signedBy key: SealSigningKey? = nil) async throws
    -> [Seal]
{
    var seals: [Seal] = []
    var covered = alreadySealed
    let deadline = ContinuousClock.now + .seconds(60)
    while covered < count, ContinuousClock.now < deadline {
        if let seal = try await store.seal(signedBy: key) {
            seals.append(seal)
            covered += seal.eventCount
        } else {
            try await Task.sleep(for: .milliseconds(10))
        }
    }
    if covered < count { throw HorizonStalled(count: Int(count)) }
    return seals
}

/// Reads the whole global log in batches of `batchSize`, waiting (bounded) until `count` events
/// have been read: an empty batch means "nothing readable yet", not "the end".
func readAllInBatches(_ store: EventStore, count: Int, batchSize: Int) async throws -> [RecordedEvent] {
    var checkpoint = GlobalCheckpoint.start
    var events: [RecordedEvent] = []
    let deadline = ContinuousClock.now + .seconds(60)
    while events.count < count, ContinuousClock.now < deadline {
        let batch = try await store.readAll(after: checkpoint, limit: batchSize)
        if batch.events.isEmpty {
            try await Task.sleep(for: .milliseconds(10))
            continue
        }
        #expect(batch.events.count <= batchSize)
        events += batch.events
        checkpoint = batch.checkpoint
    }
    return events
}

/// One global read (with a filter, as of a point) retried until it returns `count` events: the
/// horizon can stand still for a moment while other tests' transactions run.
func readAllEventually(_ store: EventStore, count: Int, filter: EventFilter = .all, asOf: AsOf? = nil) async throws
    -> [RecordedEvent]
{
    var last: [RecordedEvent] = []
    let deadline = ContinuousClock.now + .seconds(60)
    while ContinuousClock.now < deadline {
        last = try await store.readAll(limit: 10_000, filter: filter, asOf: asOf).events
        if last.count >= count { return last }
        try await Task.sleep(for: .milliseconds(10))
    }
    return last
}
