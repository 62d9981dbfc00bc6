import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import LedgerHTTPTransport
import LedgerPostgres
import LedgerProviders
import LedgerStore
import LedgerTestSupport

// drain: 10,000 Apple AdServices token lookups drained by 1 and by 4 send workers (each one
// `SendWorker.run()`, the loop `ledger worker` runs: its own pool of slots + 2 sessions, its own
// HTTP client, its default 16 slots, LEDGER_BENCH_SLOTS to change) against the loopback fakes over
// real HTTP, next to a bare loop at the same concurrency in the same run: per worker, as many
// tasks as slots, each claiming one row of a plain table with
// FOR UPDATE SKIP LOCKED, make the same HTTP call to the same fake, and delete the row — none of
// the ledger's recording (no cause read, no SendAttempted, no ResponseReceived/SendSucceeded, no
// lease checks). Rounds alternate (ledger, bare, ledger, bare) so drift weighs on both alike; the
// sends are enqueued before each round, outside the timed part.

/// One drain measurement's shape.
struct DrainPlan {
    /// Sends drained per side in all.
    var sends: Int
    /// Worker processes simulated (each its own pool, HTTP client and liveness lock).
    var workers: Int
    /// Tries in flight per worker: `ledger worker`'s default, or LEDGER_BENCH_SLOTS (both sides
    /// at the same concurrency either way).
    var slots = Int(ProcessInfo.processInfo.environment["LEDGER_BENCH_SLOTS"] ?? "") ?? SendWorker.Configuration.defaultSlots
    /// Sends a worker claims and records ahead of a free slot: the worker's default, or
    /// LEDGER_BENCH_PREFETCH (the bare loop has nothing like it: each of its loops claims, calls and
    /// deletes in turn).
    var prefetch = Int(ProcessInfo.processInfo.environment["LEDGER_BENCH_PREFETCH"] ?? "")
    /// Rounds the sends are split into; ledger and bare alternate.
    var rounds = 2
}

/// The plain table the bare loop drains.
let bareSendsSQL = """
    CREATE TABLE IF NOT EXISTS bench_bare_sends (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, token text NOT NULL,
        state text NOT NULL DEFAULT 'pending', claimed_at timestamptz)
    """

func drainNote(_ text: String) {
    FileHandle.standardError.write(Data("drain: \(text)\n".utf8))
}

/// Enqueues `count` Apple AdServices token lookups the way the ledger does — a `FirstOpen` on a
/// device stream of its own and, in the same transaction, its `SendRequested`, queue row and
/// NOTIFY — 250 devices per transaction, on two sessions, without waiting for commit flushes.
func enqueueLedgerSends(conninfo: String, count: Int, tag: String, fakes: FakeProviders) throws {
    fakes.apple.register(tokens: (0..<count).map { Data("token-\(tag)-\($0)".utf8).base64EncodedString() })
    let pool = PostgresPool(conninfo: conninfo, maxConnections: 1, logger: TestDatabase.quietLogger)
    defer { pool.close() }
    let store = EventStore(pool: pool, catalog: .standard, logger: TestDatabase.quietLogger)
    let issued = Date()
    let userAgent = UserAgentParts(appName: "App", appVersion: "1.0", osName: "iOS", osVersion: "17.1", locale: "en_US",
                                   deviceModel: "iPhone15,2", build: "21B74")
    _ = try timeOnThreads(2) { writer in
        let connection = try PostgresConnection(conninfo: conninfo, logger: TestDatabase.quietLogger)
        try connection.execute("SET synchronous_commit = off")
        let mine = Array(stride(from: writer, to: count, by: 2))
        for chunk in stride(from: 0, to: mine.count, by: 250) {
            try connection.transaction { connection in
                for index in mine[chunk..<min(chunk + 250, mine.count)] {
                    let device = "device-bench-\(tag)-\(index)"
                    let open = FirstOpen(
                        appID: try AppID("app1"),
                        device: DeviceContext(platform: .ios, idfv: UUID().uuidString, limitAdTracking: false,
                                              ip: "198.51.100.\(index % 250)", userAgent: userAgent, osVersion: "17.1",
                                              appVersion: "1.0", bundleID: "com.example.app"),
                        adServicesToken: LedgerDomain.AdServicesToken(
                            token: Data("token-\(tag)-\(index)".utf8).base64EncodedString(), issuedAt: issued))
                    let data = try EventCatalog.standard.encode(open)
                    let appended = try store.append([NewEvent(type: FirstOpen.eventType, data: data, occurredAt: issued)],
                                                    to: device, on: connection)
                    let cause = RecordedEvent(
                        position: appended.events[0].position, transactionID: 0, streamID: device, streamVersion: 1,
                        id: appended.events[0].id, type: FirstOpen.eventType, schemaVersion: 1, data: data, metadata: Data(),
                        occurredAt: issued, recordedAt: issued, hash: Data())
                    let request = try Outbox.request(provider: .appleAdServices, kind: .tokenLookup, cause: cause,
                                                     deviceStreamID: try StreamID(device),
                                                     idempotencyKey: "apple:token_lookup:\(cause.id)")
                    _ = try Outbox.enqueue(request, store: store, now: issued, on: connection)
                }
            }
        }
    }
}

