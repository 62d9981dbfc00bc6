import AttributionLedger
import Foundation
import LedgerDecisions
import LedgerDispatch
import LedgerFakeProviders
import LedgerHTTPTransport
import LedgerPostgres
import LedgerStore
import LedgerTestSupport

// pipeline: the whole path of one install at a steady offered rate. Each fact is a `FirstOpen`
// with an AdServices token (as the drain benchmark's), recorded through the facade the HTTP API
// uses (`AttributionLedger.recordFirstOpen`, which requests its Apple token lookup in the same
// transaction); one `SendWorker.run()` drains the sends to the loopback fakes; an
// `AttributionDecider.run()` (its 5 s rounds) records each decision: both as `ledger worker` runs
// them, each on its own pool. The app has Apple AdServices alone enabled, so a decision waits for
// that one answer. Facts are offered open-loop at LEDGER_BENCH_PIPELINE_RATE per second (500) for
// LEDGER_BENCH_PIPELINE_SECONDS (60): a slow append does not slow the offer. The baseline is the
// offered rate; the figure is decisions per second from the first fact offered to the last
// decision, so a pipeline that keeps up reads about duration / (duration + one fact's latency);
// latency runs from each fact's turn in the schedule to its decision's `recorded_at`.

/// The app whose installs the pipeline decides.
private let pipelineApp = "com.example.app"

/// When each fact was offered, by its id (the decision names its trigger by id).
private final class OfferTimes: @unchecked Sendable {
    private let lock = NSLock()
    private var times: [UUID: Date] = [:]
    private var failures: [any Error] = []

    func offered(_ id: UUID, at time: Date) { lock.withLock { times[id] = time } }
    func failed(_ error: any Error) { lock.withLock { failures.append(error) } }
    var count: Int { lock.withLock { times.count } }
    var snapshot: (times: [UUID: Date], failures: [any Error]) { lock.withLock { (times, failures) } }
}

/// The largest values seen by the sampler.
private final class PipelineDepths: @unchecked Sendable {
    private let lock = NSLock()
    private var queue = 0
    private var undecided = 0

    func record(queue: Int, undecided: Int) {
        lock.withLock {
            self.queue = max(self.queue, queue)
            self.undecided = max(self.undecided, undecided)
        }
    }
    var maxima: (queue: Int, undecided: Int) { lock.withLock { (queue, undecided) } }
}

enum PipelineBenchError: Error, CustomStringConvertible {
    case appendsFailed(count: Int, first: String)

    var description: String {
        switch self {
        case .appendsFailed(let count, let first): "pipeline: \(count) appends failed, the first with \(first)"
        }
    }
}

/// The first open of install `index`, with the AdServices token the fakes know as `token`.
private func pipelineFirstOpen(index: Int, token: String, issued: Date) throws -> FirstOpen {
    let userAgent = UserAgentParts(appName: "App", appVersion: "1.0", osName: "iOS", osVersion: "17.1", locale: "en_US",
                                   deviceModel: "iPhone15,2", build: "21B74")
    return FirstOpen(
        appID: try AppID(pipelineApp),
        device: DeviceContext(platform: .ios, idfv: UUID().uuidString, limitAdTracking: false, ip: "198.51.100.\(index % 250)",
                              userAgent: userAgent, osVersion: "17.1", appVersion: "1.0", bundleID: pipelineApp),
        adServicesToken: AdServicesToken(token: token, issuedAt: issued))
}

