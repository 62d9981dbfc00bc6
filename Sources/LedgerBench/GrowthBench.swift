import Foundation
import LedgerDomain
import LedgerFolds
import LedgerPostgres
import LedgerProjections
import LedgerStore
import LedgerTestSupport

// growth: how the cost of three operations grows with the log. Two databases are loaded side by
// side, a small log (LEDGER_BENCH_GROWTH_SMALL events, 100,000) and a large one
// (LEDGER_BENCH_GROWTH_LARGE, 10,000,000), of 20-event device histories, by COPY into `events`
// itself (its indexes and its check of each event, which computes the hash chain). Then, on each:
// single appends by one writer (as append_single: a new session per round, 50 new streams), reads
// of one device's history (`EventStore.readHistory`, ~20 events, devices drawn at random), rounds
// alternating between the two logs; and a rebuild of the SKAN projection from position 0, small
// first. Each figure is large / small; the large rebuild's peak RSS is a figure of its own.
// With LEDGER_BENCH_GROWTH_KEEP=1 the two logs are kept between runs (databases
// `ledger_kept_growth_<events>_…`, loaded once, dropped by `ledger-bench growth_drop`): a run
// then measures in minutes, where loading 10 M events takes a quarter of an hour here. Each run
// adds its appends (3,100 events) to the logs it measures.

/// Events per device history in the growth logs: what a device history read returns.
private let growthEventsPerDevice = 20

private func growthNote(_ text: String) {
    FileHandle.standardError.write(Data("growth: \(text)\n".utf8))
}

/// The stream of device `device` in a growth log.
private func growthStream(_ device: Int) -> String { "device-com.example.game/\(device)" }

/// Loads `total` events into `events` by `COPY … FROM STDIN`: 20-event device histories (the
/// projection benchmark's payloads: `SKANRegistered`, revenue every third event, the others
/// conversion value updates), on two sessions side by side, 1,000 devices per `COPY` and commit,
/// without waiting for commit flushes. `recorded_at` is the clock as each row is made (the table's
/// check refuses a time before the transaction began); the hash is left to that check
/// (schema/0016), which chains it as it does for the store's batches; personal fields are stored
/// as given (no store seals them), so opening them costs a read nothing on either log.
func loadLogByCopy(conninfo: String, total: Int) throws {
    let history = try DeviceHistory()
    let devices = (total + growthEventsPerDevice - 1) / growthEventsPerDevice
    let columns = ["stream_id", "stream_version", "event_id", "event_type", "schema_version", "data", "metadata", "occurred_at",
                   "recorded_at"]
    let started = DispatchTime.now()
    let progress = Progress()
    let perCopy = 1000
    _ = try timeOnThreads(2) { writer in
        let connection = try PostgresConnection(conninfo: conninfo, logger: TestDatabase.quietLogger)
        try connection.execute("SET synchronous_commit = off")
        for first in stride(from: writer * perCopy, to: devices, by: 2 * perCopy) {
            let range = first..<min(first + perCopy, devices)
            let rows = range.lazy.flatMap { device in
                let count = min(growthEventsPerDevice, total - device * growthEventsPerDevice)
                let start = Date(timeIntervalSince1970: 1_763_000_000 + Double(device % 100_000 * 37))
                return (0..<count).lazy.map { k -> [PostgresValue] in
                    let event = history.event(k, device: device, start: start)
                    return [.text(growthStream(device)), .int64(Int64(k + 1)), .uuid(event.id), .text(event.type),
                            .int32(Int32(event.schemaVersion)), .jsonb(String(decoding: event.data, as: UTF8.self)),
                            .jsonb(String(decoding: event.metadata, as: UTF8.self)), .timestamptz(event.occurredAt),
                            .timestamptz(Date())]
                }
            }
            try connection.transaction { connection in
                _ = try connection.copyFrom(table: "events", columns: columns, rows: rows)
            }
            let done = progress.add(range.count)
            if done / 25_000 != (done - range.count) / 25_000 {
                growthNote("loaded \(min(total, done * growthEventsPerDevice)) of \(total) events")
            }
        }
    }
    let connection = try PostgresConnection(conninfo: conninfo, logger: TestDatabase.quietLogger)
    try connection.execute("VACUUM (ANALYZE) events")
    try waitForHorizon(connection, total: total)
    growthNote("loaded \(total) events in \(String(format: "%.1f", seconds(since: started))) s (with VACUUM ANALYZE)")
}

/// One log of the growth benchmark: its database, size and the store that measures it.
private struct GrowthLog {
    let database: TestDatabase.Handle
    let events: Int
    let append: SingleWrite
    let store: EventStore

