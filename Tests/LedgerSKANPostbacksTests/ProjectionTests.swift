import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerProjections
import LedgerStore
import LedgerTestKit
import Testing
@testable import LedgerSKANPostbacks

// Singular SKAdNetwork 4 implementation guide: validation and aggregation of postbacks, decoding
// the conversion value with the app's conversion model; issue 10: model changes rebuild the
// projection, old decodings stay.
@Suite("SKAN postback projection", .database, .serialized)
struct ProjectionTests {
    static let app = "525463029"

    static func money(_ amount: String) throws -> Money { try Money(amount: amount, currency: CurrencyCode("USD")) }

    /// v1: fine 1–10 tutorial, 11–63 purchase worth 0.99–4.99 USD; coarse high = purchase.
    static func modelV1() throws -> SKANConversionModelConfigured {
        SKANConversionModelConfigured(
            appID: app, modelVersion: 1,
            fine: [.init(from: 1, to: 10, meaning: .init(events: ["tutorial"])),
                   .init(from: 11, to: 63, meaning: .init(events: ["purchase"],
                                                          revenue: .init(min: try money("0.99"), max: try money("4.99"))))],
            coarse: ["high": .init(events: ["purchase"]), "medium": .init(events: ["engaged"])], configuredBy: "growth-team")
    }

    /// v2: every fine value 1–63 means "level_up"; coarse unchanged.
    static func modelV2() throws -> SKANConversionModelConfigured {
        var model = try modelV1()
        model.modelVersion = 2
        model.fine = [.init(from: 1, to: 63, meaning: .init(events: ["level_up"]))]
        return model
    }

    func runner(_ store: EventStore) -> ProjectionRunner {
        ProjectionRunner(store: store, projections: [SKANPostbackProjection()], batchSize: 4, logger: TestDatabase.quietLogger)
    }

    func report(_ store: EventStore) async throws -> [SKANDailyReport] {
        try await store.pool.withConnection { try SKANPostbackProjection().report(appID: Self.app, on: $0) }
    }

