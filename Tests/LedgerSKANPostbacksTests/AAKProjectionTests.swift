import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerProjections
import LedgerStore
import LedgerTestKit
import Testing
@testable import LedgerSKANPostbacks

// Apple AdAttributionKit, "Identifying the parameters in a postback": conversion-type download,
// redownload or re-engagement; both systems compete for one conversion, so the report counts
// them side by side, each row naming its system.
@Suite("SKAN postback projection with AdAttributionKit", .database, .serialized)
struct AAKProjectionTests {
    @Test("AAK postbacks are counted per app and source beside SKAN's, re-engagements apart, decoded with the app's model")
    func bothSystems() async throws {
        try await withStore(catalog: .standard) { store in
            let app = ProjectionTests.app
            let skan = TestSigner()
            let aak = AAKTestSigner()
            let skanIngestor = SKANPostbackIngestor(store: store, verifier: skan.verifier)
            let aakIngestor = AAKPostbackIngestor(store: store, verifier: aak.verifier)
            let runner = ProjectionRunner(store: store, projections: [SKANPostbackProjection()], batchSize: 4,
                                          logger: TestDatabase.quietLogger)
            try await runner.prepare()
            try await skanIngestor.configure(model: try ProjectionTests.modelV1())
            try await skanIngestor.ingest(raw: try skan.v4(transaction: "t1", source: "1234", fine: 20), network: "net-1",
                                          receivedAt: receivedAt)
            for (id, type, unsigned, kid) in [
                ("AAK-1", "download", [("conversion-value", "20")], "apple-cas-identifier/0"),
                ("AAK-1", "download", [("conversion-value", "20")], "apple-cas-identifier/0"),  // the same again
                ("AAK-2", "redownload", [("conversion-value", "5")], "apple-cas-identifier/0"),
                ("AAK-3", "re-engagement", [("coarse-conversion-value", "\"high\"")], "apple-cas-identifier/0"),
                ("AAK-4", "download", [("conversion-value", "30")], "apple-development-identifier/1"),
            ] {
                try await aakIngestor.ingest(raw: try aak.stanza(id: id, app: app, type: type, kid: kid, unsigned: unsigned),
                                             network: "net-1", receivedAt: receivedAt, allowDevelopmentKeys: true)
            }
            try await waitForHorizon(store)
            try await runner.catchUp()
            let rows = try await store.pool.withConnection { try SKANPostbackProjection().report(appID: app, on: $0) }
            #expect(rows.map(\.system).sorted() == ["aak", "skan"])
            let skanRow = try #require(rows.first { $0.system == "skan" })
            #expect(skanRow.installs == 1 && skanRow.reengagements == 0 && skanRow.conversions == ["purchase": 1])
            let aakRow = try #require(rows.first { $0.system == "aak" })
            #expect(aakRow.source == "1234" && aakRow.adNetworkID == "example.adattributionkit")
            // The development postback is kept but never counted; the repeat is counted once.
            #expect(aakRow.installs == 1 && aakRow.redownloads == 1 && aakRow.reengagements == 1)
            #expect(aakRow.postbacks == 3 && aakRow.duplicates == 1)
            #expect(aakRow.conversions == ["purchase": 1, "tutorial": 1])
            #expect(aakRow.reengagementConversions == ["purchase": 1])
            #expect(aakRow.revenue["USD"] == .init(min: "0.99", max: "4.99"))
            let kept = try await store.pool.withConnection { connection in
                try connection.query("SELECT count(*) FROM skan_postbacks WHERE system = 'aak' AND development").single()
                    .decode(Int.self, at: 0)
            }
            #expect(kept == 1)
        }
    }
}
