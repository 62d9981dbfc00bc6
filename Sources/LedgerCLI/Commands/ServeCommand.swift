import ArgumentParser
import AttributionLedger
import Foundation
import LedgerConfiguration
import LedgerDomain
import LedgerHTTPAPI
import LedgerPostgres
import LedgerPrivateCluster
import LedgerProjections
import LedgerStore
import ServiceLifecycle

/// `ledger serve`: the HTTP API (and, unless told otherwise, the projection runner) in one process.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the HTTP API: append device facts, read device state, SKAN, attribution and history.",
        discussion: helpText("""
            API keys come from the apps file --apps-file / LEDGER_APPS_FILE names (each app's
            api_key_digests, providers and settings; docs/configuration.md), and for apps not in it
            from LEDGER_API_KEYS (JSON: app id → SHA-256 hex digest of the key, or a list of
            digests) or the file LEDGER_API_KEYS_FILE / --api-keys-file names. The server stores no
            key, only digests: make one with `printf %s "$KEY" | ledger serve --hash-key`. SIGHUP
            re-reads the apps file: a good file replaces the keys and settings without a restart, a
            bad one is refused (logged) and the running configuration kept.
            The projection runner follows the log in the same process unless --no-projections.
            SIGTERM or SIGINT stops accepting connections and lets requests in flight finish.
            The API is described in docs/openapi.yaml and docs/http-api.md.

            The API speaks plain HTTP (no TLS), so it listens on a loopback address only
            (127.0.0.0/8, ::1, localhost) unless --insecure-listen: use that only behind a
            TLS-terminating proxy. Connections are closed when a request's head takes longer than
            --header-timeout, a whole request longer than --request-timeout (answered 408), or the
            wait for the next request longer than --idle-timeout. Each app's requests are limited
            by a token bucket (--rate-limit per second, bursts of --rate-burst; 429 with Retry-After
            beyond): off by default on a loopback address, 100 per second (bursts of 200) on any
            other; LEDGER_HTTP_RATE_LIMIT sets the rate when --rate-limit is not given.

            Exit codes: 0 stopped cleanly, 64 bad options or configuration (a non-loopback --host
            without --insecure-listen, one key digest given to two apps, an apps file refused with
            its app, key path and rule, a superuser or owner role with --require-least-privilege), 3 the database is unreachable at start (later outages
            are waited out: docs/operations.md).

            Examples:
              LEDGER_API_KEYS='{"com.example.game":"<sha256 hex>"}' ledger serve
              ledger serve --host 0.0.0.0 --insecure-listen --api-keys-file /etc/ledger/api-keys.json
              ledger serve --apps-file /etc/ledger/apps.json
              ledger serve --rate-limit 50 --rate-burst 100 --request-timeout 60
              printf %s "$KEY" | ledger serve --hash-key
            """)
    )

    @OptionGroup var database: DatabaseOptions

    @OptionGroup var privilege: LeastPrivilegeOptions

    @OptionGroup var apps: AppsFileOptions

    @Option(help: "The address to listen on: a loopback address (127.0.0.1, ::1, localhost) unless --insecure-listen.")
    var host = "127.0.0.1"

    @Flag(help: "Allow a --host that is not a loopback address. The API has no TLS: only behind a TLS-terminating proxy.")
    var insecureListen = false

    @Option(help: "The port to listen on (0: any free port, printed at start).")
    var port = 8080

    @Option(help: ArgumentHelp("A JSON file of API key digests by app (instead of LEDGER_API_KEYS).", valueName: "path"))
    var apiKeysFile: String?

    @Option(help: "The largest request body accepted, in bytes.")
    var maxBodyBytes = 4 * 1_048_576

    @Option(help: "The most events one append request may carry.")
    var maxEventsPerBatch = 1000

    @Option(help: "Database connections the server may open.")
    var connections = 8

    @Option(help: ArgumentHelp("Seconds a request's head (request line and headers) may take to arrive.", valueName: "seconds"))
    var headerTimeout = 10.0

    @Option(help: ArgumentHelp("Seconds a whole request may take to arrive; then it is answered 408.", valueName: "seconds"))
    var requestTimeout = 30.0

    @Option(help: ArgumentHelp("Seconds a keep-alive connection may wait for its next request.", valueName: "seconds"))
    var idleTimeout = 60.0

    @Option(help: ArgumentHelp("Seconds of silence after which an event stream writes a keep-alive comment.", valueName: "seconds"))
    var eventStreamHeartbeat = 15.0

    @Option(help: ArgumentHelp(
        "Requests per second per app (0: no limit; default: LEDGER_HTTP_RATE_LIMIT, else none on a loopback address, 100 otherwise).",
        valueName: "n"))
    var rateLimit: Double?

    @Option(help: ArgumentHelp("Requests an app may send at once (default: twice the rate limit).", valueName: "m"))
    var rateBurst: Int?

    @Flag(inversion: .prefixedNo, help: "Run the projection runner in this process.")
    var projections = true

    @Option(help: ArgumentHelp("Seconds between seals of the global order, signed with LEDGER_SEAL_SIGNING_KEY when set (0: none from this process).",
                               valueName: "seconds"))
    var sealEvery = 60

    @Flag(help: "Read an API key from stdin, print its SHA-256 digest for the key configuration, and exit.")
    var hashKey = false

    func validate() throws {
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be 0–65535") }
        guard maxBodyBytes >= 1024 else { throw ValidationError("--max-body-bytes must be at least 1024") }
        guard maxEventsPerBatch >= 1 else { throw ValidationError("--max-events-per-batch must be 1 or more") }
        guard connections >= 2 else { throw ValidationError("--connections must be 2 or more") }
        guard sealEvery >= 0 else { throw ValidationError("--seal-every must be 0 (off) or more seconds") }
        for (name, seconds) in [("--header-timeout", headerTimeout), ("--request-timeout", requestTimeout), ("--idle-timeout", idleTimeout),
                               ("--event-stream-heartbeat", eventStreamHeartbeat)] {
            guard seconds > 0, seconds <= 86_400 else { throw ValidationError("\(name) must be more than 0 and at most 86400 seconds") }
        }
        let configuration = try makeConfiguration(environment: ProcessInfo.processInfo.environment)
        do {
            try configuration.validate()
        } catch where error.rule == "loopback_host" {
            throw ValidationError("""
                --host \(host) is not a loopback address. The API speaks plain HTTP (no TLS): API keys and device data would \
                cross the network unencrypted. Listen on 127.0.0.1, ::1 or localhost, or pass --insecure-listen when a \
                TLS-terminating proxy is the only way to reach this address.
                """)
        } catch {
            throw ValidationError("\(error)")
        }
    }

    /// The server's configuration from the options, and LEDGER_HTTP_RATE_LIMIT when --rate-limit
    /// is not given.
    /// - Throws: `ValidationError` for a rate or burst out of range.
    func makeConfiguration(environment: [String: String]) throws -> LedgerHTTPConfiguration {
        var rate = rateLimit
        if rate == nil, let text = environment["LEDGER_HTTP_RATE_LIMIT"], !text.isEmpty {
            guard let value = Double(text) else {
                throw ValidationError("LEDGER_HTTP_RATE_LIMIT must be a number of requests per second per app (0: no limit)")
            }
            rate = value
        }
        let rateLimiting: LedgerHTTPConfiguration.RateLimiting
        switch rate {
        case nil:
            guard rateBurst == nil else { throw ValidationError("--rate-burst needs --rate-limit (or LEDGER_HTTP_RATE_LIMIT)") }
            rateLimiting = .automatic
        case 0?:
            rateLimiting = .off
        case let perSecond?:
            guard perSecond > 0, perSecond <= 1_000_000 else {
                throw ValidationError("the rate limit must be 0 (no limit) or a number of requests per second up to 1000000")
            }
            let burst = rateBurst ?? max(1, Int((2 * perSecond).rounded(.up)))
            guard burst >= 1 else { throw ValidationError("--rate-burst must be 1 or more") }
            rateLimiting = .perApp(HTTPRateLimit(requestsPerSecond: perSecond, burst: burst))
        }
        return LedgerHTTPConfiguration(
            host: host, port: port, maxBodyBytes: maxBodyBytes, maxEventsPerBatch: maxEventsPerBatch,
            headerTimeout: .seconds(headerTimeout), idleTimeout: .seconds(idleTimeout), requestTimeout: .seconds(requestTimeout),
            rateLimiting: rateLimiting, insecureListen: insecureListen, eventStreamHeartbeat: .seconds(eventStreamHeartbeat))
    }

    func run() async throws {
        if hashKey {
            let key = (readLine(strippingNewline: true) ?? "")
            guard !key.isEmpty else { throw CLIFailure(exitCode: .validationFailure, message: "no key on stdin") }
            print(APIKeys.digest(of: key))
            return
        }
        try await reportingFailures {
            let logger = makeLogger("ledger.serve")
            var environment = ProcessInfo.processInfo.environment
            if let apiKeysFile {
                environment["LEDGER_API_KEYS"] = nil
                environment["LEDGER_API_KEYS_FILE"] = apiKeysFile
            }
            let configuration = try self.apps.load(command: "serve", environment: environment)
            let keys = try configured { () throws(ConfigurationError) in try configuration.apiKeys() }
            let reloadableKeys = Reloadable(keys)
            let reloadableSettings = Reloadable(try configured { () throws(ConfigurationError) in try configuration.attributionSettings() })
            let sealKey = try loadSealSigningKey()
            let target = try database.resolve(logger: logger)
            // In the private cluster, as its service role (a member of ledger_app and ledger_sealer only).
            let conninfo = try target.serviceConninfo(logger: logger)
            try privilege.check(conninfo, command: "serve")
            let pool = PostgresPool(conninfo: conninfo, maxConnections: connections, logger: logger)
            defer { pool.close() }
            let registry = LedgerMetricsBackend.prometheus
            var ledger = AttributionLedger(store: EventStore(pool: pool, catalog: .standard, logger: logger),
                                           reloadableSettings: reloadableSettings, defaultActor: "http-api", logger: logger)
            // Device reads on a standby when one is named (docs/operations.md, "Read replicas").
            let readPool = try database.openReadPool(logger: logger, connections: connections, alongsideDatabaseURL: true)
            defer { readPool?.close() }
            if let readPool {
                ledger = ledger.reading(from: EventStore(pool: readPool, catalog: .standard, logger: logger),
                                        waitingAtMost: DatabaseOptions.readWait())
            }
            let host = host
            let apps = keys.apps.count
            var httpConfiguration = try makeConfiguration(environment: ProcessInfo.processInfo.environment)
            httpConfiguration.applePostbacks = try configured { () throws(ConfigurationError) in
                try configuration.applePostbackSettings()
            }
            let server = LedgerHTTPServer(
                ledger: ledger, reloadableKeys: reloadableKeys,
                configuration: httpConfiguration,
                metrics: registry, logger: logger,
                onServerRunning: { port in
                    writeStatusLine("listening on http://\(host):\(port) (\(apps) app\(apps == 1 ? "" : "s") with keys)", command: "serve")
                })
            // SIGHUP re-reads the apps file: new keys and settings, or the running ones kept.
            let reloader = ConfigurationReloader(
                signals: await ConfigurationReloader.trap(), command: "serve",
                apply: { [appsFilePath = self.apps.appsFile, environment] () throws(ConfigurationError) in
                    let fresh = try ServiceConfiguration.load(environment: environment, appsFilePath: appsFilePath)
                    let keys = try fresh.apiKeys()
                    let settings = try fresh.attributionSettings()
                    reloadableKeys.replace(with: keys)
                    reloadableSettings.replace(with: settings)
                    printWarnings(of: fresh, command: "serve")
                }, logger: logger)
            // One group: SIGTERM or SIGINT stops the server first (it stops accepting connections
            // and lets requests in flight finish), then the projection runner and the sealer, then
            // the pool. A failure of any (a projection that cannot apply) stops the others.
            var services: [(name: String, service: any Service)] = [("pool", pool), ("configuration reloader", reloader)]
            // Listed first, the trace exporter stops last: it flushes the others' spans.
            if let exporter = try TraceExport.bootstrap(command: "serve", environment: ProcessInfo.processInfo.environment) {
                services.insert(("trace exporter", exporter), at: 0)
            }
            if sealEvery > 0 {
                services.append(("sealer", PeriodicSealer(store: ledger.store, interval: .seconds(sealEvery), key: sealKey)))
            }
            if projections {
                services.append(("projection runner",
                                 ProjectionRunner(store: ledger.store, projections: AllProjections.list, logger: logger)))
            }
            services.append(("http server", server))
            try await runUntilSignalled(services, logger: logger)
            writeStatusLine("stopped", command: "serve")
        }
    }
}
