import Foundation
import LedgerDomain
import LedgerFolds
import LedgerPostgres
@testable import LedgerProjections
import LedgerProviders
import LedgerStore
import LedgerTestKit
import Logging
import Testing

/// The runner and the rebuild against the real private PostgreSQL.
@Suite("Projection runner and rebuild", .database)
struct RunnerTests {
    static let projections = ProjectionCatalog.standard
    /// A Branch `v1/open` answer (as in LedgerFoldsTests' provider state tests).
    static let branchAnswer = #"{"session_id":"123","randomized_bundle_token":"RBT-1","randomized_device_token":"RDT-1","identity":"user-9","link":"https://x.app.link/?%24identity_id=1","data":"{\"+clicked_branch_link\":true,\"+is_first_session\":true}"}"#
    /// Google's affirmative conversion answer (as in LedgerFoldsTests' provider state tests).
    static let googleAffirmative = #"{"ad_events":[{"ad_event_id":"Q0owS0NRandom","conversion_metric":"conversion","interaction_type":null,"campaign_type":"UAC","campaign_id":123456789,"campaign_name":"My UAC campaign","ad_type":"ClickToDownload","external_customer_id":123456789,"location":21144,"network_type":"Search","network_subtype":"GoogleSearch","video_id":null,"keyword":null,"match_type":null,"placement":null,"ad_group_id":null,"creative_id":null,"timestamp":1432681913.123456}],"errors":[],"attributed":true}"#

    /// Random device histories over a few devices: SKAN, revenue (with retries), tokens and the
    /// three providers' sends and answers.
    static func randomHistories(seed: UInt64, devices: Int, steps: Int) throws -> [History] {
        var random = SplitMix64(seed: seed)
        var histories = (0..<devices).map { History(device: "device-app1/d\($0)") }
        let start = History.epoch
        for index in histories.indices {
            var history = histories[index]
            let install = try history.add(
                FirstOpen(appID: try AppID("app1"), device: iosDevice(),
                          adServicesToken: LedgerDomain.AdServicesToken(token: Data("token-\(index)".utf8).base64EncodedString(), issuedAt: start)), at: start)
            try history.add(SKANRegistered(), at: start)
            var clock = start
            for step in 0..<steps {
                clock = clock.addingTimeInterval(Double(random.next(upTo: 40_000)))
                switch random.next(upTo: 6) {
                case 0:
                    try history.add(SKANConversionValueUpdated(fineValue: Int(random.next(upTo: 64)),
                                                               coarseValue: [.low, .medium, .high][Int(random.next(upTo: 3))],
                                                               lockWindow: random.next(upTo: 10) == 0), at: clock)
                case 1:
                    let transaction = "t\(random.next(upTo: UInt64(steps)))"  // repeats are retries
                    try history.add(RevenueRecorded(device: iosDevice(), revenue: try Money(amount: Decimal(step % 7) + 0.5,
                                                    currency: try CurrencyCode(["USD", "EUR"][step % 2])),
                                                    kind: step % 3 == 0 ? .adMonetization : .iap, transactionID: transaction), at: clock)
                case 2:
                    let send = try history.requestSend(.appleAdServices, .tokenLookup, cause: install, at: clock)
                    try history.attempt(send, number: 1, status: [404, 200, 400, 500][Int(random.next(upTo: 4))],
                                        body: #"{"attribution":false}"#, at: clock)
                case 3:
                    let send = try history.requestSend(.branch, .open, cause: install, at: clock)
                    try history.attempt(send, number: 1, status: 200,
                                        body: Self.branchAnswer.replacingOccurrences(
                                            of: "RBT-1", with: "RBT-\(random.next(upTo: 2))"), at: clock)
                    try history.add(SendSucceeded(attempt: 1), stream: send, at: clock)
                case 4:
                    let send = try history.requestSend(.google, .conversion, cause: install, at: clock)
                    try history.attempt(send, number: 1, status: 200,
                                        body: Self.googleAffirmative.replacingOccurrences(
                                            of: "Q0owS0NRandom", with: "ad\(random.next(upTo: 3))"), at: clock)
                default:
                    let send = try history.requestSend(.google, .crossNetwork, cause: install, at: clock,
                                                       parameters: ["ad_event_id": "ad\(random.next(upTo: 3))", "attributed": "0"])
                    try history.attempt(send, number: 1, status: random.next(upTo: 2) == 0 ? 200 : 500, body: nil, at: clock)
                }
            }
            histories[index] = history
        }
        return histories
    }

    /// Every table of every projection, dumped.
    static func dumpAll(_ store: EventStore, _ projections: [any Projection] = projections) async throws
        -> [String: [String]]
    {
        try await store.pool.withConnection { connection in
            var dumps: [String: [String]] = [:]
            for projection in projections {
                for table in projection.tableNames { dumps[table] = try tableDump(table, on: connection) }
            }
            return dumps
        }
    }

    // Issue 5: for random event sequences, applying incrementally (in small batches, interleaved
    // with appends) equals a full rebuild, and "as of now" replayed from the log equals the table.
    @Test(arguments: [UInt64(1), 2, 3])
    func incrementalEqualsRebuild(seed: UInt64) async throws {
        try await withStore(catalog: .standard) { store, _ in
            let runner = ProjectionRunner(store: store, projections: Self.projections, batchSize: 7)
            try await runner.prepare()
            let histories = try Self.randomHistories(seed: seed, devices: 4, steps: 25)
            var applied = 0
            for history in histories {
                try await append(history, to: store)
                try await waitForHorizon(store)
                applied += try await runner.catchUp()
            }
            #expect(applied > 0)
            let incremental = try await Self.dumpAll(store)
            #expect(incremental["skan_devices"]?.count == 4)
            #expect((incremental["google_obligations_rows"]?.count ?? 0) > 0)

            let rebuilder = ProjectionRebuilder(store: store, chunkSize: 50, batchSize: 13, logger: TestDatabase.quietLogger)
            for projection in Self.projections { _ = try await rebuilder.rebuild(projection) }
            let rebuilt = try await Self.dumpAll(store)
            #expect(rebuilt == incremental)

            // As of now, replayed from the log alone, equals what the tables hold.
            let skan = SKANDeviceProjection(SKANDeviceReducer())
            let tokens = AdServicesTokenProjection(AdServicesTokenReducer())
            for history in histories {
                let stored = try await skan.storedState(of: history.device, pool: store.pool)
                #expect(try await skan.state(of: history.device, store: store) == stored)
                #expect(try await tokens.state(of: history.device, store: store)
                        == tokens.storedState(of: history.device, pool: store.pool))
            }
        }
    }

