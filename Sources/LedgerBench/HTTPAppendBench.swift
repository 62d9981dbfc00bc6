import AsyncHTTPClient
import AttributionLedger
import Foundation
import Hummingbird
import LedgerDecisions
import LedgerHTTPAPI
import LedgerPostgres
import LedgerTestSupport
import Logging
import NIOCore
import NIOHTTP1

// http_append: device facts per second through the ledger's HTTP API (`LedgerHTTPServer` in this
// process, configured as the HTTP API's tests configure it: one app, one key, loopback, a pool of
// `ledger serve`'s default 8 sessions), from 8 keep-alive client connections (AsyncHTTPClient), in
// batches of 1 and of 100 facts per request. The app enables no provider, so a fact is one row
// on both sides; with LEDGER_BENCH_HTTP_SENDS=1 it enables all four, as an app without settings
// does, and each session also requests its Google, Branch and Singular sends in its transaction. Baseline: a bare Hummingbird route in the same
// process, on a pool of its own as large, that decodes the same body as JSON and inserts each fact
// as a row of `bare_events` with one plain prepared INSERT (autocommit for one fact, one
// transaction for a batch, as the API records a batch all or nothing). Rounds of the two sides
// alternate; every body is built before its round, so the timed part is the requests alone.

/// The app both servers are asked to write for, and the key the ledger's server accepts for it.
private let httpBenchApp = "com.example.game"
private let httpBenchKey = "bench-key-not-a-real-credential"

/// The device of a `SessionStarted` fact, as an app backend sends it (every field the catalog
/// requires of a session; the ledger's store seals the personal ones, as it does by default).
private let httpBenchDeviceJSON = """
    {"device": {"platform": "ios", "idfv": "21DB6612-09B3-4ECC-84AC-B353B0AF1334", "limit_ad_tracking": false, \
    "att_status": "authorized", "ip": "203.0.113.7", "os_version": "17.4.1", "app_version": "3.2.0", \
    "bundle_id": "com.example.game", "user_agent": {"app_name": "Game", "app_version": "3.2.0", "os_name": "iOS", \
    "os_version": "17.4.1", "locale": "en_US", "device_model": "iPhone15,2", "build": "21E236"}}}
    """

/// The shape of one `http_append` measurement.
struct HTTPAppendPlan {
    /// Facts per request.
    var batch: Int
    /// Facts sent per side in all (split over rounds and connections).
    var facts: Int
    /// Client connections, each sending its next request when the previous one is answered.
    var connections = 8
    /// Rounds per side; the sides alternate.
    var rounds = 4
    /// Whether the app enables the providers (every fact then requests its sends).
    var sends = false

    /// Requests per connection and round (at least one).
    var requestsPerConnection: Int { max(1, facts / batch / connections / rounds) }
}

/// Which server a round of requests goes to.
private enum HTTPAppendSide: String {
    case ledger, bare
}

/// What a side's rounds came to: facts, seconds, each request's latency in seconds.
private struct HTTPAppendTally {
    var facts = 0
    var seconds = 0.0
    var latencies: [Double] = []
    /// CPU seconds of this process (server, client and all) and of PostgreSQL during the rounds.
    var cpu: (client: Double, server: Double) = (0, 0)

    /// Microseconds of CPU per fact: this process's, PostgreSQL's.
    var microsecondsPerFact: (client: Int, server: Int) {
        guard facts > 0 else { return (0, 0) }
        return (Int(cpu.client / Double(facts) * 1e6), Int(cpu.server / Double(facts) * 1e6))
    }

    var rate: Double { seconds > 0 ? Double(facts) / seconds : 0 }

    /// The `q` quantile (0…1) of the latencies, in milliseconds.
    func quantileMilliseconds(_ q: Double) -> Double {
        let sorted = latencies.sorted()
        guard !sorted.isEmpty else { return 0 }
        let index = min(sorted.count - 1, Int((Double(sorted.count) * q).rounded(.down)))
        return (sorted[index] * 1e5).rounded() / 100
    }
}

/// A failure of the benchmark itself (not of what it measures).
enum HTTPAppendBenchError: Error, CustomStringConvertible {
    case status(side: String, code: UInt)
    case noPort(String)