/// Fills the bare table with `count` rows, one token each.
func enqueueBareSends(conninfo: String, count: Int, tag: String, fakes: FakeProviders) throws {
    fakes.apple.register(tokens: (1...max(count, 1)).map { Data("bare-\(tag)-\($0)".utf8).base64EncodedString() })
    let connection = try PostgresConnection(conninfo: conninfo, logger: TestDatabase.quietLogger)
    try connection.execute("""
        INSERT INTO bench_bare_sends (token)
        SELECT encode(convert_to('bare-' || \(tag) || '-' || g, 'UTF8'), 'base64') FROM generate_series(1, \(count)) AS g
        """)
    try connection.execute("VACUUM ANALYZE bench_bare_sends")
}

/// Drains the ledger's queue with `plan.workers` `SendWorker.run()` loops; returns the seconds
/// from their start until the queue is empty (every send's outcome committed).
func drainLedger(conninfo: String, plan: DrainPlan, fakes: FakeProviders, expected: Int, tag: String) async throws
    -> (seconds: Double, cpu: (client: Double, server: Double))
{
    let rules = ProviderSendRules(adServices: fakes.appleEndpoint)
    let monitor = try PostgresConnection(conninfo: conninfo, logger: TestDatabase.quietLogger)
    try monitor.execute("VACUUM ANALYZE send_queue")
    let callsBefore = fakes.apple.requestCount
    var parts: [(PostgresPool, HTTPProviderTransport, SendWorker)] = []
    for number in 0..<plan.workers {
        let pool = PostgresPool(conninfo: conninfo, maxConnections: plan.slots + 2, sessionSettings: SendWorker.sessionSettings,
                                logger: TestDatabase.quietLogger)
        let transport = HTTPProviderTransport(logger: TestDatabase.quietLogger)
        let worker = SendWorker(
            store: EventStore(pool: pool, catalog: .standard, logger: TestDatabase.quietLogger), rules: rules,
            transport: transport,
            configuration: .init(workerID: "bench-\(tag)-\(number)", slots: plan.slots, lease: 60, requestTimeout: .seconds(10),
                                 prefetch: plan.prefetch),
            logger: TestDatabase.quietLogger)
        parts.append((pool, transport, worker))
    }
    let cpuBefore = CPUUsage.now()
    let start = ContinuousClock.now
    let running = parts.map { part in Task { try await part.2.run() } }
    // The calls are counted in memory (cheap to watch); then the last outcomes' commits.
    while fakes.apple.requestCount - callsBefore < expected {
        try await Task.sleep(for: .milliseconds(2))
        if ContinuousClock.now - start > .seconds(600) { throw DrainBenchError.stuck("ledger: calls stopped") }
    }
    while try monitor.query("SELECT count(*) FROM send_queue").single().decode(Int.self, at: 0) > 0 {
        try await Task.sleep(for: .milliseconds(2))
        if ContinuousClock.now - start > .seconds(600) { throw DrainBenchError.stuck("ledger: queue not empty") }
    }
    let elapsed = ContinuousClock.now - start
    let cpu = CPUUsage.now().since(cpuBefore)
    for task in running { task.cancel() }
    for task in running { try await task.value }
    for part in parts {
        await part.1.shutdown()
        part.0.close()
    }
    let succeeded = try monitor.query("""
        SELECT count(*) FROM events WHERE event_type = 'SendSucceeded' AND stream_id IN (
            SELECT stream_id FROM events WHERE event_type = 'SendRequested' AND data ->> 'device_stream_id' LIKE \("device-bench-\(tag)-%"))
        """).single().decode(Int.self, at: 0)
    guard succeeded == expected else { throw DrainBenchError.stuck("ledger: \(succeeded) of \(expected) sends succeeded") }
    return (elapsed.timeInterval, cpu)
}