    @Test("installs, duplicates, invalid signatures, conversions and revenue per network, source and day")
    func aggregates() async throws {
        try await withStore(catalog: .standard) { store in
            let signer = TestSigner()
            let ingestor = SKANPostbackIngestor(store: store, verifier: signer.verifier)
            let runner = runner(store)
            try await runner.prepare()
            try await ingestor.configure(model: try Self.modelV1())
            var ids: [String: UUID] = [:]
            for (name, raw, network) in [
                ("a0", try signer.v4(transaction: "a", fine: 20), "net-1"),
                ("a0-again", try signer.v4(transaction: "a", fine: 20), "net-1"),
                ("a1", try signer.v4(transaction: "a", sequence: 1, coarse: "high"), "net-1"),
                ("b0", try signer.v4(transaction: "b", redownload: true, fine: 5), "net-1"),
                ("c0", try signer.v4(transaction: "c", fine: 30), "net-1"),
                ("forged", try TestSigner().v4(transaction: "d", fine: 40), "net-1"),
                ("lost", try signer.v4(transaction: "e", didWin: false, fine: 40), "net-1"),
                ("other-source", try signer.v4(transaction: "f", source: "77", fine: 2), "net-2"),
            ] {
                ids[name] = try await ingestor.ingest(raw: raw, network: network, receivedAt: receivedAt).eventID
            }
            try await waitForHorizon(store)
            try await runner.catchUp()
            let rows = try await report(store)
            #expect(rows.count == 2)
            let main = try #require(rows.first { $0.network == "net-1" })
            #expect(main.day == "2026-03-02" && main.source == "5239" && main.adNetworkID == "net.skadnetwork")
            #expect(main.installs == 2 && main.redownloads == 1 && main.postbacks == 4)
            #expect(main.duplicates == 1 && main.invalidSignatures == 1 && main.notWon == 1)
            #expect(main.modelVersion == 1)
            #expect(main.conversions == ["purchase": 3, "tutorial": 1])
            #expect(main.revenue["USD"] == .init(min: "1.98", max: "9.98"))
            let other = try #require(rows.first { $0.network == "net-2" })
            #expect(other.installs == 1 && other.conversions == ["tutorial": 1] && other.source == "77")
            let stored = ids
            let statuses = try await store.pool.withConnection { connection in
                try stored.mapValues { try SKANPostbackProjection().status(of: $0, on: connection) }
            }
            #expect(statuses["a0-again"] == "duplicate" && statuses["forged"] == "invalid_signature"
                    && statuses["lost"] == "not_won" && statuses["a1"] == "counted")
        }
    }

    // The ingestor finds repeats on the stream skan-<app-id>-<transaction-id>: per app. A replay
    // must count what the ingestor counted.
    @Test("the same transaction-id in two apps is two installs, as the ingestor counts them")
    func repeatsArePerApp() async throws {
        try await withStore(catalog: .standard) { store in
            let signer = TestSigner()
            let ingestor = SKANPostbackIngestor(store: store, verifier: signer.verifier)
            let runner = runner(store)
            try await runner.prepare()
            let first = try await ingestor.ingest(raw: try signer.v4(transaction: "t", fine: 1), network: "net-1",
                                                  receivedAt: receivedAt)
            let second = try await ingestor.ingest(raw: try signer.v4(transaction: "t", app: "999", fine: 1), network: "net-1",
                                                   receivedAt: receivedAt)
            #expect(first.status == .counted && second.status == .counted)
            try await waitForHorizon(store)
            try await runner.catchUp()
            let statuses = try await store.pool.withConnection { connection in
                try [first.eventID, second.eventID].map { try SKANPostbackProjection().status(of: $0, on: connection) }
            }
            #expect(statuses == ["counted", "counted"])
        }
    }

    @Test("a new model version recomputes the report; the old version's decodings stay")
    func modelChange() async throws {
        try await withStore(catalog: .standard) { store in
            let signer = TestSigner()
            let ingestor = SKANPostbackIngestor(store: store, verifier: signer.verifier)
            let runner = runner(store)
            try await runner.prepare()
            let early = try await ingestor.ingest(raw: try signer.v4(transaction: "a", fine: 20), network: "n", receivedAt: receivedAt)
            try await waitForHorizon(store)
            try await runner.catchUp()
            #expect(try await report(store).first?.conversions == [:])  // no model yet
            #expect(try await report(store).first?.installs == 1)

            try await ingestor.configure(model: try Self.modelV1())
            try await waitForHorizon(store)
            try await runner.catchUp()
            #expect(try await report(store).first?.conversions == ["purchase": 1])

            try await ingestor.configure(model: try Self.modelV2())
            try await ingestor.ingest(raw: try signer.v4(transaction: "b", fine: 3), network: "n", receivedAt: receivedAt)
            try await waitForHorizon(store)
            try await runner.catchUp()
            let after = try #require(try await report(store).first)
            #expect(after.modelVersion == 2 && after.conversions == ["level_up": 2] && after.revenue.isEmpty)
            let decodings = try await store.pool.withConnection { try SKANPostbackProjection().decodings(of: early.eventID, on: $0) }
            #expect(decodings == [1: ["purchase"], 2: ["level_up"]])

            // Versions are consecutive: configuring version 2 again is refused.
            await #expect(throws: EventStoreError.self) { try await ingestor.configure(model: try Self.modelV2()) }
        }
    }

    @Test("an unsigned value the network contradicts: the install counts, the conversion is not decoded")
    func mismatchNotDecoded() async throws {
        try await withStore(catalog: .standard) { store in
            let signer = TestSigner()
            let ingestor = SKANPostbackIngestor(store: store, verifier: signer.verifier)
            let runner = runner(store)
            try await runner.prepare()
            try await ingestor.configure(model: try Self.modelV1())
            try await ingestor.ingest(raw: try signer.v4(transaction: "a", fine: 20), network: "n", receivedAt: receivedAt,
                                      reportedValues: .init(conversionValue: 2))
            try await ingestor.ingest(raw: try signer.v4(transaction: "b", fine: 2), network: "n", receivedAt: receivedAt,
                                      reportedValues: .init(conversionValue: 2))
            try await waitForHorizon(store)
            try await runner.catchUp()
            let row = try #require(try await report(store).first)
            #expect(row.installs == 2 && row.unsignedMismatches == 1 && row.conversions == ["tutorial": 1])
        }
    }

    @Test("a rebuild from the log equals the tables built step by step")
    func rebuildEqualsIncremental() async throws {
        try await withStore(catalog: .standard) { store in
            let signer = TestSigner()
            let ingestor = SKANPostbackIngestor(store: store, verifier: signer.verifier)
            let runner = runner(store)
            try await runner.prepare()
            try await ingestor.ingest(raw: try signer.v4(transaction: "x", fine: 7), network: "n", receivedAt: receivedAt)
            try await ingestor.configure(model: try Self.modelV1())
            for index in 0..<9 {
                let transaction = "t\(index % 4)"
                let sequence = index / 4 % 3
                try await ingestor.ingest(raw: try signer.v4(transaction: transaction, sequence: sequence,
                                                             fine: sequence == 0 ? index * 7 : nil,
                                                             coarse: sequence == 0 ? nil : "medium"),
                                          network: "n\(index % 2)", receivedAt: receivedAt.addingTimeInterval(Double(index) * 40_000))
                if index == 5 { try await ingestor.configure(model: try Self.modelV2()) }
            }
            _ = try? await ingestor.ingest(raw: Data("nope".utf8), network: "n", receivedAt: receivedAt)
            try await waitForHorizon(store)
            try await runner.catchUp()
            let projection = SKANPostbackProjection()
            func dump() async throws -> [String: [String]] {
                try await store.pool.withConnection { connection in
                    try Dictionary(uniqueKeysWithValues: projection.tableNames.map { table in
                        (table, try connection.query("SELECT t::text FROM \(identifier: table) AS t").map {
                            try $0.decode(String.self, at: 0)
                        }.sorted())
                    })
                }
            }
            let incremental = try await dump()
            #expect(incremental["skan_postbacks"]?.count == 11)
            #expect((incremental["skan_postbacks_daily"]?.count ?? 0) > 1)
            let rebuilder = ProjectionRebuilder(store: store, chunkSize: 5, batchSize: 3, logger: TestDatabase.quietLogger)
            _ = try await rebuilder.rebuild(projection)
            #expect(try await dump() == incremental)
        }
    }

    @Test("a postback appended without the ingestor is verified by the projection with Apple's key")
    func appendedDirectly() async throws {
        try await withStore(catalog: .standard) { store in
            let runner = runner(store)
            try await runner.prepare()
            var ids: [UUID] = []
            for text in [AppleExamples.v4, AppleExamples.replacing(AppleExamples.v4, "source-identifier", "\"5239\"", "\"5240\"")] {
                let event = SKANPostbackReceived(raw: text, forwardingNetwork: "cli", receivedAt: receivedAt)
                let new = NewEvent(type: SKANPostbackReceived.eventType, data: try EventCatalog.standard.encode(event),
                                   occurredAt: receivedAt)
                ids.append(new.id)
                try await store.append([new], to: "skan-525463029-direct-\(ids.count)")
            }
            try await waitForHorizon(store)
            try await runner.catchUp()
            let stored = ids
            let statuses = try await store.pool.withConnection { connection in
                try stored.map { try SKANPostbackProjection().status(of: $0, on: connection) }
            }
            #expect(statuses == ["counted", "invalid_signature"])
        }
    }
}