    /// Appends `devices` random device histories (no later steps) and applies them incrementally (every
    /// standard projection): the set-up of the tests of a rebuild's two-thread final write.
    static func appendAndCatchUp(_ store: EventStore, seed: UInt64, devices: Int) async throws {
        let runner = ProjectionRunner(store: store, projections: projections, batchSize: 500)
        try await runner.prepare()
        try await append(try randomHistories(seed: seed, devices: devices, steps: 0), to: store)
        try await waitForHorizon(store)
        #expect(try await runner.catchUp() > 0)
    }

    // The runner warns (and names the session) only when committed events have waited behind the
    // horizon at least the threshold: a horizon a moment behind appends in flight is normal, and a
    // long transaction with nothing behind it holds nothing back.
    @Test func theRunnerWarnsOfAHeldHorizonOnlyPastItsThreshold() throws {
        func horizon(waiting: Int64, open: Double) -> ReadHorizon {
            ReadHorizon(transactionID: 42, eventsWaiting: waiting, secondsWaiting: waiting > 0 ? open : 0, holders: [
                ReadHorizon.Holder(pid: 4711, transactionID: 42, database: "other", user: "analyst", application: "psql",
                                   state: "idle in transaction", secondsOpen: open, query: "UPDATE daily SET total = 0"),
            ])
        }
        let threshold = Duration.seconds(60)
        #expect(ProjectionRunner.horizonWarning(horizon(waiting: 3, open: 59.9), after: threshold) == nil)
        #expect(ProjectionRunner.horizonWarning(horizon(waiting: 0, open: 600), after: threshold) == nil)
        let warning = try #require(ProjectionRunner.horizonWarning(horizon(waiting: 3, open: 60), after: threshold))
        #expect(warning["horizon.holder.pid"] == "4711")
        #expect(warning["horizon.holder.database"] == "other")
        #expect(warning["horizon.events_waiting"] == "3")
        #expect(warning["horizon.holder.state"] == "idle in transaction")
        #expect(ProjectionRunner.horizonWarning(horizon(waiting: 3, open: 0.6), after: .milliseconds(500)) != nil)
        // Another role's session, its state and start hidden (no pg_read_all_stats): still named.
        let hidden = ReadHorizon(transactionID: 42, eventsWaiting: 3, secondsWaiting: 90, holders: [
            ReadHorizon.Holder(pid: 4712, transactionID: 42, database: nil, user: "dba", application: nil, state: nil,
                               secondsOpen: nil, query: "<insufficient privilege>"),
        ])
        let named = try #require(ProjectionRunner.horizonWarning(hidden, after: threshold))
        #expect(named["horizon.holder.pid"] == "4712")
        #expect(named["horizon.seconds_waiting"] == "90")
    }

