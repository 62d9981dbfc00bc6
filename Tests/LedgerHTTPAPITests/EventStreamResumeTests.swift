import AttributionLedger
import Foundation
import LedgerHTTPAPI
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import Logging
import NIOHTTP1
import Prometheus
import ServiceLifecycle
import Synchronization
import Testing

/// Reconnecting with `Last-Event-ID` resumes exactly, while appends run and one commits out of
/// position order; a stream ends when its client goes or the server shuts down.
@Suite("Event stream: resume and lifetime", .database)
struct EventStreamResumeTests {
    @Test("killed mid-stream and resumed with Last-Event-ID: every event once, in log order, none skipped")
    func resumeUnderConcurrentAppends() async throws {
        try await withAPI { api in
            for index in 0..<5 { try await EventStreamTests.append(api, firstOpenJSON(device: "early-\(index)")) }

            // An append of this app held open: its position is below every position the appends
            // below take, but it commits after them.
            let database = api.pool.configuration.conninfo
            let slow = try PostgresConnection(conninfo: database, logger: TestDatabase.quietLogger)
            try slow.run(script: "BEGIN")
            let held = try EventStore(pool: api.pool, logger: TestDatabase.quietLogger).append(
                [NewEvent(type: "Held", data: Data("{}".utf8), metadata: Data(#"{"actor":"test","app_id":"\#(appA)"}"#.utf8),
                          occurredAt: Date())],
                to: "device-\(appA)/held", on: slow).events[0].position

            // The app's events committed before it (the first opens and the sends they planned).
            let committedBefore = try await EventStreamTests.logOrder(api, app: appA).count

            // Appends go on until five have committed after the kill, however fast the stream
            // catches up with them before it.
            let appendsAfterKill = Atomic<Int>(-1)
            let appender = Task {
                var index = 0
                while index < 40 || appendsAfterKill.load(ordering: .acquiring) < 5 {
                    try await EventStreamTests.append(api, firstOpenJSON(device: "late-\(index)"))
                    index += 1
                    if appendsAfterKill.load(ordering: .acquiring) >= 0 { appendsAfterKill.add(1, ordering: .releasing) }
                }
            }
            let first = try await EventStreamClient.open(api, "/v1/apps/\(appA)/events/stream?after=0").client
            #expect(first.status == 200)
            #expect(try await first.waitForMessages(committedBefore).count == committedBefore)
            // Later appends have committed, with higher positions, and are not sent before the held one.
            #expect(try await waitUntil {
                try await api.pool.query("SELECT count(*) FROM events WHERE position > \(held)").single().decode(Int.self, at: 0) >= 5
            })
            #expect(first.messages.count == committedBefore)
            try slow.run(script: "COMMIT")

            // Killed mid-stream, while the appends still run.
            _ = try await first.waitForMessages(committedBefore + 10)
            first.kill()
            let before = first.messages.map(\.id)
            appendsAfterKill.store(0, ordering: .releasing)
            #expect(before.count >= committedBefore + 10)
            #expect(before.contains(held))
            #expect(before.firstIndex(of: held) == committedBefore, "the held event is sent first once it commits")
            let last = try #require(before.last)

            // `after=0` as well: the header wins.
            let second = try await EventStreamClient.open(api, "/v1/apps/\(appA)/events/stream?after=0",
                                                          headers: [("Last-Event-ID", String(last))]).client
            defer { second.kill() }
            try await appender.value
            let expected = try await EventStreamTests.logOrder(api, app: appA)
            #expect(expected.count > before.count, "the appends went on after the kill")
            #expect(Set(expected).count == expected.count)
            let after = try await second.waitForMessages(expected.count - before.count).map(\.id)
            #expect(before + after == expected)
            #expect(Set(before + after).count == before.count + after.count, "no event twice")
        }
    }

    @Test("a client that goes away leaves no stream behind")
    func disconnectEndsTheStream() async throws {
        try await withAPI(configure: { $0.eventStreamHeartbeat = .milliseconds(50) }) { api in
            func openStreams() async throws -> Double? {
                let text = String(decoding: try await api.send(.GET, "/metrics", key: nil).body, as: UTF8.self)
                return prometheusSamples(text, prefix: "ledger_http_event_streams_open").values.first
            }
            let client = try await EventStreamClient.open(api, "/v1/apps/\(appA)/events/stream").client
            #expect(try await waitUntil { try await openStreams() == 1 })
            client.kill()
            #expect(try await waitUntil { try await openStreams() == 0 })
        }
    }

    @Test("graceful shutdown ends an open stream, so the server stops", .timeLimit(.minutes(2)))
    func gracefulShutdownEndsStreams() async throws {
        try await TestDatabase.with { database in
            let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 4, logger: TestDatabase.quietLogger)
            defer { pool.close() }
            let ledger = AttributionLedger(pool: pool, logger: TestDatabase.quietLogger)
            let keys = try APIKeys(digests: [appA: [APIKeys.digest(of: keyA)]])
            let (ports, continuation) = AsyncStream<Int>.makeStream()
            let server = LedgerHTTPServer(
                ledger: ledger, keys: keys, configuration: LedgerHTTPConfiguration(host: "127.0.0.1", port: 0),
                metrics: PrometheusCollectorRegistry(), logger: TestDatabase.quietLogger,
                onServerRunning: { port in continuation.yield(port) })
            let group = ServiceGroup(services: [pool, server], logger: Logger(label: "test.group"))
            let returned = Atomic<Bool>(false)
            let running = Task {
                try await group.run()
                returned.store(true, ordering: .sequentiallyConsistent)
            }
            defer { running.cancel() }
            var iterator = ports.makeAsyncIterator()
            let port = try #require(await iterator.next())
            let api = RunningAPI(baseURL: "http://127.0.0.1:\(port)", port: port, pool: pool, metrics: PrometheusCollectorRegistry())
            try await EventStreamTests.append(api, skanRegisteredJSON(device: "g1"))
            let client = try await EventStreamClient.open(api, "/v1/apps/\(appA)/events/stream").client
            defer { client.kill() }
            #expect(try await client.waitForMessages(1).count == 1)

            await group.triggerGracefulShutdown()
            #expect(try await waitUntil(timeout: .seconds(20)) { returned.load(ordering: .sequentiallyConsistent) },
                    "the group's run returns")
            #expect(try await waitUntil(timeout: .seconds(5)) { client.hasEnded }, "the client sees the stream end")
        }
    }
}