    var conninfo: String { database.conninfo }
    var devices: Int { (events + growthEventsPerDevice - 1) / growthEventsPerDevice }

    /// A log of `events` events: loaded into a new database, or with `keep`, into a kept one
    /// that a run before this one may have loaded already (a table `bench_growth_log` records
    /// a finished load; a database without it is loaded afresh).
    init(events: Int, keep: Bool) throws {
        self.events = events
        database = try keep ? Self.keptLog(events: events) : Self.newLog(events: events)
        append = storeAppend(conninfo: database.conninfo)
        store = EventStore(pool: PostgresPool(conninfo: database.conninfo, logger: TestDatabase.quietLogger),
                           logger: TestDatabase.quietLogger)
    }

    /// A new database holding a log of `events` events.
    static func newLog(events: Int) throws -> TestDatabase.Handle {
        let database = try TestDatabase.make()
        try loadLogByCopy(conninfo: database.conninfo, total: events)
        return database
    }

    /// The kept database of a log of `events` events, loaded now unless a run before loaded it.
    static func keptLog(events: Int) throws -> TestDatabase.Handle {
        let kept = try TestDatabase.kept("growth_\(events)")
        let connection = try PostgresConnection(conninfo: kept.conninfo, logger: TestDatabase.quietLogger)
        if try connection.query("SELECT to_regclass('bench_growth_log') IS NOT NULL").single().decode(Bool.self, at: 0) {
            growthNote("reusing the kept log of \(events) events (\(kept.name))")
            return kept
        }
        kept.dropNow()
        let fresh = try TestDatabase.kept("growth_\(events)")
        try loadLogByCopy(conninfo: fresh.conninfo, total: events)
        let loader = try PostgresConnection(conninfo: fresh.conninfo, logger: TestDatabase.quietLogger)
        try loader.execute("CREATE TABLE bench_growth_log AS SELECT \(Int64(events))::bigint AS events_loaded")
        return fresh
    }

    /// Seconds for `count` single appends to 50 new streams on a new session (round `round`).
    func appendRound(_ round: Int, count: Int) throws -> Double {
        let conninfo = conninfo, append = append
        return try timeOnThreads(1) { _ in
            let connection = try PostgresConnection(conninfo: conninfo, logger: TestDatabase.quietLogger)
            for n in 0..<count { try append(connection, "device-bench-growth-\(getpid())-r\(round)-d\(n % 50)", n) }
        }
    }

    /// History reads of devices drawn by `random`, on one session: `count` of them, or as many
    /// as `budget` seconds allow (a read whose cost grows with the log must not stretch a run on
    /// a large one into hours). Returns the reads made and their seconds.
    func historyRound(count: Int, budget: Double, random: inout SplitMix64) throws -> (reads: Int, seconds: Double) {
        let streams = (0..<count).map { _ in growthStream(Int(random.next() % UInt64(devices))) }
        let privacy = store.privacy, conninfo = conninfo
        let reads = Progress()
        let seconds = try timeOnThreads(1) { _ in
            let connection = try PostgresConnection(conninfo: conninfo, logger: TestDatabase.quietLogger)
            let started = DispatchTime.now()
            for stream in streams {
                let events = try EventStore.readHistory(of: .deviceHistory(stream), privacy: privacy, on: connection)
                guard !events.isEmpty else { throw GrowthBenchError.emptyHistory(stream) }
                if reads.add(1) >= 10, LedgerBench.seconds(since: started) > budget { break }
            }
        }
        return (reads.add(0), seconds)
    }

    /// A rebuild of the SKAN projection from position 0: events and seconds.
    func rebuild() throws -> (events: Int64, seconds: Double) {
        let connection = try PostgresConnection(conninfo: conninfo, logger: TestDatabase.quietLogger)
        let rebuilder = ProjectionRebuilder(store: store, logger: TestDatabase.quietLogger)
        let started = DispatchTime.now()
        let report = try rebuilder.rebuild(SKANDeviceProjection(SKANDeviceReducer()), on: connection)
        return (report.events, seconds(since: started))
    }
}

enum GrowthBenchError: Error, CustomStringConvertible {
    case emptyHistory(String)

    var description: String {
        switch self {
        case .emptyHistory(let stream): "growth: the history of \(stream) is empty"
        }
    }
}

/// The process's peak resident set (`VmHWM` of /proc/self/status), in MiB.
private func peakResidentMiB() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
          let kib = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap({ Double($0) })
    else { return 0 }
    return kib / 1024
}

/// Resets the peak resident set to the current one (`5` into /proc/self/clear_refs); false when
/// the kernel does not allow it, so that the peak then covers the whole process.
private func resetPeakResident() -> Bool {
    guard let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return false }
    defer { try? handle.close() }
    do {
        try handle.write(contentsOf: Data("5".utf8))
        return true
    } catch {
        return false
    }
}

