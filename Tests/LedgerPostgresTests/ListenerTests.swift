import Foundation
import LedgerPostgres
import LedgerTestKit
import Testing

@Suite("LISTEN / NOTIFY", .database, .timeLimit(.minutes(3)))
struct ListenerTests {
    @Test("a listener receives a NOTIFY sent from another connection, and again after its session is killed")
    func receivesAndReconnects() async throws {
        try await TestDatabase.with(migrated: false) { database in
            let listener = PostgresListener(conninfo: database.conninfo, channels: ["ledger_events"],
                                            logger: TestDatabase.quietLogger)
            defer { listener.stop() }
            let events = DeadlineReader(listener.events)
            #expect(await events.next() == .element(.connected(reconnected: false)))

            let sender = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try sender.notify(channel: "ledger_events", payload: "position=42")
            try sender.notify(channel: "other_channel", payload: "ignored")
            guard case .element(.notification(let first)) = await events.next() else {
                Issue.record("expected a notification")
                return
            }
            #expect(first.channel == "ledger_events")
            #expect(first.payload == "position=42")
            #expect(first.backendPID == sender.backendPID)

            // Kill the listener's session: it reconnects, says so, and listens again.
            let listenerPIDs = try sender.query(
                "SELECT pid FROM pg_stat_activity WHERE query LIKE 'LISTEN%' AND datname = current_database()"
            ).map { try $0.decode(Int32.self, at: 0) }
            #expect(listenerPIDs.count == 1)
            for pid in listenerPIDs { try sender.execute("SELECT pg_terminate_backend(\(pid))") }
            #expect(await events.next() == .element(.connected(reconnected: true)))
            try sender.notify(channel: "ledger_events", payload: "after")
            guard case .element(.notification(let second)) = await events.next() else {
                Issue.record("expected a notification after reconnecting")
                return
            }
            #expect(second.payload == "after")
        }
    }

    @Test("stopping the listener ends its event sequence")
    func stopEnds() async throws {
        try await TestDatabase.with(migrated: false) { database in
            let listener = PostgresListener(conninfo: database.conninfo, channels: ["c"], logger: TestDatabase.quietLogger)
            let events = DeadlineReader(listener.events)
            #expect(await events.next() == .element(.connected(reconnected: false)))
            listener.stop()
            #expect(await events.next() == .ended)
        }
    }
}
