import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import Testing

@Suite("ledger tenancy check", .database)
struct TenancyCommandTests {
    static func event(app: String, type: String = "LegacyFact") throws -> NewEvent {
        let metadata = try EventCatalog.standard.encode(metadata: EventMetadata(actor: "old-ledger", appID: try AppID(app)))
        return NewEvent(type: type, data: Data(#"{"n": 1}"#.utf8), metadata: metadata, occurredAt: Date(timeIntervalSince1970: 1_763_000_000))
    }

    @Test("lists streams named before '/', flags the one two apps wrote into and the names two apps could begin; exit 11")
    func listsLegacyStreams() async throws {
        try await TestDatabase.with { database in
            let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 2, logger: TestDatabase.quietLogger)
            defer { pool.close() }
            let store = EventStore(pool: pool, logger: TestDatabase.quietLogger)
            // The audit's collision, as the old naming wrote it: both apps' device in one stream.
            try await store.append([try Self.event(app: "com.acme.game")], to: "device-com.acme.game-lite-x")
            try await store.append([try Self.event(app: "com.acme.game-lite")], to: "device-com.acme.game-lite-x")
            try await store.append([try Self.event(app: "com.acme.game")], to: "decision-com.acme.game-solo")
            // Streams named the current way are not listed.
            try await store.append([try Self.event(app: "com.acme.game")], to: "device-com.acme.game/lite-x")

            let result = try await LedgerProcess.runDetached(["tenancy", "check", "--json", "--database-url", database.conninfo])
            #expect(result.status == 11, "\(result.stderr)")
            let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
            let streams = try #require(report["legacy_streams"] as? [[String: Any]])
            #expect(streams.map { $0["stream_id"] as? String } == ["decision-com.acme.game-solo", "device-com.acme.game-lite-x"])
            let mixed = streams[1]
            #expect(mixed["mixed"] as? Bool == true)
            #expect(mixed["ambiguous"] as? Bool == true)
            #expect(mixed["recorded_apps"] as? [String] == ["com.acme.game", "com.acme.game-lite"])
            #expect(mixed["candidate_apps"] as? [String] == ["com.acme.game", "com.acme.game-lite"])
            #expect(mixed["event_count"] as? Int == 2)
            #expect(streams[0]["mixed"] as? Bool == false)
            #expect(streams[0]["ambiguous"] as? Bool == false)

            let text = try await LedgerProcess.runDetached(["tenancy", "check", "--database-url", database.conninfo])
            #expect(text.stdout.contains("device-com.acme.game-lite-x"))
            #expect(text.stdout.contains("MIXED AMBIGUOUS"))
            #expect(text.stdout.contains("2 legacy streams, 1 mixed, 1 ambiguous"))
        }
    }

    @Test("a ledger with per-app streams named the current way only: exit 0")
    func clean() async throws {
        try await TestDatabase.with { database in
            let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 2, logger: TestDatabase.quietLogger)
            defer { pool.close() }
            let store = EventStore(pool: pool, logger: TestDatabase.quietLogger)
            try await store.append([try Self.event(app: "com.acme.game")], to: "device-com.acme.game/x")
            try await store.append([try Self.event(app: "com.acme.game")], to: "skan-model-123")
            let result = try await LedgerProcess.runDetached(["tenancy", "check", "--database-url", database.conninfo])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("no legacy stream"))
        }
    }
}
