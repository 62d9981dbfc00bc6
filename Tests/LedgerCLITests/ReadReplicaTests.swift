import AsyncHTTPClient
import Foundation
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import NIOCore
import NIOHTTP1
import Testing

/// Reads on a streaming standby (PostgreSQL: "Hot Standby"), as `LEDGER_READ_DATABASE_URL`
/// sends them: the gap-safe rule holds there, "as of position P" waits until the standby has
/// replayed P or says it lags, and the read-only commands read the standby alone.
@Suite("Reads on a streaming standby", .database,
       .disabled(if: TestDatabase.partitionsEvents, "runs on clusters of its own, which the partitioned run does not change"),
       .serialized)
struct ReadReplicaTests {
    static func event(_ number: Int) -> NewEvent {
        NewEvent(type: "SKANRegistered", data: Data(#"{"skan_version": "4.0", "n": \#(number)}"#.utf8), occurredAt: Date())
    }

    /// A GET with the test app's API key: the status, the body and `Retry-After`.
    static func get(_ url: String) async throws -> (status: Int, body: String, retryAfter: String?) {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Authorization", value: "Bearer \(ServeRestartTests.key)")
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1_048_576)
        return (Int(response.status.code), String(buffer: body), response.headers.first(name: "Retry-After"))
    }

    /// Waits until the standby has replayed everything the primary has written so far.
    static func waitForReplay(_ pair: ReplicatedPair) async throws {
        let position = try pair.primaryWALPosition()
        #expect(try await waitUntil(timeout: .seconds(30), every: .milliseconds(10)) { try pair.standbyHasReplayed(position) },
                "the standby replays the primary's WAL")
    }