/// The growth benchmark: four JSON lines.
func runGrowthBenchmarks() throws {
    let environment = ProcessInfo.processInfo.environment
    func size(_ name: String, _ fallback: Int) -> Int {
        environment[name].flatMap { Int($0.replacingOccurrences(of: "_", with: "")) }.map { max(growthEventsPerDevice, $0) } ?? fallback
    }
    let keep = ["1", "true", "yes"].contains(environment["LEDGER_BENCH_GROWTH_KEEP"] ?? "")
    let small = try GrowthLog(events: size("LEDGER_BENCH_GROWTH_SMALL", 100_000), keep: keep)
    defer { if !keep { small.database.dropNow() } }
    let large = try GrowthLog(events: size("LEDGER_BENCH_GROWTH_LARGE", 10_000_000), keep: keep)
    defer { if !keep { large.database.dropNow() } }
    let logs = [small, large]

    // Appends and history reads: five rounds, the two logs in turn (the small one first in even
    // rounds, the large one in odd), after a warm-up round on each. A round reads 400 histories
    // or for 5 s, whichever ends first.
    let rounds = 5, appendsPerRound = 600, readsPerRound = 400, readBudget = 5.0
    var appendSeconds = [0.0, 0.0], readSeconds = [0.0, 0.0], readCounts = [0, 0]
    var random = SplitMix64(seed: 37)
    for (index, log) in logs.enumerated() {
        _ = try log.appendRound(100 + index, count: 100)
        _ = try log.historyRound(count: 100, budget: readBudget, random: &random)
    }
    for round in 0..<rounds {
        for index in round % 2 == 0 ? [0, 1] : [1, 0] {
            appendSeconds[index] += try logs[index].appendRound(round, count: appendsPerRound)
            let read = try logs[index].historyRound(count: readsPerRound, budget: readBudget, random: &random)
            readCounts[index] += read.reads
            readSeconds[index] += read.seconds
        }
    }
    func milliseconds(_ seconds: Double, _ count: Int) -> String { String(format: "%.2f", seconds * 1000 / Double(max(count, 1))) }
    growthNote("per append, ms: small \(milliseconds(appendSeconds[0], appendsPerRound * rounds)), "
        + "large \(milliseconds(appendSeconds[1], appendsPerRound * rounds)); per history read, ms: small "
        + "\(milliseconds(readSeconds[0], readCounts[0])) (\(readCounts[0]) reads), large \(milliseconds(readSeconds[1], readCounts[1])) "
        + "(\(readCounts[1]) reads)")
    func perSecond(_ count: Int, _ seconds: Double) -> Double { seconds > 0 ? Double(count) / seconds : 0 }
    func growth(_ name: String, _ unit: String, large: Double, small: Double, what: String) -> Measurement {
        var measurement = Measurement(bench: name, rate: large, unit: unit, baselineRate: small,
                                      baseline: "\(what) on a log of \(logs[0].events) events (the rate: on \(logs[1].events))")
        measurement.events = logs[1].events
        measurement.baseline_events = logs[0].events
        return measurement
    }
    emit(growth("growth_append_single", "events/s", large: perSecond(appendsPerRound * rounds, appendSeconds[1]),
                small: perSecond(appendsPerRound * rounds, appendSeconds[0]), what: "the same single appends, 1 writer,"))
    emit(growth("growth_history_read", "reads/s", large: perSecond(readCounts[1], readSeconds[1]),
                small: perSecond(readCounts[0], readSeconds[0]), what: "the same device history reads (\(growthEventsPerDevice) events)"))

    // The rebuilds, small first; the peak resident set is reset before each when allowed.
    var rebuildRates: [Double] = [], peaks: [Double] = []
    var reset = true
    for log in logs {
        reset = resetPeakResident() && reset
        let (events, seconds) = try log.rebuild()
        peaks.append(peakResidentMiB())
        rebuildRates.append(seconds > 0 ? Double(events) / seconds : 0)
        growthNote("rebuild of \(events) events in \(String(format: "%.1f", seconds)) s, peak RSS \(Int(peaks.last!)) MiB")
    }
    emit(growth("growth_rebuild", "events/s", large: rebuildRates[1], small: rebuildRates[0],
                what: "the same rebuild of skan_devices from position 0"))
    var peak = growth("growth_rebuild_peak_rss", "MiB", large: peaks[1], small: peaks[0],
                      what: "the peak RSS of the same rebuild" + (reset ? "" : " (of the whole process: clear_refs refused)"))
    peak.peak_reset = reset
    emit(peak)
}