/// Drains the bare table with `plan.workers × plan.slots` claim–call–delete loops; returns seconds.
func drainBare(conninfo: String, plan: DrainPlan, fakes: FakeProviders, expected: Int) async throws
    -> (seconds: Double, cpu: (client: Double, server: Double))
{
    let endpoint = fakes.appleEndpoint
    var parts: [(PostgresPool, HTTPProviderTransport)] = []
    for _ in 0..<plan.workers {
        parts.append((PostgresPool(conninfo: conninfo, maxConnections: plan.slots + 2, logger: TestDatabase.quietLogger),
                      HTTPProviderTransport(logger: TestDatabase.quietLogger)))
    }
    let cpuBefore = CPUUsage.now()
    let start = ContinuousClock.now
    let done = try await withThrowingTaskGroup(of: Int.self) { group in
        for (pool, transport) in parts {
            for _ in 0..<plan.slots {
                group.addTask {
                    var sent = 0
                    while true {
                        let claimed = try await pool.withConnection { connection -> (Int64, String)? in
                            guard let row = try connection.query("""
                                UPDATE bench_bare_sends SET state = 'running', claimed_at = now()
                                WHERE id = (SELECT id FROM bench_bare_sends WHERE state = 'pending' ORDER BY id LIMIT 1
                                            FOR UPDATE SKIP LOCKED)
                                RETURNING id, token
                                """, prepare: true).first else { return nil }
                            return (try row.decode(Int64.self, at: 0), try row.decode(String.self, at: 1))
                        }
                        guard let (id, token) = claimed else { return sent }
                        let request = AdServicesRequestBuilder.attributionRequest(token: try LedgerProviders.AdServicesToken(token),
                                                                                  endpoint: endpoint)
                        let answer = try await transport.send(request, timeout: .seconds(10))
                        guard answer.response.status == 200 else { throw DrainBenchError.stuck("bare: HTTP \(answer.response.status)") }
                        _ = try await pool.withConnection { connection in
                            try connection.execute("DELETE FROM bench_bare_sends WHERE id = \(id)", prepare: true)
                        }
                        sent += 1
                    }
                }
            }
        }
        return try await group.reduce(0, +)
    }
    let elapsed = ContinuousClock.now - start
    let cpu = CPUUsage.now().since(cpuBefore)
    for part in parts {
        await part.1.shutdown()
        part.0.close()
    }
    guard done == expected else { throw DrainBenchError.stuck("bare: \(done) of \(expected) sent") }
    return (elapsed.timeInterval, cpu)
}

enum DrainBenchError: Error, CustomStringConvertible {
    case stuck(String)
    var description: String {
        switch self {
        case .stuck(let why): "drain benchmark: \(why)"
        }
    }
}

