import Foundation
import LedgerDomain
import LedgerFolds
import LedgerPostgres
import LedgerProjections
import LedgerStore
import LedgerTestSupport

// projection_rebuild: a rebuild of the SKAN projection from position 0 over a log of N events
// (LEDGER_BENCH_EVENTS, default 1,000,000), against a raw `COPY (SELECT … FROM events ORDER BY
// position) TO STDOUT` of the same rows in the same run. With LEDGER_BENCH_PROFILE=1 it also
// times the rebuild's parts one by one (on stderr).

/// Events per device stream in the loaded log.
let eventsPerDevice = 100

/// The number of events the projection benchmark loads.
func benchEventCount() -> Int {
    let text = ProcessInfo.processInfo.environment["LEDGER_BENCH_EVENTS"]?.replacingOccurrences(of: "_", with: "")
    return text.flatMap { Int($0) }.map { max(1, $0) } ?? 1_000_000
}

func note(_ text: String) {
    FileHandle.standardError.write(Data("projection_rebuild: \(text)\n".utf8))
}

func seconds(since start: DispatchTime) -> Double {
    Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
}

/// The payloads of a device's history, as the app would report them.
struct DeviceHistory {
    let revenueTemplate: String
    let metadata = Data(#"{"actor":"bench","app_id":"com.example.game"}"#.utf8)

    init() throws {
        let device = DeviceContext(
            platform: .ios, idfv: "21DB6612-09B3-4ECC-84AC-B353B0AF1334", limitAdTracking: true, attStatus: .denied,
            ip: nil, userAgent: nil, osVersion: "17.4.1", appVersion: "3.2.0", bundleID: "com.example.game")
        let revenue = RevenueRecorded(device: device, revenue: try Money(amount: "4.99", currency: CurrencyCode("USD")),
                                      kind: .iap, transactionID: "TXN", productID: "gems_100")
        revenueTemplate = String(decoding: try LedgerJSON.makeEncoder().encode(revenue), as: UTF8.self)
        // The template must decode as the projection will decode it.
        _ = try LedgerJSON.makeDecoder().decode(RevenueRecorded.self, from: Data(revenueTemplate.utf8))
    }

    /// Event `k` (0-based) of device `device`, starting at `start`: registration first, then every
    /// third event revenue (IAP and ad monetization alternating), the others conversion value
    /// updates, three hours apart (so the history spans the p0, p1 and p2 windows).
    func event(_ k: Int, device: Int, start: Date) -> NewEvent {
        let at = start.addingTimeInterval(Double(k) * 3 * 3600)
        if k == 0 {
            return NewEvent(type: SKANRegistered.eventType, data: Data(#"{"skan_version":"4.0"}"#.utf8), metadata: metadata,
                            occurredAt: at)
        }
        if k % 3 == 0 {
            var json = revenueTemplate.replacingOccurrences(of: "\"TXN\"", with: "\"GPA.\(device).\(k)\"")
            if k % 2 == 0 { json = json.replacingOccurrences(of: "\"iap\"", with: "\"ad_monetization\"") }
            return NewEvent(type: RevenueRecorded.eventType, data: Data(json.utf8), metadata: metadata, occurredAt: at)
        }
        return NewEvent(type: SKANConversionValueUpdated.eventType,
                        data: Data(#"{"fine_value":\#(k % 64),"lock_window":false}"#.utf8), metadata: metadata, occurredAt: at)
    }
}

/// Appends `total` events: `total / 100` device streams of 100 events, by two writers, 50 streams
/// per transaction, without waiting for commit flushes (the load is not what is measured).
func loadDeviceLog(conninfo: String, total: Int) throws {
    let history = try DeviceHistory()
    let store = EventStore(pool: PostgresPool(conninfo: conninfo, logger: TestDatabase.quietLogger),
                           logger: TestDatabase.quietLogger)
    let devices = (total + eventsPerDevice - 1) / eventsPerDevice
    let writers = 2
    let started = DispatchTime.now()
    let progress = Progress()
    _ = try timeOnThreads(writers) { writer in
        let connection = try PostgresConnection(conninfo: conninfo, logger: TestDatabase.quietLogger)
        try connection.execute("SET synchronous_commit = off")
        let mine = stride(from: writer, to: devices, by: writers).map { $0 }
        for group in stride(from: 0, to: mine.count, by: 50) {
            try connection.transaction { connection in
                for device in mine[group..<min(group + 50, mine.count)] {
                    let count = min(eventsPerDevice, total - device * eventsPerDevice)
                    let start = Date(timeIntervalSince1970: 1_763_000_000 + Double(device * 37))
                    let events = (0..<count).map { history.event($0, device: device, start: start) }
                    try store.append(events, to: "device-com.example.game/\(device)", expected: .noStream, on: connection)
                }
            }
            let done = progress.add(min(50, mine.count - group))
            if done % 1000 < 50 { note("loaded \(done * eventsPerDevice) of \(total) events") }
        }
    }
    note("loaded \(total) events in \(String(format: "%.1f", seconds(since: started))) s")
}

final class Progress: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func add(_ n: Int) -> Int { lock.withLock { value += n; return value } }
}

/// Waits (up to ten minutes) until the gap-safe horizon has passed every event: transactions
/// anywhere on the server hold it back.
func waitForHorizon(_ connection: PostgresConnection, total: Int) throws {
    let deadline = Date().addingTimeInterval(600)
    while Date() < deadline {
        let readable = try connection.query(
            "SELECT count(*) FROM events WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())"
        ).single().decode(Int.self, at: 0)
        if readable >= total { return }
        Thread.sleep(forTimeInterval: 0.05)
    }
    note("the horizon did not pass every event within ten minutes; measuring anyway")
}

/// The raw read-out the rebuild is compared with: every row of `events` in position order,
/// counted, nothing decoded. Returns rows/s.
func rawReadOut(_ connection: PostgresConnection) throws -> (rows: Int, seconds: Double) {
    let started = DispatchTime.now()
    var bytes = 0
    let rows = try connection.copyOut("""
        COPY (SELECT position, transaction_id, stream_id, stream_version, event_id, event_type, schema_version, data,
                     occurred_at, recorded_at FROM events ORDER BY position) TO STDOUT
        """) { line in bytes &+= line.count }
    return (rows, seconds(since: started))
}

/// The benchmark: load, then alternate `rounds` raw read-outs and rebuilds.
func benchProjectionRebuild(conninfo: String, events total: Int, rounds: Int, profile: Bool) throws -> Measurement {
    try loadDeviceLog(conninfo: conninfo, total: total)
    let connection = try PostgresConnection(conninfo: conninfo, logger: TestDatabase.quietLogger)
    try connection.execute("VACUUM (ANALYZE) events")
    try waitForHorizon(connection, total: total)
    let projection = SKANDeviceProjection(SKANDeviceReducer())
    let rebuilder = ProjectionRebuilder(store: EventStore(pool: PostgresPool(conninfo: conninfo, logger: TestDatabase.quietLogger),
                                                          logger: TestDatabase.quietLogger),
                                        logger: TestDatabase.quietLogger)
    // A first read-out warms the cache, so that both sides read from memory.
    _ = try rawReadOut(connection)
    var rawRows = 0, rawSeconds = 0.0, rebuiltEvents: Int64 = 0, rebuildSeconds = 0.0
    for round in 0..<rounds {
        let raw = try rawReadOut(connection)
        rawRows += raw.rows
        rawSeconds += raw.seconds
        let started = DispatchTime.now()
        let report = try rebuilder.rebuild(projection, on: connection)
        let elapsed = seconds(since: started)
        rebuiltEvents += report.events
        rebuildSeconds += elapsed
        note("round \(round + 1): raw \(raw.rows) rows in \(String(format: "%.2f", raw.seconds)) s; rebuild "
            + "\(report.events) events in \(String(format: "%.2f", elapsed)) s")
    }
    if profile { try profileRebuild(connection, store: rebuilder.store, projection: projection) }
    return Measurement(bench: "projection_rebuild", rate: Double(rebuiltEvents) / rebuildSeconds, unit: "events/s",
                       baselineRate: Double(rawRows) / rawSeconds,
                       baseline: "COPY (SELECT … FROM events ORDER BY position) TO STDOUT of the same \(total) rows")
}

// MARK: Profile

/// Times the stages of a rebuild one by one, each alone, by doing what the rebuild does step by step
/// with its own parts: the chunked scan (`LogScan`: the server's binary COPY and the reading of its
/// rows), the opening of personal fields (those the projection reads, as the rebuild opens them),
/// and the projection's fold, each on one thread; then the write of the folded states into fresh
/// shadow tables as the rebuild makes it (two threads and two sessions), under the rebuild's lock,
/// the tables dropped after. In the rebuild the first three overlap on three threads; their sum
/// here is the CPU a rebuild needs, the largest of them its floor.
func profileRebuild(_ connection: PostgresConnection, store: EventStore, projection: SKANDeviceProjection) throws {
    let chunkSize = 10_000
    var chunks: [[RecordedEvent]] = []
    var total = 0

    // 1. The chunked scan (server, libpq, reading the rows).
    var started = DispatchTime.now()
    var checkpoint = GlobalCheckpoint.start
    while true {
        let chunk = try LogScan.chunk(after: checkpoint, types: projection.eventTypes, limit: chunkSize, on: connection)
        total += chunk.count
        guard let last = chunk.last else { break }
        chunks.append(chunk)
        checkpoint = last.checkpoint
        if chunk.count < chunkSize { break }
    }
    let scan = seconds(since: started)

    // 2. Opening the personal fields.
    started = DispatchTime.now()
    for index in chunks.indices { try store.privacy.reveal(&chunks[index], keeping: projection.personalFieldsRead, on: connection) }
    let open = seconds(since: started)

    // 3. The fold.
    var builder = projection.makeBulkBuilder()
    started = DispatchTime.now()
    for chunk in chunks { try builder.fold(chunk) }
    let fold = seconds(since: started)

    // 4. The write as a rebuild makes it: COPY into fresh shadow tables, the back half of the
    // states on a session of its own. Under the rebuild's lock (shadow tables are a running
    // rebuild's), and the tables are dropped after, however it ends.
    let lockKey = "ledger.rebuild." + projection.name
    guard try connection.query("SELECT pg_try_advisory_lock(hashtextextended(\(lockKey), 0))").single().decode(Bool.self, at: 0)
    else { throw ProjectionError.rebuildInProgress(projection: projection.name) }
    defer { _ = try? connection.execute("SELECT pg_advisory_unlock(hashtextextended(\(lockKey), 0))") }
    func dropShadowTables() throws {
        for table in projection.tableNames {
            try connection.execute("DROP TABLE IF EXISTS \(unescaped: ProjectionTables.shadow.quoted(table))")
        }
    }
    try dropShadowTables()
    defer { try? dropShadowTables() }
    try projection.createTables(.shadow, on: connection)
    started = DispatchTime.now()
    let pool = store.pool
    try connection.transaction { [builder] in try builder.write(to: .shadow, on: $0, sessionsFrom: pool) }
    let write = seconds(since: started)

    func share(_ part: Double) -> String {
        String(format: "%.2f s (%.1f µs/event)", part, part / Double(max(total, 1)) * 1e6)
    }
    note("profile over \(total) events, each stage alone:")
    note("  scan: binary COPY out, chunked, rows read:  \(share(scan))")
    note("  opening personal fields:                   \(share(open))")
    note("  fold:                                      \(share(fold))")
    note("  write (state encoding + COPY in):          \(share(write))")
}