    @Test("the gap-safe rule, as of position P, and the read-only commands on a standby", .timeLimit(.minutes(3)))
    func readsOnAStandby() async throws {
        let began = ContinuousClock.now
        let pair = try await TestDatabase.offThePool { try ReplicatedPair.start(synchronous: false) }
        defer { pair.remove() }
        let migrated = try await LedgerProcess.runDetached(["migrate", "--database-url", pair.primaryConninfo])
        try #require(migrated.status == 0, "\(migrated.stderr)")

        let primaryPool = PostgresPool(conninfo: pair.primaryConninfo, maxConnections: 2, logger: TestDatabase.quietLogger)
        defer { primaryPool.close() }
        let primary = EventStore(pool: primaryPool, logger: TestDatabase.quietLogger)
        let standbyPool = PostgresPool(conninfo: pair.standbyConninfo, maxConnections: 2, logger: TestDatabase.quietLogger)
        defer { standbyPool.close() }
        let standby = EventStore(pool: standbyPool, logger: TestDatabase.quietLogger)

        // 1. Gap-safe on the standby: a transaction takes the earlier position and stays open
        // while a later position commits; the standby, having replayed that commit, shows a
        // gap-safe reader neither until the earlier one commits too.
        let earlier = try PostgresConnection(conninfo: pair.primaryConninfo, logger: TestDatabase.quietLogger)
        try earlier.run(script: "BEGIN")
        let earlierAppend = try primary.append([Self.event(1)], to: "device-app1/replica-early", on: earlier)
        let laterAppend = try await primary.append([Self.event(2)], to: "device-app1/replica-late")
        let (earlierPosition, laterPosition) = (earlierAppend.events[0].position, laterAppend.events[0].position)
        #expect(earlierPosition < laterPosition)
        try await Self.waitForReplay(pair)
        let standbyRows = try await standbyPool.query("SELECT count(*) FROM events WHERE position = \(laterPosition)").single()
            .decode(Int.self, at: 0)
        #expect(standbyRows == 1, "the standby holds the later event's row")
        let ours: Set<Int64> = [earlierPosition, laterPosition]
        let whileOpen = try await standby.readAll(after: .start).events.map(\.position).filter(ours.contains)
        #expect(whileOpen.isEmpty, "a gap-safe reader on the standby sees no event while an earlier one may still commit: \(whileOpen)")
        await #expect(throws: EventStoreError.self) { try await standby.waitUntilReadable(through: laterPosition, timeout: .milliseconds(200)) }
        try earlier.run(script: "COMMIT")
        try await Self.waitForReplay(pair)
        let afterCommit = try await standby.readAll(after: .start).events.map(\.position).filter(ours.contains)
        #expect(afterCommit == [earlierPosition, laterPosition], "both, in the global order, once the earlier one committed")
        try await standby.waitUntilReadable(through: laterPosition, timeout: .seconds(5))

        // 2. "As of position P" while the standby lags: its replay paused, a new event is on the
        // primary alone; the wait ends in the typed refusal that names both positions, and
        // `ledger replay --as-of P` on LEDGER_READ_DATABASE_URL exits 14. Resumed, both answer.
        let standbyAdmin = try PostgresConnection(conninfo: pair.standbyConninfo, logger: TestDatabase.quietLogger)
        try standbyAdmin.execute("SELECT pg_wal_replay_pause()")
        let device = "device-app1/replica-lag"
        let lagging = try await primary.append([Self.event(3)], to: device).events[0].position
        do {
            try await standby.waitUntilReadable(through: lagging, timeout: .milliseconds(300))
            Issue.record("the standby answered for position \(lagging) while its replay was paused")
        } catch let EventStoreError.readDatabaseBehind(position, readableThrough, waited) {
            #expect(position == lagging && readableThrough == laterPosition && waited >= .milliseconds(300))
        }
        // Reads go to the read database alone: LEDGER_DATABASE_URL names a server that is not there.
        let readEnvironment = [
            "LEDGER_DATABASE_URL": "host=\(pair.directory)/nowhere port=5432 dbname=ledger connect_timeout=1",
            "LEDGER_READ_DATABASE_URL": pair.standbyConninfo, "LEDGER_READ_WAIT_SECONDS": "0.3",
        ]
        let behind = try await LedgerProcess.runDetached(["replay", "--device", device, "--as-of", "\(lagging)"], environment: readEnvironment)
        #expect(behind.status == 14, "\(behind.stdout)\n\(behind.stderr)")
        #expect(behind.stderr.contains("read_database_behind") && behind.stderr.contains("not yet \(lagging)"), "\(behind.stderr)")
        // `ledger serve` with LEDGER_READ_DATABASE_URL: the same read over HTTP answers 503
        // `read_database_behind` with Retry-After while the standby lags, 200 once it caught up.
        let app = ServeRestartTests.app
        let httpEvent = try await primary.append([Self.event(4)], to: "device-\(app)/replica-http").events[0].position
        let keyFile = URL(fileURLWithPath: pair.directory + "/api-key")
        try Data(ServeRestartTests.key.utf8).write(to: keyFile)
        let digest = try await LedgerProcess.runDetached(["serve", "--hash-key"], stdin: keyFile).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let server = try await ServeRestartTests.startServe(
            conninfo: pair.primaryConninfo, digest: digest, logPath: pair.directory + "/serve.log", arguments: ["--seal-every", "0"],
            environment: ["LEDGER_READ_DATABASE_URL": pair.standbyConninfo, "LEDGER_READ_WAIT_SECONDS": "0.3"])
        defer { if server.process.isRunning { server.process.terminate() } }
        let historyURL = server.baseURL + "/v1/apps/\(app)/devices/replica-http/history?as_of_position=\(httpEvent)"
        let lagging503 = try await Self.get(historyURL)
        #expect(lagging503.status == 503 && lagging503.body.contains("read_database_behind") && lagging503.retryAfter == "1",
                "\(lagging503)")
        try standbyAdmin.execute("SELECT pg_wal_replay_resume()")
        var waitingEnvironment = readEnvironment
        waitingEnvironment["LEDGER_READ_WAIT_SECONDS"] = "30"
        let replayed = try await LedgerProcess.runDetached(["replay", "--device", device, "--as-of", "\(lagging)"], environment: waitingEnvironment)
        #expect(replayed.status == 0 && replayed.stdout.contains("SKANRegistered"), "\(replayed.stdout)\n\(replayed.stderr)")

        var lastAnswer: (status: Int, body: String, retryAfter: String?)?
        #expect(try await waitUntil(timeout: .seconds(30), every: .milliseconds(50)) {
            let answer = try await Self.get(historyURL)
            lastAnswer = answer
            return answer.status == 200 && answer.body.contains("SKANRegistered")
        }, "the HTTP history read answers from the standby once it caught up: \(String(describing: lastAnswer))")

        // 3. The stored export from the standby is the primary's log, and verifies.
        try await Self.waitForReplay(pair)
        let exported = try await LedgerProcess.runDetached(["export"], environment: readEnvironment)
        #expect(exported.status == 0, "\(exported.stderr)")
        #expect(exported.stdout.split(separator: "\n").count >= 3, "\(exported.stdout)")
        let fromPrimary = try await LedgerProcess.runDetached(["export", "--database-url", pair.primaryConninfo])
        #expect(exported.stdout == fromPrimary.stdout, "the standby's stored export is the primary's")
        print("read-replica test took \(ServeRestartTests.seconds(ContinuousClock.now - began))")
    }
}
