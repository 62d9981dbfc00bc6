import Foundation
import LedgerDomain
import LedgerPostgres
@testable import LedgerStore
import LedgerTestKit
import Testing

/// The store names no stream category or event type of its own: which types end a stream come
/// from the catalog, which streams make a history from a ``StreamSelection``. These check that
/// what it is given agrees with the database and refuses what could reach its SQL.
@Suite("Store: stream policy from the catalog", .database)
struct StoreTenantPolicyTests {
    /// The catalog's stream-ending types are exactly the database's terminal types, on whichever
    /// `events` layout this run uses (the append statements' function, and the partitioned
    /// layout's key trigger when it exists).
    @Test func streamEndingTypesMatchTheDatabase() async throws {
        try await withStore { _, database in
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            let definitions = try connection.query("""
                SELECT pg_get_functiondef(p.oid) FROM pg_proc p
                WHERE p.proname IN ('ledger_refuse_second_terminal', 'ledger_claim_event_keys')
                """).map { try $0.decode(String.self, at: 0) }
            #expect(!definitions.isEmpty)
            for definition in definitions {
                guard let list = definition.range(of: #"event_type IN \(([^)]*)\)"#, options: .regularExpression)
                else { continue }
                let names = Set(definition[list].split(separator: "'").enumerated()
                    .filter { $0.offset % 2 == 1 }.map { String($0.element) })
                #expect(names == EventCatalog.standard.streamEndingTypes)
            }
            #expect(EventCatalog.standard.streamEndingTypes == ["SendSucceeded", "SendFailed", "SendCancelled"])
        }
    }

    /// A link's field is written into the history query as a literal: anything but a plain name
    /// is refused before any SQL runs.
    @Test func aLinkThatIsNotAPlainNameIsRefused() async throws {
        try await withStore { store, _ in
            let hostile = StreamSelection(streams: ["device-com.example.game/x"], linked: [
                .init(eventType: "SendRequested", field: "device_stream_id') OR true --", value: "x"),
            ])
            await #expect(throws: EventStoreError.self) { try await store.readHistory(of: hostile) }
            let badType = StreamSelection(streams: [], linked: [.init(eventType: "Send'Requested", field: "a", value: "x")])
            await #expect(throws: EventStoreError.self) { try await store.readHistory(of: badType) }
        }
    }

    /// A device's history is its stream, its decisions and its sends' streams, and nothing else.
    @Test func aDeviceHistoryNamesItsThreeKindsOfStream() {
        let selection = StreamSelection.deviceHistory("device-com.example.game/d1")
        #expect(selection.streams == ["device-com.example.game/d1", "decision-com.example.game/d1"])
        #expect(selection.linked == [.init(eventType: "SendRequested", field: "device_stream_id",
                                           value: "device-com.example.game/d1")])
        #expect(StreamSelection.deviceHistory("skan-com.example.game/t1").streams == ["skan-com.example.game/t1"])
        #expect(StreamSelection.deviceHistory("skan-com.example.game/t1").linked.isEmpty)
    }

    /// The privacy policy: a device's stream is its own subject, a send's is linked.
    @Test func dataSubjectsOfTheLedger() {
        #expect(DataSubjects.ledger.isSubject("device-com.example.game/d1"))
        #expect(DataSubjects.ledger.isLinked("send-6f1c0e9e-1d2b-4c3a-9e8f-0a1b2c3d4e5f"))
        #expect(!DataSubjects.ledger.isSubject("decision-com.example.game/d1"))
        #expect(!DataSubjects.ledger.isLinked("skan-com.example.game/t1"))
    }
}