    var description: String {
        switch self {
        case .status(let side, let code): "http_append: the \(side) server answered HTTP \(code)"
        case .noPort(let side): "http_append: the \(side) server did not start"
        }
    }
}

/// Hands out versions for `bare_events` rows: one counter for every stream, so no two rows share
/// a (stream, version) key and the bare route reads nothing before it inserts.
private final class BareVersions: @unchecked Sendable {
    private let lock = NSLock()
    private var next: Int64 = 1_000_000_000

    func take(_ count: Int) -> Int64 {
        lock.withLock {
            defer { next += Int64(count) }
            return next
        }
    }
}

/// One fact as the bare route inserts it.
private struct BareRow: Sendable {
    var stream: String
    var id: String
    var type: String
    var data: String
    var occurredAt: String
}

/// The bare route: `POST /bare/events` with the ledger's body, decoded with `JSONSerialization`,
/// one prepared INSERT per fact on `pool`.
private func makeBareRouter(pool: PostgresPool) -> Router<BasicRequestContext> {
    let versions = BareVersions()
    let metadata = #"{"actor":"http-api","app_id":"\#(httpBenchApp)"}"#
    let router = Router(context: BasicRequestContext.self)
    router.post("/bare/events") { request, _ -> Response in
        let body = try await request.body.collect(upTo: 4 * 1_048_576)
        let object = try JSONSerialization.jsonObject(with: Data(body.readableBytesView))
        guard let events = (object as? [String: Any])?["events"] as? [[String: Any]], !events.isEmpty else {
            throw HTTPError(.badRequest)
        }
        let rows = try events.map { event -> BareRow in
            guard let id = event["id"] as? String, let type = event["type"] as? String, let device = event["device_id"] as? String,
                  let occurredAt = event["occurred_at"] as? String, let data = event["data"]
            else { throw HTTPError(.badRequest) }
            let text = String(decoding: try JSONSerialization.data(withJSONObject: data), as: UTF8.self)
            return BareRow(stream: "device-\(httpBenchApp)/\(device)", id: id, type: type, data: text, occurredAt: occurredAt)
        }
        let first = versions.take(rows.count)
        let insert: @Sendable (PostgresConnection) throws -> Void = { connection in
            for (offset, row) in rows.enumerated() {
                try connection.execute(PostgresQuery(sql: """
                    INSERT INTO bare_events (stream_id, stream_version, event_id, event_type, schema_version, data, metadata,
                                             occurred_at, hash)
                    VALUES ($1, $2, $3::uuid, $4, 1, $5::jsonb, $6::jsonb, $7::timestamptz, $8)
                    """, binds: [.text(row.stream), .int64(first + Int64(offset)), .text(row.id), .text(row.type),
                                 .text(row.data), .text(metadata), .text(row.occurredAt), .bytea(hashBytes)]), prepare: true)
            }
        }
        // One fact: autocommit, one round trip. A batch: all or nothing, as the API records it.
        if rows.count == 1 {
            try await pool.withConnection(insert)
        } else {
            try await pool.withTransaction(insert)
        }
        return Response(status: .ok, headers: [.contentType: "application/json"],
                        body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"appended":\#(rows.count)}"#)))
    }
    return router
}

/// The request bodies of one round of one side: per connection, its requests in order, each
/// `plan.batch` new facts on 50 devices of the connection's own (device `n % 50` gets fact `n`).
private func httpAppendBodies(tag: String, plan: HTTPAppendPlan) -> [[ByteBuffer]] {
    (0..<plan.connections).map { connection in
        (0..<plan.requestsPerConnection).map { request in
            let facts = (0..<plan.batch).map { k -> String in
                let n = request * plan.batch + k
                return #"{"id":"\#(UUID().uuidString)","type":"SessionStarted","device_id":"bench-\#(tag)-c\#(connection)-d\#(n % 50)","#
                    + #""occurred_at":"2026-11-23T10:00:00.000000Z","data":\#(httpBenchDeviceJSON)}"#
            }
            return ByteBuffer(string: #"{"events":["# + facts.joined(separator: ",") + "]}")
        }
    }
}

/// Sends every connection's bodies in turn to `url` (the connections side by side); returns the
/// round's seconds and every request's latency.
private func runHTTPAppendRound(client: HTTPClient, url: String, side: HTTPAppendSide, bodies: [[ByteBuffer]]) async throws
    -> (seconds: Double, latencies: [Double])
{
    let start = ContinuousClock.now
    let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
        for requests in bodies {
            group.addTask {
                var latencies: [Double] = []
                latencies.reserveCapacity(requests.count)
                for body in requests {
                    var request = HTTPClientRequest(url: url)
                    request.method = .POST
                    request.headers.add(name: "Authorization", value: "Bearer \(httpBenchKey)")
                    request.headers.add(name: "Content-Type", value: "application/json")
                    request.body = .bytes(body)
                    let sent = ContinuousClock.now
                    let response = try await client.execute(request, timeout: .seconds(60))
                    _ = try await response.body.collect(upTo: 16 * 1_048_576)
                    guard response.status == .ok else { throw HTTPAppendBenchError.status(side: side.rawValue, code: response.status.code) }
                    latencies.append((ContinuousClock.now - sent).timeInterval)
                }
                return latencies
            }
        }
        return try await group.reduce(into: []) { $0 += $1 }
    }
    return ((ContinuousClock.now - start).timeInterval, latencies)
}

/// Starts both servers on loopback over `conninfo`, runs `body` with their append URLs, stops them.
private func withHTTPAppendServers<T: Sendable>(conninfo: String, sends: Bool,
                                                _ body: (_ ledgerURL: String, _ bareURL: String) async throws -> T) async throws -> T {
    let quiet = TestDatabase.quietLogger
    // The servers' own logs: critical only, so that stopping them by cancellation (which
    // Hummingbird reports as an error on each open connection) stays off stderr.
    var silent = Logger(label: "ledger-bench.http")
    silent.logLevel = .critical
    let ledgerPool = PostgresPool(conninfo: conninfo, maxConnections: 8, logger: quiet)
    let barePool = PostgresPool(conninfo: conninfo, maxConnections: 8, logger: quiet)
    defer {
        ledgerPool.close()
        barePool.close()
    }
    let keys = try APIKeys(digests: [httpBenchApp: [APIKeys.digest(of: httpBenchKey)]])
    let settings = sends ? AttributionSettings() : AttributionSettings(defaults: AppAttributionSettings(providers: []))
    let server = LedgerHTTPServer(ledger: AttributionLedger(pool: ledgerPool, settings: settings, logger: quiet), keys: keys,
                                  configuration: LedgerHTTPConfiguration(host: "127.0.0.1", port: 0), logger: silent)
    let (ports, continuation) = AsyncStream<Int>.makeStream()
    let ledgerTask = Task { try await server.runUntilCancelled { port in continuation.yield(port) } }
    defer { ledgerTask.cancel() }
    var iterator = ports.makeAsyncIterator()
    guard let ledgerPort = await iterator.next() else { throw HTTPAppendBenchError.noPort("ledger") }
    let (barePorts, bareContinuation) = AsyncStream<Int>.makeStream()
    let bareApplication = Application(
        router: makeBareRouter(pool: barePool),
        configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0), serverName: "bare"),
        onServerRunning: { channel in bareContinuation.yield(channel.localAddress?.port ?? 0) }, logger: silent)
    let bareTask = Task { try await bareApplication.run() }
    defer { bareTask.cancel() }
    var bareIterator = barePorts.makeAsyncIterator()
    guard let barePort = await bareIterator.next() else { throw HTTPAppendBenchError.noPort("bare") }
    return try await body("http://127.0.0.1:\(ledgerPort)/v1/apps/\(httpBenchApp)/events", "http://127.0.0.1:\(barePort)/bare/events")
}

