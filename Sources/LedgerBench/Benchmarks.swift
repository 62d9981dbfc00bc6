import Foundation
import LedgerPostgres
import LedgerStore
import LedgerTestSupport

/// One measurement: the ledger's rate and the baseline's, measured in the same run. The optional
/// fields are written only by the benchmarks that measure them (nil is left out of the JSON).
struct Measurement: Encodable {
    var bench: String
    var rate: Double
    var unit: String
    var baseline_rate: Double
    var ratio: Double
    var baseline: String
    /// Request (`http_append`) or append-to-decision (`pipeline`) latency, median and 99th percentile.
    var p50_ms: Double?
    var p99_ms: Double?
    /// The baseline's request latency (`http_append`).
    var baseline_p50_ms: Double?
    var baseline_p99_ms: Double?
    /// The most sends waiting in the queue at once (`pipeline`).
    var max_queue_depth: Int?
    /// The most facts appended but not yet decided at once (`pipeline`).
    var max_undecided: Int?
    /// The log's size a figure was measured on (`growth`: the large log's, the small one's).
    var events: Int?
    var baseline_events: Int?
    /// Whether a peak RSS covers only the measured work (`growth_rebuild_peak_rss`: true when
    /// `/proc/self/clear_refs` reset the peak before it) or the whole process until then.
    var peak_reset: Bool?

    init(bench: String, rate: Double, unit: String, baselineRate: Double, baseline: String) {
        self.bench = bench
        self.rate = (rate * 10).rounded() / 10
        self.unit = unit
        self.baseline_rate = (baselineRate * 10).rounded() / 10
        self.ratio = baselineRate > 0 ? (rate / baselineRate * 1000).rounded() / 1000 : 0
        self.baseline = baseline
    }
}

/// The bare table plain libpq inserts are measured against: "an equivalent bare table" (issue 3),
/// i.e. the events table's columns, keys and indexes (the reads the issue asks for need them:
/// by stream, in global order, by type, by time) and none of its machinery: no triggers, no
/// checks, no head lookup, no hash chain (the hash is a constant supplied by the client).
let bareTableSQL = """
    CREATE TABLE bare_events (
        position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        transaction_id xid8 NOT NULL DEFAULT pg_current_xact_id(), stream_id text COLLATE "C" NOT NULL,
        stream_version bigint NOT NULL, event_id uuid NOT NULL UNIQUE, event_type text NOT NULL,
        schema_version integer NOT NULL, data jsonb NOT NULL, metadata jsonb NOT NULL,
        occurred_at timestamptz NOT NULL, recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(), hash bytea NOT NULL,
        UNIQUE (stream_id, stream_version)
    );
    CREATE INDEX bare_events_global_order ON bare_events (transaction_id, position);
    CREATE INDEX bare_events_type_order ON bare_events (event_type, transaction_id, position);
    CREATE INDEX bare_events_recorded_at ON bare_events USING brin (recorded_at);
    """

let payload = Data("""
    {"app_id":"com.example.app","platform":"ios","idfv":"21DB6612-09B3-4ECC-84AC-B353B0AF1334","ip":"216.58.194.174",\
    "app_version":"1.2.4","os_version":"17.4","session":{"count":3,"source":"push"}}
    """.utf8)