    // Issue 5: a rebuild's final write encodes a long device list on two threads, the back half
    // written on a session of its own (detail rows from both halves); what it stores equals what
    // incremental steps stored.
    @Test func aRebuildOfManyDevicesEqualsIncremental() async throws {
        try await withStore(catalog: .standard) { store, _ in
            let devices = SKANDeviceProjection.parallelEncodingThreshold + 150
            try await Self.appendAndCatchUp(store, seed: 11, devices: devices)
            let incremental = try await Self.dumpAll(store)
            #expect(incremental["skan_devices"]?.count == devices)

            let rebuilder = ProjectionRebuilder(store: store, chunkSize: 1000, logger: TestDatabase.quietLogger)
            for projection in Self.projections { _ = try await rebuilder.rebuild(projection) }
            let rebuilt = try await Self.dumpAll(store)
            #expect(rebuilt["skan_devices"]?.count == devices, "main rows from both halves")
            #expect((rebuilt["adservices_tokens_rows"]?.count ?? 0) >= devices, "detail rows from both halves")
            #expect(rebuilt == incremental)
        }
    }

    /// The SKAN projection, whose shadow main table refuses one device: the front half of a
    /// rebuild's final write fails after the back half committed on its own session.
    struct RefusingOneDevice: Projection {
        let inner = SKANDeviceProjection(SKANDeviceReducer())
        let refused: String
        var name: String { inner.name }
        var version: Int { inner.version }
        var eventTypes: [String] { inner.eventTypes }
        var tableNames: [String] { inner.tableNames }
        var personalFieldsRead: PersonalFieldSelection { inner.personalFieldsRead }
        func createTables(_ tables: ProjectionTables, on connection: PostgresConnection) throws {
            try inner.createTables(tables, on: connection)
            guard tables == .shadow else { return }
            // DDL takes no parameters: the id as a literal.
            let literal = "'" + refused.replacingOccurrences(of: "'", with: "''") + "'"
            try connection.execute("""
                ALTER TABLE \(unescaped: tables.quoted(name)) ADD CONSTRAINT refuses_one CHECK (device_stream_id <> \(unescaped: literal))
                """)
        }
        func apply(_ events: [RecordedEvent], to tables: ProjectionTables, on connection: PostgresConnection) throws {
            try inner.apply(events, to: tables, on: connection)
        }
        func makeBulkBuilder() -> any ProjectionBulkBuilder { inner.makeBulkBuilder() }
    }

