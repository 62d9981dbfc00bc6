import ArgumentParser
import Foundation
import LedgerConfiguration
import LedgerDecisions
import LedgerDispatch
import LedgerDomain
import LedgerHTTPAPI
import LedgerHTTPTransport
import LedgerPostgres
import LedgerPrivateCluster
import LedgerStore
import Logging
import ServiceLifecycle

/// `ledger worker`: drains pending sends to the providers until stopped.
struct WorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Send pending requests to Google, Apple AdServices, Branch and Singular, by each one's rules.",
        discussion: helpText("""
            Claims due sends (FOR UPDATE SKIP LOCKED), records each try before the call and its
            outcome after it, retries by each provider's documented rules, and rescues the sends
            of workers that died. Any number of workers may share one database. SIGTERM or SIGINT
            stops claiming and lets the tries in flight record their outcomes.

            The worker also decides attribution: every few seconds it decides the installs and
            sessions whose providers all answered (or whose deadline passed) and requests Google's
            cross-network reports. --no-decide leaves deciding to other processes.

            Each app's providers, credentials and settings come from the apps file --apps-file /
            LEDGER_APPS_FILE names (docs/configuration.md): every send uses the credentials of its
            own app. Apps not in the file use the environment (see docs/dispatch.md):
            LEDGER_GOOGLE_DEV_TOKEN + LEDGER_GOOGLE_LINK_ID, LEDGER_BRANCH_KEY + LEDGER_BRANCH_SECRET,
            LEDGER_SINGULAR_SDK_KEY, and LEDGER_ATTRIBUTION_SETTINGS (docs/attribution.md).
            LEDGER_*_URL point a provider elsewhere, for every app. All is checked at start-up.
            SIGHUP re-reads the apps file: the next try of each send uses the new credentials; a bad
            file is refused (logged) and the running configuration kept.

            --metrics-port serves Prometheus GET /metrics, GET /health (the process is alive) and
            GET /ready (200 when the database answers and the send queue can be read, 503 with a
            reason otherwise) on --metrics-host, 127.0.0.1 by default; port 0 takes any free port
            and prints it. Without it the worker listens on nothing. The series are listed in
            docs/operations.md ("Metrics").

            Exit codes: 0 stopped cleanly, 64 bad options or configuration (an apps file refused
            with its app, key path and rule), 3 the database is unreachable at start (later outages
            are waited out: docs/operations.md).

            Examples:
              ledger worker
              ledger worker --slots 32 --lease 120
              ledger worker --apps-file /etc/ledger/apps.json
              ledger worker --metrics-port 9464 # /metrics, /health, /ready on 127.0.0.1
              ledger worker --seal-every 600 # seal the global order every 10 minutes (default: every minute)
              ledger worker --drain          # send what is due now, then exit
              ledger worker --rebuild-queue  # recompute the queue from the log, then exit
            """)
    )

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var privilege: LeastPrivilegeOptions

    @OptionGroup var apps: AppsFileOptions

    @Option(help: "Provider calls in flight at once.")
    var slots = SendWorker.Configuration.defaultSlots

    @Option(help: ArgumentHelp("Sends claimed and recorded ahead of a free slot (default and most: as many as the slots).",
                               discussion: "Each waits at most one call's time for its slot, so sends are claimed ahead only when --lease is at least twice --timeout plus a tenth of --lease."))
    var prefetch: Int?

    @Option(help: "Seconds a claim lasts before another worker may rescue it.")
    var lease = 60

    @Option(help: "Seconds a provider call may take.")
    var timeout = 20

    @Option(help: "This worker's name (default: host, pid and a random suffix).")
    var workerID: String?

    @Flag(help: "Send what is due now, then exit.")
    var drain = false

    @Flag(inversion: .prefixedNo, help: "Also decide attribution as answers complete (see docs/attribution.md).")
    var decide = true

    @Flag(help: "Recompute the send queue from the log (sends with no terminal event), then exit. Sends nothing.")
    var rebuildQueue = false

    @Option(help: ArgumentHelp("Seconds between seals of the global order (0: none from this worker).",
                               discussion: "Each seal commits to every event readable and not sealed yet, signed with LEDGER_SEAL_SIGNING_KEY when set; any number of processes may seal (one seal at a time). `ledger seal` does the same once.",
                               valueName: "seconds"))
    var sealEvery = 60

    @Option(help: ArgumentHelp("Serve Prometheus GET /metrics, GET /health and GET /ready on this port (0: any free port, printed at start; default: none).",
                               valueName: "port"))
    var metricsPort: Int?

    @Option(help: ArgumentHelp("The address --metrics-port listens on (plain HTTP: loopback or a private network).", valueName: "address"))
    var metricsHost = "127.0.0.1"

    func validate() throws {
        if let metricsPort {
            guard (0...65_535).contains(metricsPort) else { throw ValidationError("--metrics-port must be 0–65535") }
            guard !drain, !rebuildQueue else {
                throw ValidationError("--metrics-port is for a running worker: not with --drain or --rebuild-queue, which exit when done")
            }
        }
        guard slots >= 1 else { throw ValidationError("--slots must be 1 or more") }
        if let prefetch { guard (0...slots).contains(prefetch) else { throw ValidationError("--prefetch must be between 0 and --slots") } }
        guard lease >= 1 else { throw ValidationError("--lease must be 1 second or more") }
        guard sealEvery >= 0 else { throw ValidationError("--seal-every must be 0 (off) or more seconds") }
        guard timeout >= 1, timeout < lease else { throw ValidationError("--timeout must be at least 1 and less than --lease") }
        guard SendWorker.leaseLeavesRoom(lease: TimeInterval(lease), requestTimeout: .seconds(timeout)) else {
            throw ValidationError("--lease must leave --timeout, a tenth of itself and a second: a try is called only with that much of its lease left")
        }
    }

    func run() async throws {
        try await reportingFailures {
            let logger = makeLogger("ledger.worker")
            // Before anything makes a metric: swift-metrics binds each to the backend of its time.
            if metricsPort != nil { _ = LedgerMetricsBackend.prometheus }
            if (prefetch ?? slots) > 0, !SendWorker.leaseHoldsSendsAhead(lease: TimeInterval(lease), requestTimeout: .seconds(timeout)) {
                writeStatusLine("--lease \(lease) leaves no room for sends claimed ahead "
                    + "(it must be at least twice --timeout \(timeout) plus a tenth of itself): --prefetch is 0",
                    command: "worker", level: .warning, textTag: "warning")
            }
            let configuration = try apps.load(command: "worker")
            let providers = try configured { () throws(ConfigurationError) in try configuration.sendRules() }
            let rules = PerAppSendRules(table: Reloadable(providers.table))
            let reloadableSettings = Reloadable(try configured { () throws(ConfigurationError) in try configuration.attributionSettings() })
            let sealKey = try loadSealSigningKey()
            let target = try database.resolve(logger: logger)
            // In the private cluster, as its service role (a member of ledger_app and ledger_sealer only).
            let conninfo = try target.serviceConninfo(logger: logger)
            try privilege.check(conninfo, command: "worker")
            // The send worker's own pool, whose sessions plan generically (SendWorker.sessionSettings),
            // and another for the rest (the decider's projection reads, the queue rebuild), which
            // keep PostgreSQL's usual choice of plans.
            let pool = PostgresPool(conninfo: conninfo, maxConnections: slots + 2,
                                    sessionSettings: SendWorker.sessionSettings, logger: logger)
            defer { pool.close() }
            let store = EventStore(pool: pool, catalog: .standard, logger: logger)
            let otherPool = PostgresPool(conninfo: conninfo, maxConnections: 2, logger: logger)
            defer { otherPool.close() }
            let otherStore = EventStore(pool: otherPool, catalog: .standard, logger: logger)
            if rebuildQueue {
                let bar = ProgressDisplay.bar(label: "rebuild send queue", unit: "positions")
                let pending = try await otherPool.withConnection { connection in
                    try SendQueue.rebuild(on: connection, progress: bar.map { bar in { done, total in bar.update(done: done, total: total) } })
                }
                bar?.finish()
                print("send queue rebuilt from the log: \(pending) unfinished sends (pending, or parked for an operator)")
                return
            }
            // Trapped before the line below, which tells a supervisor (or a test) the worker runs:
            // a SIGHUP from then on reloads instead of ending the process.
            let hangups = await ConfigurationReloader.trap()
            writeStatusLine("providers configured: \(providers.summary)", command: "worker")
            let transport = HTTPProviderTransport(logger: logger)
            let worker = SendWorker(
                store: store, rules: rules, transport: transport,
                configuration: SendWorker.Configuration(
                    workerID: workerID ?? "\(ProcessInfo.processInfo.hostName)-\(getpid())-\(UUID().uuidString.prefix(6))",
                    slots: slots, lease: TimeInterval(lease), requestTimeout: .seconds(timeout), prefetch: prefetch),
                logger: logger)
            do {
                let decider = AttributionDecider(store: otherStore, reloadableSettings: reloadableSettings, logger: logger)
                if drain {
                    let tries = try await worker.drain()
                    let decided = decide ? try await decider.decidePending(now: Date()).count : 0
                    print("drained: \(tries) tries" + (decide ? ", decided: \(decided)" : ""))
                } else {
                    // SIGHUP re-reads the apps file: the next try of every send uses the new
                    // credentials, the decider the new settings; a bad file keeps the running ones.
                    let reloader = ConfigurationReloader(
                        signals: hangups, command: "worker",
                        apply: { [appsFilePath = apps.appsFile] () throws(ConfigurationError) in
                            let fresh = try ServiceConfiguration.load(
                                environment: ProcessInfo.processInfo.environment, appsFilePath: appsFilePath)
                            let table = try fresh.sendRules().table
                            let settings = try fresh.attributionSettings()
                            rules.table.replace(with: table)
                            reloadableSettings.replace(with: settings)
                            printWarnings(of: fresh, command: "worker")
                        }, logger: logger)
                    // One group: SIGTERM or SIGINT stops the worker first (its tries in flight
                    // record their outcomes), then the decider and the sealer, then the HTTP
                    // client and the pools they used.
                    var services: [(name: String, service: any Service)] = [
                        ("worker pool", pool), ("other pool", otherPool), ("provider transport", transport),
                        ("configuration reloader", reloader),
                    ]
                    // Stopped after the loops below it: /metrics and /ready answer while they finish.
                    if let metricsPort {
                        services.append(("metrics endpoint", makeMetricsEndpoint(port: metricsPort, pool: otherPool, logger: logger)))
                    }
                    // Listed first, the trace exporter stops last: it flushes the others' spans.
                    if let exporter = try TraceExport.bootstrap(command: "worker", environment: ProcessInfo.processInfo.environment) {
                        services.insert(("trace exporter", exporter), at: 0)
                    }
                    if sealEvery > 0 {
                        services.append(("sealer", PeriodicSealer(store: otherStore, interval: .seconds(sealEvery), key: sealKey)))
                    }
                    if decide { services.append(("attribution decider", decider)) }
                    services.append(("send worker", worker))
                    try await runUntilSignalled(services, logger: logger)
                }
            } catch {
                await transport.shutdown()
                throw error
            }
            await transport.shutdown()
        }
    }
}

extension WorkerCommand {
    /// The worker's `/metrics`, `/health` and `/ready` (``MetricsEndpoint``), over the process's
    /// Prometheus registry; `/ready` reads the send queue on `pool`. Touching
    /// ``LedgerMetricsBackend/prometheus`` makes it swift-metrics' backend, so the worker's
    /// counters and gauges are recorded from here on (without `--metrics-port` they go nowhere).
    func makeMetricsEndpoint(port: Int, pool: PostgresPool, logger: Logger) -> MetricsEndpoint {
        let host = metricsHost
        return MetricsEndpoint(
            host: host, port: port, registry: LedgerMetricsBackend.prometheus,
            readiness: {
                do {
                    try await pool.withConnection { try SendQueue.checkReadable(on: $0) }
                    return .ready
                } catch where ConnectionLossRetry.isConnectionLoss(error) {
                    return .notReady(reason: "database_unreachable")
                } catch {
                    return .notReady(reason: "send_queue_unreadable")
                }
            },
            logger: logger,
            onServerRunning: { port in
                writeStatusLine("metrics on http://\(host):\(port)/metrics", command: "worker")
            })
    }
}