/// The drain measurement for `plan`: ledger and bare rounds alternating on one database and one
/// set of fakes.
func benchDrain(conninfo: String, plan: DrainPlan, fakes: FakeProviders) async throws -> Measurement {
    let setup = try PostgresConnection(conninfo: conninfo, logger: TestDatabase.quietLogger)
    try setup.run(script: bareSendsSQL)
    // Warm-up (not timed): connections, prepared statements, the fakes' first answers.
    let warm = 50 * plan.workers
    try enqueueLedgerSends(conninfo: conninfo, count: warm, tag: "warm\(plan.workers)", fakes: fakes)
    _ = try await drainLedger(conninfo: conninfo, plan: plan, fakes: fakes, expected: warm, tag: "warm\(plan.workers)")
    try enqueueBareSends(conninfo: conninfo, count: warm, tag: "warm\(plan.workers)", fakes: fakes)
    _ = try await drainBare(conninfo: conninfo, plan: plan, fakes: fakes, expected: warm)

    let perRound = plan.sends / plan.rounds
    var ledgerSeconds = 0.0
    var bareSeconds = 0.0
    for round in 0..<plan.rounds {
        let tag = "w\(plan.workers)r\(round)"
        try enqueueLedgerSends(conninfo: conninfo, count: perRound, tag: tag, fakes: fakes)
        let ledger = try await drainLedger(conninfo: conninfo, plan: plan, fakes: fakes, expected: perRound, tag: tag)
        try enqueueBareSends(conninfo: conninfo, count: perRound, tag: tag, fakes: fakes)
        let bare = try await drainBare(conninfo: conninfo, plan: plan, fakes: fakes, expected: perRound)
        func perSend(_ seconds: Double) -> String { String(format: "%.2f", seconds * 1000 / Double(perRound)) }
        drainNote("\(plan.workers) worker(s), round \(round): ledger \(Int(Double(perRound) / ledger.seconds)) sends/s "
                  + "(CPU per send: worker \(perSend(ledger.cpu.client)) ms, PostgreSQL \(perSend(ledger.cpu.server)) ms), "
                  + "bare \(Int(Double(perRound) / bare.seconds)) sends/s "
                  + "(CPU per send: loop \(perSend(bare.cpu.client)) ms, PostgreSQL \(perSend(bare.cpu.server)) ms)")
        ledgerSeconds += ledger.seconds
        bareSeconds += bare.seconds
    }
    let total = Double(perRound * plan.rounds)
    return Measurement(
        bench: "drain_\(plan.workers)_worker\(plan.workers == 1 ? "" : "s")", rate: total / ledgerSeconds, unit: "sends/s",
        baselineRate: total / bareSeconds,
        baseline: "\(plan.workers)×\(plan.slots) loops: claim one row of a plain table (UPDATE … FOR UPDATE SKIP LOCKED), "
            + "the same HTTP call to the same fake, DELETE")
}

/// The drain benchmark: 1 and 4 workers (LEDGER_BENCH_WORKERS, e.g. `1`, to run fewer), `sends`
/// each (LEDGER_BENCH_SENDS, default 10,000).
func runDrainBenchmarks() async throws -> [Measurement] {
    let environment = ProcessInfo.processInfo.environment
    let text = environment["LEDGER_BENCH_SENDS"]?.replacingOccurrences(of: "_", with: "")
    let sends = text.flatMap { Int($0) }.map { max(2, $0) } ?? 10_000
    let workerCounts = (environment["LEDGER_BENCH_WORKERS"] ?? "1,4").split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 }
    let database = try TestDatabase.make()
    defer { database.dropNow() }
    let fakes = FakeProviders(logger: TestDatabase.quietLogger)
    try await fakes.start()
    fakes.branch.setRapidRepeatInterval(.zero)
    var results: [Measurement] = []
    do {
        for workers in workerCounts {
            let measurement = try await benchDrain(conninfo: database.conninfo, plan: DrainPlan(sends: sends, workers: workers),
                                                   fakes: fakes)
            emit(measurement)
            results.append(measurement)
        }
    } catch {
        await fakes.stop()
        throw error
    }
    await fakes.stop()
    return results
}