/// One `http_append_<batch>` measurement: a warm-up round per side (not timed), then `plan.rounds`
/// rounds of each side in turn.
func benchHTTPAppend(conninfo: String, plan: HTTPAppendPlan) async throws -> Measurement {
    var configuration = HTTPClient.Configuration()
    configuration.connectionPool = HTTPClient.Configuration.ConnectionPool(
        idleTimeout: .seconds(120), concurrentHTTP1ConnectionsPerHostSoftLimit: plan.connections)
    configuration.tracing.tracer = nil
    let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    do {
        let measurement = try await withHTTPAppendServers(conninfo: conninfo, sends: plan.sends) { ledgerURL, bareURL in
            // Four requests per connection and side: sessions, prepared statements, keep-alive.
            var warm = plan
            warm.rounds = 1
            warm.facts = plan.batch * plan.connections * 4
            for side in [HTTPAppendSide.ledger, .bare] {
                let url = side == .ledger ? ledgerURL : bareURL
                _ = try await runHTTPAppendRound(client: client, url: url, side: side,
                                                 bodies: httpAppendBodies(tag: "\(side)-warm\(plan.batch)", plan: warm))
            }
            var tallies: [HTTPAppendSide: HTTPAppendTally] = [.ledger: HTTPAppendTally(), .bare: HTTPAppendTally()]
            for round in 0..<plan.rounds {
                for side in [HTTPAppendSide.ledger, .bare] {
                    let bodies = httpAppendBodies(tag: "\(side)-b\(plan.batch)r\(round)", plan: plan)
                    let before = CPUUsage.now()
                    let result = try await runHTTPAppendRound(client: client, url: side == .ledger ? ledgerURL : bareURL, side: side,
                                                              bodies: bodies)
                    let cpu = CPUUsage.now().since(before)
                    tallies[side]!.facts += plan.connections * plan.requestsPerConnection * plan.batch
                    tallies[side]!.seconds += result.seconds
                    tallies[side]!.latencies += result.latencies
                    tallies[side]!.cpu.client += cpu.client
                    tallies[side]!.cpu.server += cpu.server
                }
                let ledger = tallies[.ledger]!, bare = tallies[.bare]!
                FileHandle.standardError.write(Data(("http_append_\(plan.batch): after round \(round + 1), ledger "
                    + "\(Int(ledger.rate)) facts/s, bare \(Int(bare.rate)) facts/s (CPU per fact: ledger's process "
                    + "\(ledger.microsecondsPerFact.client) µs, PostgreSQL \(ledger.microsecondsPerFact.server) µs; bare's "
                    + "\(bare.microsecondsPerFact.client) µs, \(bare.microsecondsPerFact.server) µs)\n").utf8))
            }
            let ledger = tallies[.ledger]!, bare = tallies[.bare]!
            var measurement = Measurement(
                bench: "http_append_\(plan.batch)", rate: ledger.rate, unit: "facts/s", baselineRate: bare.rate,
                baseline: "a bare Hummingbird route in the same process: the same body decoded as JSON, one prepared INSERT "
                    + "per fact into bare_events (\(plan.batch == 1 ? "autocommit" : "one transaction per request")), "
                    + "\(plan.connections) keep-alive connections"
                    + (plan.sends ? "; the ledger's facts also request 3 sends each" : ""))
            measurement.p50_ms = ledger.quantileMilliseconds(0.5)
            measurement.p99_ms = ledger.quantileMilliseconds(0.99)
            measurement.baseline_p50_ms = bare.quantileMilliseconds(0.5)
            measurement.baseline_p99_ms = bare.quantileMilliseconds(0.99)
            return measurement
        }
        try await client.shutdown()
        return measurement
    } catch {
        try? await client.shutdown()
        throw error
    }
}

/// The `http_append` benchmark: batches of 1 and of 100. LEDGER_BENCH_HTTP_FACTS_1 and
/// LEDGER_BENCH_HTTP_FACTS_100 set the facts per side (16,000 and 80,000), LEDGER_BENCH_HTTP_SENDS=1
/// enables the app's providers.
func runHTTPAppendBenchmarks(conninfo: String) async throws {
    let environment = ProcessInfo.processInfo.environment
    func count(_ name: String, _ fallback: Int) -> Int {
        environment[name].flatMap { Int($0.replacingOccurrences(of: "_", with: "")) }.map { max(1, $0) } ?? fallback
    }
    let sends = environment["LEDGER_BENCH_HTTP_SENDS"] == "1"
    emit(try await benchHTTPAppend(conninfo: conninfo, plan: HTTPAppendPlan(batch: 1, facts: count("LEDGER_BENCH_HTTP_FACTS_1", 16_000),
                                                                            sends: sends)))
    emit(try await benchHTTPAppend(conninfo: conninfo, plan: HTTPAppendPlan(batch: 100,
                                                                            facts: count("LEDGER_BENCH_HTTP_FACTS_100", 80_000),
                                                                            sends: sends)))
}
