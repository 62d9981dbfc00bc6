import Foundation
import LedgerPostgres
import LedgerTestSupport

// ledger-bench [NAME…] — the ledger's benchmarks, each printed as one JSON line:
//   {"bench": …, "rate": …, "unit": …, "baseline_rate": …, "ratio": …, "baseline": …}
// (some add optional fields: latency quantiles, queue depth, log sizes; see Measurement).
// Run in release mode: swift run -c release ledger-bench [append_single|append_mixed|append_batch|projection_rebuild|skan_verify|aak_verify|event_encode|drain|append_encrypted|
//   http_append|growth|pipeline]
// Each run uses a fresh database of the private cluster (or of LEDGER_DATABASE_URL's server).
// projection_rebuild loads LEDGER_BENCH_EVENTS events (default 1,000,000) into a database of its
// own first; LEDGER_BENCH_ROUNDS (default 2) rounds alternate; LEDGER_BENCH_PROFILE=1 adds a
// breakdown of the rebuild's time on stderr.

let selected = CommandLine.arguments.dropFirst().filter { !$0.hasPrefix("-") }
func wanted(_ name: String) -> Bool { selected.isEmpty || selected.contains { name.hasPrefix($0) } }

func emit(_ measurement: Measurement) {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    let line = (try? encoder.encode(measurement)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

do {
    let database = try TestDatabase.make()
    defer { database.dropNow() }
    let setup = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
    try setup.run(script: bareTableSQL)
    if wanted("append_single") {
        // Twenty alternating rounds, each as before (a new session per writer, 50 new streams),
        // four times the events: with five rounds, one run's ratio strayed ± 0.05 from the next.
        let append = storeAppend(conninfo: database.conninfo)
        emit(try benchSingleAppends(conninfo: database.conninfo, writers: 1, perWriter: 12_000, rounds: 20, write: append))
        emit(try benchSingleAppends(conninfo: database.conninfo, writers: 4, perWriter: 8_000, rounds: 20, write: append))
        // The ceiling: the same rows into the events table by plain libpq (its rules, no store).
        emit(try benchSingleAppends(conninfo: database.conninfo, name: "append_single_events_table", writers: 1,
                                    perWriter: 12_000, rounds: 20, write: eventsTableInsert))
        emit(try benchSingleAppends(conninfo: database.conninfo, name: "append_single_events_table", writers: 4,
                                    perWriter: 8_000, rounds: 20, write: eventsTableInsert))
    }
    if wanted("append_mixed") {
        // As append_single, but one in four of each round's 50 streams per writer (every fourth)
        // already has an event, written by another store: the store's first append to each finds
        // a stream with events it has no hint for.
        let append = storeAppend(conninfo: database.conninfo)
        for (writers, perWriter) in [(1, 6_000), (4, 4_000)] {
            try seedStreams(conninfo: database.conninfo, name: "append_mixed", writers: writers, rounds: 20,
                            existing: { $0 % 4 == 0 })
            emit(try benchSingleAppends(conninfo: database.conninfo, name: "append_mixed", writers: writers,
                                        perWriter: perWriter, rounds: 20, write: append))
        }
    }
    if wanted("append_batch") {
        emit(try benchBatchedAppends(conninfo: database.conninfo, batches: 500, batchSize: 100))
    }
    if wanted("event_encode") {
        emit(try benchEventEncoding())  // the catalog's encoder (issue 6's worker): no database involved
    }
    if wanted("skan_verify") {
        emit(try benchSKANVerify())  // SKAN postbacks (issue 10): no database involved
    }
    if wanted("aak_verify") {
        // AdAttributionKit postbacks: no database involved. LEDGER_BENCH_VERIFY_PER_ROUND: postbacks
        // per round and side (default 3,000; a small number checks the benchmark runs).
        let perRound = ProcessInfo.processInfo.environment["LEDGER_BENCH_VERIFY_PER_ROUND"].flatMap { Int($0) }.map { max(1, $0) }
        emit(try benchAAKVerify(perRound: perRound ?? 3000))
    }
    if wanted("projection_rebuild") {
        let environment = ProcessInfo.processInfo.environment
        let own = try TestDatabase.make()
        defer { own.dropNow() }
        emit(try benchProjectionRebuild(
            conninfo: own.conninfo, events: benchEventCount(),
            rounds: environment["LEDGER_BENCH_ROUNDS"].flatMap { Int($0) }.map { max(1, $0) } ?? 2,
            profile: environment["LEDGER_BENCH_PROFILE"] == "1"))
    }
    // append_encrypted (issue 9): appends with personal fields sealed per device vs sealing off.
    if wanted("append_encrypted") {
        // LEDGER_BENCH_DEVICES: devices per round (default 50, so a device's first event, which
        // makes its data key, is one append in twelve).
        emit(try benchEncryptedAppends(conninfo: database.conninfo,
                                       devices: ProcessInfo.processInfo.environment["LEDGER_BENCH_DEVICES"].flatMap { Int($0) }.map { max(1, $0) } ?? 50))
    }
    // drain (issue 6): 10,000 sends by 1 and 4 workers against the loopback fakes, vs a bare loop.
    if wanted("drain") {
        try runBlocking { _ = try await runDrainBenchmarks() }
    }
    // http_append: facts through the HTTP API from 8 keep-alive connections, batches of 1 and 100,
    // vs a bare Hummingbird route inserting the same rows. LEDGER_BENCH_HTTP_FACTS_1 and
    // LEDGER_BENCH_HTTP_FACTS_100: facts per side (16,000 and 80,000); LEDGER_BENCH_HTTP_SENDS=1:
    // the app enables every provider, so each fact also requests its sends.
    if wanted("http_append") {
        let conninfo = database.conninfo
        try runBlocking { try await runHTTPAppendBenchmarks(conninfo: conninfo) }
    }
    // growth: append_single, a device history read and the SKAN rebuild on a log of
    // LEDGER_BENCH_GROWTH_LARGE events (10,000,000) against LEDGER_BENCH_GROWTH_SMALL (100,000),
    // both loaded by COPY; and the large rebuild's peak RSS.
    if wanted("growth") {
        try runGrowthBenchmarks()
    }
    // growth_drop: drops the logs LEDGER_BENCH_GROWTH_KEEP=1 kept (named only, never by default).
    if selected.contains("growth_drop") {
        for name in try TestDatabase.dropKept(labelPrefix: "growth_") { print("dropped \(name)") }
    }
    // pipeline: FirstOpen → its Apple token lookup → SendWorker → the decider's decision,
    // open loop at LEDGER_BENCH_PIPELINE_RATE facts/s (500) for LEDGER_BENCH_PIPELINE_SECONDS (60).
    if wanted("pipeline") {
        try runBlocking { try await runPipelineBenchmark() }
    }
} catch {
    FileHandle.standardError.write(Data("ledger-bench: \(error)\n".utf8))
    exit(1)
}
