import ArgumentParser
import AttributionLedger
import Foundation
import LedgerDecisions
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import LedgerHTTPTransport
import LedgerMigrations
import LedgerPostgres
import LedgerPrivateCluster
import LedgerProviders
import LedgerStore

/// `ledger demo`: a realistic simulated day, end to end, in under a minute.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Play a simulated day against fake providers: installs, sends, answers, decisions.",
        discussion: helpText("""
            Needs nothing configured: starts the private PostgreSQL (or uses LEDGER_DATABASE_URL),
            applies the schema, starts fake Google, Apple AdServices, Branch and Singular servers on
            127.0.0.1, and records a day of iOS and Android installs, sessions, purchases in several
            currencies, AdServices tokens (one expired), Branch links and SKAN updates across the
            three windows on a simulated clock. The real worker sends every request over HTTP; the
            decider decides each install; Google is told who won. Each run adds new devices (a run
            id in their names), so it can be run again.

            Exit codes: 0 done, 1 the demo failed, 3 the database is unreachable.

            Examples:
              swift run ledger demo
              ledger demo --json     # the summary as JSON, for scripts
            """)
    )

    @OptionGroup var database: DatabaseOptions

    @Flag(help: "Print the summary as JSON.")
    var json = false

    func run() async throws {
        try await reportingFailures {
            let logger = makeLogger("ledger.demo")
            let target = try database.resolve(logger: logger)
            let connection = try PostgresConnection(conninfo: target.conninfo, logger: logger)
            do {
                _ = try Migrator(directory: Migration.defaultDirectory()).apply(on: connection)
            } catch let error as MigrationError {
                throw CLIFailure(exitCode: .schemaRefused, message: "\(error)")
            }
            let pool = PostgresPool(conninfo: target.conninfo, maxConnections: 8, logger: logger)
            defer { pool.close() }
            let store = EventStore(pool: pool, catalog: .standard, logger: logger)
            let before = try EventStore.lastPosition(on: connection)
            let fakes = FakeProviders(
                credentials: .init(googleDevToken: "demo-dev-token", googleLinkID: "DEMOLINK", branchKey: "key_live_demo",
                                   branchSecret: "secret_live_demo", singularSDKKey: "demo-sdk-key"),
                logger: logger)
            try await fakes.start()
            let transport = HTTPProviderTransport(logger: logger)
            let started = ContinuousClock.now
            do {
                let rules = ProviderSendRules(
                    google: GoogleConversionRequestBuilder(link: fakes.googleLink, endpoint: fakes.googleEndpoint),
                    adServices: fakes.appleEndpoint, branch: fakes.branchConfiguration, singular: fakes.singularConfiguration)
                let simulatedStart = Date().addingTimeInterval(300)
                let clock = ManualClock(simulatedStart)
                let factClock = ManualClock(simulatedStart)
                let worker = SendWorker(
                    store: store, rules: rules, transport: transport,
                    configuration: .init(workerID: "demo-worker", slots: 8, lease: 30, requestTimeout: .seconds(5)),
                    clock: clock, jitter: { 0.5 }, logger: logger)
                let run = String(UUID().uuidString.lowercased().prefix(6))
                let day = DemoDay(
                    store: store, fakes: fakes, worker: worker,
                    ledger: AttributionLedger(store: store, clock: factClock, defaultActor: "ledger.demo", logger: logger),
                    factClock: factClock,
                    decider: AttributionDecider(store: store, logger: logger), clock: clock, run: run, start: simulatedStart)
                _ = try await day.play { step in
                    if !json { FileHandle.standardError.write(Data("ledger demo: \(step)…\n".utf8)) }
                }
                var summary = try await DemoSummary.read(after: before, devices: day.devices.map(\.stream), store: store)
                summary.fakeProviderAnomalies = fakes.anomalies.map(\.description)
                if json {
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.sortedKeys]
                    print(String(decoding: try encoder.encode(summary), as: UTF8.self))
                } else {
                    print(summary.render(database: target.cluster == nil ? "LEDGER_DATABASE_URL" : "the private PostgreSQL"))
                    let elapsed = ContinuousClock.now - started
                    print("\n(\(elapsed.formatted(.units(allowed: [.seconds], fractionalPart: .show(length: 1)))) of real time)")
                }
            } catch {
                await transport.shutdown()
                await fakes.stop()
                throw error
            }
            await transport.shutdown()
            await fakes.stop()
        }
    }
}