    // Issue 5: the final write's back half commits on a session of its own. When the front half
    // then fails, the rebuild fails: the live tables and checkpoint stay as they were, the shadow
    // holds only what the other session committed, and the next rebuild starts from nothing and
    // ends equal to incremental application.
    @Test func aFailedFinalWriteLeavesTheLiveTablesAndTheNextRebuildStartsAfresh() async throws {
        try await withStore(catalog: .standard) { store, _ in
            let devices = SKANDeviceProjection.parallelEncodingThreshold + 50
            try await Self.appendAndCatchUp(store, seed: 12, devices: devices)
            let skan = SKANDeviceProjection(SKANDeviceReducer())
            let incremental = try await Self.dumpAll(store, [skan])
            let checkpoint = try await store.pool.withConnection { connection in
                try tableDump("projection_checkpoints", on: connection)
            }
            // The first device in id order is in the front half.
            let first = try await store.pool.withConnection { connection in
                try connection.query("SELECT min(device_stream_id) FROM skan_devices").single().decode(String.self, at: 0)
            }

            let rebuilder = ProjectionRebuilder(store: store, chunkSize: 1000, logger: TestDatabase.quietLogger)
            let error = await #expect(throws: PostgresError.self) {
                _ = try await rebuilder.rebuild(RefusingOneDevice(refused: first))
            }
            #expect(error?.sqlState == SQLState.checkViolation)
            #expect(try await Self.dumpAll(store, [skan]) == incremental)
            try await store.pool.withConnection { connection in
                #expect(try tableDump("projection_checkpoints", on: connection) == checkpoint)
                let shadow = try connection.query("SELECT count(*), min(device_stream_id) > \(first) FROM skan_devices__shadow").single()
                #expect(try shadow.decode(Int.self, at: 0) == devices - devices / 2, "the back half, committed apart")
                #expect(try shadow.decode(Bool.self, at: 1))
            }

            _ = try await rebuilder.rebuild(skan)
            #expect(try await Self.dumpAll(store, [skan]) == incremental)
        }
    }

    // The progress bar's total: counted for a small log, the planner's estimate for a large one.
    @Test func rebuildTotalIsCountedOrEstimated() async throws {
        try await withStore(catalog: .standard) { store, _ in
            try await append(try Self.randomHistories(seed: 5, devices: 30, steps: 4), to: store)
            try await store.pool.withConnection { connection in
                let types = SKANDeviceProjection(SKANDeviceReducer()).eventTypes
                let exact = try connection.query("SELECT count(*) FROM events WHERE event_type = ANY(\(PostgresQuery.textArrayLiteral(types))::text[])")
                    .single().decode(Int64.self, at: 0)
                #expect(exact > 60)
                let counted = try EventStore.eventCount(ofTypes: types, on: connection)
                #expect(counted.count == exact && !counted.estimated)
                try connection.execute("ANALYZE events")
                let estimate = try EventStore.eventCount(ofTypes: types, estimatingFrom: 1, on: connection)
                #expect(estimate.estimated)
                #expect(abs(estimate.count - exact) <= exact / 10, "estimate \(estimate.count) against \(exact)")
            }
        }
    }

    // Issue 5: a rebuild while writers append concurrently ends equal to incremental application —
    // nothing lost, nothing applied twice — and the live runner keeps going during the rebuild.
    @Test func rebuildDuringConcurrentAppendsEqualsIncremental() async throws {
        try await withStore(catalog: .standard) { store, _ in
            let runner = ProjectionRunner(store: store, projections: Self.projections, batchSize: 50)
            try await runner.prepare()
            let histories = try Self.randomHistories(seed: 42, devices: 8, steps: 30)
            try await append(Array(histories.prefix(2)), to: store)
            try await waitForHorizon(store)
            try await runner.catchUp()

            let rebuilder = ProjectionRebuilder(store: store, chunkSize: 40, batchSize: 20, logger: TestDatabase.quietLogger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for history in histories.dropFirst(2) {
                    group.addTask { try await append(history, to: store) }
                }
                group.addTask {
                    for projection in Self.projections { _ = try await rebuilder.rebuild(projection) }
                }
                group.addTask { for _ in 0..<20 { try await runner.catchUp() } }
                try await group.waitForAll()
            }
            try await waitForHorizon(store)
            try await runner.catchUp()
            let afterRebuild = try await Self.dumpAll(store)

            let statuses = try await store.pool.withConnection { try ProjectionStatus.read(Self.projections, on: $0) }
            #expect(statuses.allSatisfy { $0.eventsBehind == 0 && !$0.isStale })

            // The same events applied incrementally only, from scratch, in small batches.
            try await Self.dropProjections(Self.projections, store: store)
            let incremental = ProjectionRunner(store: store, projections: Self.projections, batchSize: 17)
            try await incremental.prepare()
            try await incremental.catchUp()
            let fromScratch = try await Self.dumpAll(store)
            #expect(fromScratch == afterRebuild)
            #expect((fromScratch["skan_devices"]?.count ?? 0) == 8)
        }
    }

    /// Drops the projections' tables and checkpoint rows.
    static func dropProjections(_ projections: [any Projection], store: EventStore) async throws {
        try await store.pool.withConnection { connection in
            for projection in projections {
                for table in projection.tableNames { try connection.execute("DROP TABLE \(identifier: table)") }
                try connection.execute("DELETE FROM projection_checkpoints WHERE name = \(projection.name)")
            }
        }
    }

    // Issue 5: kill the runner mid-batch (its backend is terminated while the step's transaction
    // is open); after a restart the projection equals a clean rebuild — nothing applied twice.
    @Test func crashMidBatchThenRestartEqualsRebuild() async throws {
        try await withStore(catalog: .standard) { store, database in
            let histories = try Self.randomHistories(seed: 7, devices: 3, steps: 20)
            try await append(histories, to: store)
            try await waitForHorizon(store)
            let skan = SKANDeviceProjection(SKANDeviceReducer())
            let runner = ProjectionRunner(store: store, projections: [skan], batchSize: 5)
            try await runner.prepare()
            try await store.pool.withConnection { _ = try ProjectionRunner.step(skan, store: store, batchSize: 5, on: $0) }

            // A step that stalls after applying its batch, inside its transaction, until killed.
            let stalling = StallingProjection(inner: skan)
            let victim = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            let pid = victim.backendPID
            let crashed = Task.detached { () -> (any Error)? in
                do {
                    _ = try ProjectionRunner.step(stalling, store: store, batchSize: 5, on: victim)
                    return nil
                } catch { return error }
            }
            let killer = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            var killed = false
            for _ in 0..<500 where !killed {
                killed = try killer.query("""
                    SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                    WHERE pid = \(pid) AND query LIKE '%pg_sleep%' AND state = 'active'
                    """).first?.decode(Bool.self, at: 0) ?? false
                if !killed { try await Task.sleep(for: .milliseconds(20)) }
            }
            #expect(killed)
            #expect(await crashed.value != nil)

            try await runner.catchUp()
            let afterCrash = try await Self.dumpAll(store, [skan])
            _ = try await ProjectionRebuilder(store: store, logger: TestDatabase.quietLogger).rebuild(skan)
            let rebuilt = try await Self.dumpAll(store, [skan])
            #expect(afterCrash == rebuilt)
            #expect(afterCrash["skan_devices"]?.count == 3)
            let status = try await store.pool.withConnection { try ProjectionStatus.read([skan], on: $0) }
            #expect(status.first?.eventsApplied == Int64(histories.flatMap(\.events).filter { skan.eventTypes.contains($0.type) }.count))
        }
    }

    // Issue 5, "as of": the state of a device at a past position is what the table held then.
    @Test func asOfAPastPositionReplaysThatState() async throws {
        try await withStore(catalog: .standard) { store, _ in
            let skan = SKANDeviceProjection(SKANDeviceReducer())
            let runner = ProjectionRunner(store: store, projections: [skan])
            try await runner.prepare()
            var history = History()
            try history.add(SKANRegistered(), at: History.epoch)
            try history.add(SKANConversionValueUpdated(fineValue: 5), at: History.epoch.addingTimeInterval(60))
            try await append(history, to: store)
            try await waitForHorizon(store)
            try await runner.catchUp()
            let then = try #require(try await skan.storedState(of: history.device, pool: store.pool))
            let position = try await store.streamVersion(history.device) > 0
                ? try #require(try await store.readStream(history.device, backward: true, limit: 1).first).position : 0

            var later = History()
            try later.add(SKANConversionValueUpdated(fineValue: 9), at: History.epoch.addingTimeInterval(120))
            try await append(later, to: store)
            try await waitForHorizon(store)
            try await runner.catchUp()
            #expect(try await skan.storedState(of: history.device, pool: store.pool)?.skan.conversionValue == 9)
            let asOf = try await skan.state(of: history.device, asOf: .position(position), store: store)
            #expect(asOf == then)
            #expect(asOf.skan.conversionValue == 5)
        }
    }

    // Issue 5: status shows version, checkpoint and lag; a version change is reported stale until rebuilt.
    @Test func statusShowsLagAndStaleVersions() async throws {
        try await withStore(catalog: .standard) { store, _ in
            let skan = SKANDeviceProjection(SKANDeviceReducer())
            let runner = ProjectionRunner(store: store, projections: [skan])
            try await runner.prepare()
            var history = History()
            try history.add(SKANRegistered(), at: History.epoch)
            try history.add(SKANConversionValueUpdated(fineValue: 5), at: History.epoch.addingTimeInterval(60))
            try await append(history, to: store)
            try await waitForHorizon(store)
            var status = try #require(try await store.pool.withConnection { try ProjectionStatus.read([skan], on: $0) }.first)
            #expect(status.eventsBehind == 2 && status.secondsBehind >= 0 && status.eventsApplied == 0 && !status.isStale)
            try await runner.catchUp()
            status = try #require(try await store.pool.withConnection { try ProjectionStatus.read([skan], on: $0) }.first)
            #expect(status.eventsBehind == 0 && status.secondsBehind == 0 && status.eventsApplied == 2)

            let fixed = VersionedProjection(inner: skan, version: skan.version + 1)
            status = try #require(try await store.pool.withConnection { try ProjectionStatus.read([fixed], on: $0) }.first)
            #expect(status.isStale && status.builtWithVersion == skan.version && status.codeVersion == skan.version + 1)
            let report = try await ProjectionRebuilder(store: store, logger: TestDatabase.quietLogger).rebuild(fixed)
            #expect(report.events == 2 && report.version == skan.version + 1)
            status = try #require(try await store.pool.withConnection { try ProjectionStatus.read([fixed], on: $0) }.first)
            #expect(!status.isStale && status.rebuiltAt != nil && status.eventsApplied == 2)
        }
    }
}

