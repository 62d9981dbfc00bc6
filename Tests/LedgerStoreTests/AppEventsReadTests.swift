import Foundation
import LedgerPostgres
@testable import LedgerStore
import LedgerTestKit
import Testing

/// One app's events read gap-safely (`EventFilter.app`), and a read that finds none of them still
/// moves past the other apps' events, without ever passing one of the app's that commits later.
@Suite("Reading one app's events", .database)
struct AppEventsReadTests {
    static func event(_ n: Int, app: String) -> NewEvent {
        NewEvent(type: "SessionStarted", data: Data("{\"n\":\(n)}".utf8),
                 metadata: Data("{\"actor\":\"test\",\"app_id\":\"\(app)\"}".utf8), occurredAt: Date())
    }

    @Test("an empty read for a quiet app moves the checkpoint past the other apps' events")
    func quietAppSkipsOthersTail() async throws {
        try await withStore { store in
            try await store.append([Self.event(1, app: "app.one")], to: "device-app.one/d1")
            for n in 0..<5 { try await store.append([Self.event(n, app: "app.two")], to: "device-app.two/d\(n)") }
            try await waitForHorizon(store, count: 6)
            let filter = EventFilter(app: "app.one")
            let first = try await store.readAllSkippingUnmatched(after: .start, limit: 100, filter: filter)
            #expect(first.events.map(\.streamID) == ["device-app.one/d1"])
            let quiet = try await store.readAllSkippingUnmatched(after: first.checkpoint, limit: 100, filter: filter)
            #expect(quiet.events.isEmpty)
            let last = try await store.readAll(after: .start, limit: 100).events.last?.checkpoint
            #expect(quiet.checkpoint == last, "past app.two's events")

            try await store.append([Self.event(2, app: "app.one")], to: "device-app.one/d1")
            try await waitForHorizon(store, count: 7)
            let next = try await store.readAllSkippingUnmatched(after: quiet.checkpoint, limit: 100, filter: filter)
            #expect(next.events.map(\.streamVersion) == [2])
        }
    }

    @Test("an empty read never moves past an event of the app whose transaction is still open")
    func neverPastAnOpenTransaction() async throws {
        try await withStore { store, database throws in
            let slow = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try slow.run(script: "BEGIN")
            let held = try store.append([Self.event(1, app: "app.one")], to: "device-app.one/held", on: slow)
            try await store.append([Self.event(2, app: "app.two")], to: "device-app.two/d1")
            let filter = EventFilter(app: "app.one")
            let during = try await store.readAllSkippingUnmatched(after: .start, limit: 100, filter: filter)
            #expect(during.events.isEmpty)
            try slow.run(script: "COMMIT")
            try await waitForHorizon(store, count: 2)
            let after = try await store.readAllSkippingUnmatched(after: during.checkpoint, limit: 100, filter: filter)
            #expect(after.events.map(\.position) == [held.events[0].position])
        }
    }
}