let metadata = Data(#"{"actor":"bench","app_id":"com.example.app"}"#.utf8)
let hashBytes = Data(repeating: 7, count: 32)

func event(_ n: Int) -> NewEvent {
    NewEvent(type: "SessionStarted", data: payload, metadata: metadata,
             occurredAt: Date(timeIntervalSince1970: 1_763_000_000 + Double(n)))
}

/// Runs `work` on `threads` threads of their own (each with its own session), returns seconds.
func timeOnThreads(_ threads: Int, _ work: @escaping @Sendable (Int) throws -> Void) throws -> Double {
    let group = DispatchGroup()
    let failures = FailureBox()
    let start = DispatchTime.now()
    for thread in 0..<threads {
        group.enter()
        Thread {
            defer { group.leave() }
            do { try work(thread) } catch { failures.record(error) }
        }.start()
    }
    group.wait()
    if let error = failures.first { throw error }
    return Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
}

/// Runs `body` on Swift's concurrency pool and blocks the calling (top-level) thread until it ends.
func runBlocking(_ body: @escaping @Sendable () async throws -> Void) throws {
    let failure = FailureBox()
    let done = DispatchSemaphore(value: 0)
    Task {
        do { try await body() } catch { failure.record(error) }
        done.signal()
    }
    done.wait()
    if let error = failure.first { throw error }
}

final class FailureBox: @unchecked Sendable {
    private let lock = NSLock()
    private var errors: [any Error] = []
    func record(_ error: any Error) { lock.withLock { errors.append(error) } }
    var first: (any Error)? { lock.withLock { errors.first } }
}

/// How one single-event write is made on the measured side of ``benchSingleAppends``: event `n`
/// of a round to `stream`, on the writer's own session.
typealias SingleWrite = @Sendable (_ connection: PostgresConnection, _ stream: String, _ n: Int) throws -> Void

/// The ledger's single-event append: the store's whole path (checks, hint or head read, hash
/// chain, result).
func storeAppend(conninfo: String) -> SingleWrite {
    let store = EventStore(pool: PostgresPool(conninfo: conninfo, logger: TestDatabase.quietLogger),
                           logger: TestDatabase.quietLogger)
    return { connection, stream, n in _ = try store.append([event(n)], to: stream, on: connection) }
}

/// The same row as the baseline's, inserted by plain libpq into the real `events` table, its hash
/// chained in the statement (the database checks every chain, schema/0016): what the table's own
/// rules cost (its domains, partial indexes and the check), with none of the store's work. The
/// ledger's single append can come no nearer the baseline than this.
let eventsTableInsert: SingleWrite = { connection, stream, n in
    // Stream `n % 50` gets every 50th event: versions 1, 2, 3, … per stream.
    try connection.execute(PostgresQuery(sql: """
        INSERT INTO events (stream_id, stream_version, event_id, event_type, schema_version, data, metadata,
                            occurred_at, recorded_at, hash)
        SELECT $1::text, $2::bigint, $3::uuid, 'SessionStarted', 1, $4::jsonb, $5::jsonb, $6::timestamptz, t,
               ledger_event_hash(p.hash, $1::text, $2::bigint, $3::uuid, 'SessionStarted', 1, $4::jsonb, $5::jsonb,
                                 $6::timestamptz, t)
        FROM (SELECT clock_timestamp() AS t) AS clock
        LEFT JOIN events AS p ON p.stream_id = $1::text AND p.stream_version = $2::bigint - 1
        """, binds: [
            .text(stream), .int64(Int64(n / 50 + 1)), .uuid(UUID()),
            .jsonb(String(decoding: payload, as: UTF8.self)), .jsonb(String(decoding: metadata, as: UTF8.self)),
            .timestamptz(Date(timeIntervalSince1970: 1_763_000_000 + Double(n))),
        ]), prepare: true)
}

/// Writes the first event of every stream `benchSingleAppends` (`name`, `writers`, `rounds`)
/// will append to whose number `existing` picks, through a store of its own (another host): the
/// measured store has no hint for them, so its first append to each finds a stream with events.
func seedStreams(conninfo: String, name: String, writers: Int, rounds: Int, existing: (Int) -> Bool) throws {
    let other = EventStore(pool: PostgresPool(conninfo: conninfo, logger: TestDatabase.quietLogger),
                           logger: TestDatabase.quietLogger)
    let connection = try PostgresConnection(conninfo: conninfo, logger: TestDatabase.quietLogger)
    for round in 0..<rounds {
        for writer in 0..<writers {
            for stream in 0..<50 where existing(stream) {
                try other.append([event(stream)], to: "device-bench-\(name)-\(writers)w\(writer)-r\(round)-d\(stream)",
                                 on: connection)
            }
        }
    }
}

/// Single-event durable writes (one commit each) by `writers` concurrent writers, each to
/// streams of its own, made by `write` (`name`), against single-row autocommit INSERTs into the
/// bare table.
func benchSingleAppends(conninfo: String, name: String = "append_single", writers: Int, perWriter: Int,
                        rounds: Int = 5, write: @escaping SingleWrite) throws -> Measurement {
    let perRound = perWriter / rounds
    var ledgerSeconds = 0.0
    var rawSeconds = 0.0
    // CPU per side: the writer threads' and (with one writer) PostgreSQL's.
    let ledgerCPU = SideCPU(), bareCPU = SideCPU()
    // Rounds alternate so that the disk's drifting flush speed weighs on both sides alike.
    for round in 0..<rounds {
        ledgerSeconds += try timeOnThreads(writers) { writer in
            let connection = try PostgresConnection(conninfo: conninfo, logger: TestDatabase.quietLogger)
            try ledgerCPU.measure(server: writers == 1, backendPID: connection.backendPID) {
                for n in 0..<perRound {
                    try write(connection, "device-bench-\(name)-\(writers)w\(writer)-r\(round)-d\(n % 50)", n)
                }
            }
        }
        rawSeconds += try timeOnThreads(writers) { writer in
            let connection = try PostgresConnection(conninfo: conninfo, logger: TestDatabase.quietLogger)
            try bareCPU.measure(server: writers == 1, backendPID: connection.backendPID) {
                for n in 0..<perRound {
                    try connection.execute("""
                        INSERT INTO bare_events (stream_id, stream_version, event_id, event_type, schema_version, data,
                                                 metadata, occurred_at, hash)
                        VALUES (\("device-bench-\(name)-\(writers)w\(writer)-r\(round)-d\(n % 50)"), \(Int64(n)), \(UUID()), \("SessionStarted"),
                                \(1), \(PostgresJSONB(String(decoding: payload, as: UTF8.self))),
                                \(PostgresJSONB(String(decoding: metadata, as: UTF8.self))),
                                \(Date(timeIntervalSince1970: 1_763_000_000 + Double(n))), \(hashBytes))
                        """, prepare: true)
                }
            }
        }
    }
    let total = Double(writers * perRound * rounds)
    func micro(_ box: CPUTimeBox) -> Int { Int(box.total / total * 1e6) }
    // Wall time per write as each writer sees it (the writers run side by side); CPU per event.
    FileHandle.standardError.write(Data(("\(name)_\(writers): wall µs per write and writer, ledger \(Int(ledgerSeconds / total * 1e6 * Double(writers))), "
        + "bare \(Int(rawSeconds / total * 1e6 * Double(writers))); per event, client CPU µs ledger \(micro(ledgerCPU.client)), bare \(micro(bareCPU.client))"
        + (writers == 1 ? "; PostgreSQL CPU µs ledger \(micro(ledgerCPU.server)), bare \(micro(bareCPU.server))"
                          + " (the writer's backend: ledger \(micro(ledgerCPU.backend)), bare \(micro(bareCPU.backend)))" : "") + "\n").utf8))
    return Measurement(bench: "\(name)_\(writers)_writer\(writers == 1 ? "" : "s")", rate: total / ledgerSeconds,
                       unit: "events/s", baselineRate: total / rawSeconds,
                       baseline: "single-row INSERT commits into a bare table (PQexecParams, prepared)")
}

/// Batches of `batchSize` events per append against COPY of the same rows into the bare table.
func benchBatchedAppends(conninfo: String, batches: Int, batchSize: Int, rounds: Int = 5) throws -> Measurement {
    let store = EventStore(pool: PostgresPool(conninfo: conninfo, logger: TestDatabase.quietLogger),
                           logger: TestDatabase.quietLogger)
    let perRound = batches / rounds
    var ledgerSeconds = 0.0
    var rawSeconds = 0.0
    let columns = ["stream_id", "stream_version", "event_id", "event_type", "schema_version", "data", "metadata",
                   "occurred_at", "hash"]
    // CPU per side: this thread's and PostgreSQL's.
    let ledgerCPU = SideCPU(), bareCPU = SideCPU()
    for round in 0..<rounds {
        ledgerSeconds += try timeOnThreads(1) { _ in
            let connection = try PostgresConnection(conninfo: conninfo, logger: TestDatabase.quietLogger)
            try ledgerCPU.measure {
                for batch in 0..<perRound {
                    let events = (0..<batchSize).map { event(batch * batchSize + $0) }
                    try store.append(events, to: "device-bench-batch-\(round)-\(batch)", on: connection)
                }
            }
        }
        rawSeconds += try timeOnThreads(1) { _ in
            let raw = try PostgresConnection(conninfo: conninfo, logger: TestDatabase.quietLogger)
            try bareCPU.measure {
                for batch in 0..<perRound {
                    let rows = (0..<batchSize).map { n -> [PostgresValue] in
                        [.text("device-bench-copy-\(round)-\(batch)"), .int64(Int64(n + 1)), .uuid(UUID()),
                         .text("SessionStarted"), .int32(1), .jsonb(String(decoding: payload, as: UTF8.self)),
                         .jsonb(String(decoding: metadata, as: UTF8.self)),
                         .timestamptz(Date(timeIntervalSince1970: 1_763_000_000 + Double(n))), .bytea(hashBytes)]
                    }
                    try raw.copyFrom(table: "bare_events", columns: columns, rows: rows)
                }
            }
        }
    }
    let total = Double(perRound * rounds * batchSize)
    func micro(_ seconds: Double) -> String { String(format: "%.1f", seconds / total * 1e6) }
    FileHandle.standardError.write(Data(("append_batch_\(batchSize): per event, wall µs ledger \(micro(ledgerSeconds)), "
        + "bare \(micro(rawSeconds)); client CPU µs ledger \(micro(ledgerCPU.client.total)), "
        + "bare \(micro(bareCPU.client.total)); PostgreSQL CPU µs ledger \(micro(ledgerCPU.server.total)), bare \(micro(bareCPU.server.total))\n").utf8))
    return Measurement(bench: "append_batch_\(batchSize)", rate: total / ledgerSeconds, unit: "events/s",
                       baselineRate: total / rawSeconds, baseline: "COPY of \(batchSize) rows into a bare table, one commit each")
}