/// Appends several histories concurrently-safe, one after another.
func append(_ histories: [History], to store: EventStore) async throws {
    for history in histories { try await append(history, to: store) }
}

/// A projection that applies like `inner`, then stalls in `pg_sleep` inside the step's
/// transaction: a runner caught mid-batch.
struct StallingProjection: Projection {
    let inner: any Projection
    var name: String { inner.name }
    var version: Int { inner.version }
    var eventTypes: [String] { inner.eventTypes }
    var tableNames: [String] { inner.tableNames }
    func createTables(_ tables: ProjectionTables, on connection: PostgresConnection) throws {
        try inner.createTables(tables, on: connection)
    }
    func apply(_ events: [RecordedEvent], to tables: ProjectionTables, on connection: PostgresConnection) throws {
        try inner.apply(events, to: tables, on: connection)
        try connection.execute("SELECT pg_sleep(30)")
    }
    func makeBulkBuilder() -> any ProjectionBulkBuilder { inner.makeBulkBuilder() }
}

/// `inner` with another version number: the same projection after a "fix".
struct VersionedProjection: Projection {
    let inner: any Projection
    let version: Int
    var name: String { inner.name }
    var eventTypes: [String] { inner.eventTypes }
    var tableNames: [String] { inner.tableNames }
    func createTables(_ tables: ProjectionTables, on connection: PostgresConnection) throws {
        try inner.createTables(tables, on: connection)
    }
    func apply(_ events: [RecordedEvent], to tables: ProjectionTables, on connection: PostgresConnection) throws {
        try inner.apply(events, to: tables, on: connection)
    }
    func makeBulkBuilder() -> any ProjectionBulkBuilder { inner.makeBulkBuilder() }
}