/// The `pipeline` measurement.
func benchPipeline(rate: Double, seconds: Double) async throws -> Measurement {
    let quiet = TestDatabase.quietLogger
    let database = try TestDatabase.make()
    defer { database.dropNow() }
    let fakes = FakeProviders(logger: quiet)
    try await fakes.start()
    let total = max(1, Int(rate * seconds))
    let tokens = (0..<total).map { Data("pipeline-\($0)".utf8).base64EncodedString() }
    fakes.apple.register(tokens: tokens)

    let settings = AttributionSettings(defaults: AppAttributionSettings(providers: [.appleAdServices]))
    // The facade, as `ledger serve` makes it (its pool of 8 sessions).
    let ledgerPool = PostgresPool(conninfo: database.conninfo, maxConnections: 8, logger: quiet)
    let ledger = AttributionLedger(pool: ledgerPool, settings: settings, logger: quiet)
    // The worker and the decider, as `ledger worker` makes them.
    let slots = SendWorker.Configuration.defaultSlots
    let workerPool = PostgresPool(conninfo: database.conninfo, maxConnections: slots + 2, sessionSettings: SendWorker.sessionSettings,
                                  logger: quiet)
    let otherPool = PostgresPool(conninfo: database.conninfo, maxConnections: 2, logger: quiet)
    let transport = HTTPProviderTransport(logger: quiet)
    let worker = SendWorker(
        store: EventStore(pool: workerPool, catalog: .standard, logger: quiet), rules: ProviderSendRules(adServices: fakes.appleEndpoint),
        transport: transport,
        configuration: .init(workerID: "bench-pipeline", slots: slots, lease: 60, requestTimeout: .seconds(10)), logger: quiet)
    let decider = AttributionDecider(store: EventStore(pool: otherPool, catalog: .standard, logger: quiet), settings: settings,
                                     logger: quiet)
    // What the benchmark reads while it runs, on a session of its own.
    let monitor = PostgresPool(conninfo: database.conninfo, maxConnections: 1, logger: quiet)
    defer {
        ledgerPool.close()
        workerPool.close()
        otherPool.close()
        monitor.close()
    }
    let workerTask = Task { try await worker.run() }
    let deciderTask = Task { try await decider.run() }

    let offers = OfferTimes()
    let depths = PipelineDepths()
    @Sendable func decidedCount() async throws -> Int {
        try await monitor.query("SELECT count(*) FROM events WHERE event_type = 'AttributionDecided'").single().decode(Int.self, at: 0)
    }
    // The sampler: queue depth and facts recorded but not yet decided, ten times a second.
    let sampling = Task {
        while !Task.isCancelled {
            let recorded = offers.count
            let queue = try await monitor.query("SELECT count(*) FROM send_queue").single().decode(Int.self, at: 0)
            depths.record(queue: queue, undecided: max(0, recorded - (try await decidedCount())))
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    let firstOffer = Date()
    let start = ContinuousClock.now
    let interval = Duration.seconds(1 / rate)
    try await withThrowingTaskGroup(of: Void.self) { group in
        for index in 0..<total {
            try await Task.sleep(until: start + interval * index, clock: .continuous)
            let id = UUID()
            let token = tokens[index]
            // Latency counts from the fact's turn in the schedule, not from when its append began:
            // a pipeline that falls behind delays the offer too, and that wait is part of it.
            let scheduled = firstOffer.addingTimeInterval(Double(index) / rate)
            group.addTask {
                let offered = Date()
                do {
                    let device = try DeviceRef(app: pipelineApp, device: "install-\(index)")
                    try await ledger.recordFirstOpen(try pipelineFirstOpen(index: index, token: token, issued: offered), for: device,
                                                     id: id, occurredAt: offered)
                    offers.offered(id, at: scheduled)
                } catch {
                    offers.failed(error)
                }
            }
        }
        try await group.waitForAll()
    }
    let offerSeconds = (ContinuousClock.now - start).timeInterval
    let (times, failures) = offers.snapshot
    if let first = failures.first { throw PipelineBenchError.appendsFailed(count: failures.count, first: "\(first)") }
    // Every fact's decision, or until two decider rounds and ten seconds pass with none new.
    var decided = try await decidedCount()
    var lastProgress = ContinuousClock.now
    while decided < total, ContinuousClock.now - lastProgress < AttributionDecider.defaultInterval * 2 + .seconds(10) {
        try await Task.sleep(for: .milliseconds(200))
        let now = try await decidedCount()
        if now > decided { lastProgress = ContinuousClock.now }
        decided = now
    }
    sampling.cancel()
    _ = try? await sampling.value
    workerTask.cancel()
    deciderTask.cancel()
    _ = try? await workerTask.value
    _ = try? await deciderTask.value
    await transport.shutdown()
    await fakes.stop()

    var latencies: [Double] = []
    var lastDecision = firstOffer
    for row in try await monitor.query("""
        SELECT data ->> 'trigger_event_id', recorded_at FROM events WHERE event_type = 'AttributionDecided'
        """) {
        let trigger = try row.decode(String.self, at: 0)
        let at = try row.decode(Date.self, at: 1)
        guard let id = UUID(uuidString: trigger), let offered = times[id] else { continue }
        latencies.append(at.timeIntervalSince(offered))
        lastDecision = max(lastDecision, at)
    }
    latencies.sort()
    func quantile(_ q: Double) -> Double {
        guard !latencies.isEmpty else { return 0 }
        return (latencies[min(latencies.count - 1, Int(Double(latencies.count) * q))] * 1e5).rounded() / 100
    }
    let span = lastDecision.timeIntervalSince(firstOffer)
    let (maxQueue, maxUndecided) = depths.maxima
    FileHandle.standardError.write(Data(("pipeline: offered \(total) facts in \(String(format: "%.1f", offerSeconds)) s, "
        + "\(latencies.count) decided in \(String(format: "%.1f", span)) s from the first; max queue \(maxQueue), "
        + "max undecided \(maxUndecided)\n").utf8))
    var measurement = Measurement(
        bench: "pipeline", rate: span > 0 ? Double(latencies.count) / span : 0, unit: "decisions/s", baselineRate: rate,
        baseline: "the offered rate: \(Int(rate)) FirstOpen facts/s for \(Int(seconds)) s, open loop")
    measurement.p50_ms = quantile(0.5)
    measurement.p99_ms = quantile(0.99)
    measurement.max_queue_depth = maxQueue
    measurement.max_undecided = maxUndecided
    return measurement
}

/// The `pipeline` benchmark with LEDGER_BENCH_PIPELINE_RATE facts/s (500) for
/// LEDGER_BENCH_PIPELINE_SECONDS (60).
func runPipelineBenchmark() async throws {
    let environment = ProcessInfo.processInfo.environment
    let rate = environment["LEDGER_BENCH_PIPELINE_RATE"].flatMap { Double($0) }.map { max(1, $0) } ?? 500
    let seconds = environment["LEDGER_BENCH_PIPELINE_SECONDS"].flatMap { Double($0) }.map { max(1, $0) } ?? 60
    emit(try await benchPipeline(rate: rate, seconds: seconds))
}
