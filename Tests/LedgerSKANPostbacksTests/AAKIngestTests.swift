import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import Testing
@testable import LedgerSKANPostbacks

// Apple AdAttributionKit, "Verifying a postback": "Count only unique postbacks with signatures
// you verify"; "For production flows, always use the production key".
@Suite("AdAttributionKit postback ingest", .database, .serialized)
struct AAKIngestTests {
    func stored(_ id: UUID, in store: EventStore) async throws -> (RecordedEvent, AAKPostbackReceived) {
        let record = try #require(try await store.event(id: id))
        return (record, try LedgerJSON.makeDecoder().decode(AAKPostbackReceived.self, from: record.data))
    }

    func aakEventCount(_ store: EventStore) async throws -> Int {
        try await store.pool.query("SELECT count(*) FROM events WHERE event_type = 'AAKPostbackReceived'").single()
            .decode(Int.self, at: 0)
    }

    @Test("Apple's developer-settings example is refused unless the app allows development keys, then stored byte for byte")
    func developmentKeyNeedsConsent() async throws {
        try await withStore(catalog: .standard) { store in
            let ingestor = AAKPostbackIngestor(store: store)
            let raw = Data(AppleAAKExamples.developerSettingsStanza.utf8)
            let refusal = await #expect(throws: SKANPostbackError.self) {
                try await ingestor.ingest(raw: raw, network: "example-network", receivedAt: receivedAt)
            }
            #expect(refusal?.kind == .developmentKey && refusal?.field == "jws-string.header.kid" && refusal?.rule == "production_key_only")
            let count0 = try await aakEventCount(store)
            #expect(count0 == 0)

            let result = try await ingestor.ingest(raw: raw, network: "example-network", receivedAt: receivedAt,
                                                   allowDevelopmentKeys: true)
            #expect(result.status == .counted && result.development && result.postback.isReEngagement)
            #expect(result.streamID == "skan-10738027756/aak/85546EB7-FD39-44BC-8990-C98A4AC36A49")
            let (record, event) = try await stored(result.eventID, in: store)
            #expect(event.raw == AppleAAKExamples.developerSettingsStanza)
            #expect(event.verification == .valid && event.keyID == "apple-development-identifier/1" && event.development)
            #expect(record.occurredAt == receivedAt)
        }
    }

    @Test("a postback sent twice is one record counted and one duplicate; sequences 0, 1 and 2 are three postbacks")
    func duplicatesAndSequences() async throws {
        try await withStore(catalog: .standard) { store in
            let signer = AAKTestSigner()
            let ingestor = AAKPostbackIngestor(store: store, verifier: signer.verifier)
            var statuses: [SKANIngestResult.Status] = []
            var first: UUID?
            for sequence in 0...2 {
                let raw = try signer.stanza(id: "5E0C5C4A-0000-4000-8000-000000000001", sequence: sequence)
                let once = try await ingestor.ingest(raw: raw, network: "n", receivedAt: receivedAt)
                let twice = try await ingestor.ingest(raw: raw, network: "other", receivedAt: receivedAt)
                if sequence == 0 {
                    first = once.eventID
                    #expect(twice.duplicateOf == first)
                }
                statuses += [once.status, twice.status]
            }
            #expect(statuses == [.counted, .duplicate, .counted, .duplicate, .counted, .duplicate])
            let count6 = try await aakEventCount(store)
            #expect(count6 == 6)
        }
    }

    @Test("a bad signature is kept and flagged, and does not claim the postback identifier")
    func invalidSignature() async throws {
        try await withStore(catalog: .standard) { store in
            let signer = AAKTestSigner()
            let ingestor = AAKPostbackIngestor(store: store, verifier: signer.verifier)
            let forged = try AAKTestSigner().stanza(id: "forged-1")
            let bad = try await ingestor.ingest(raw: forged, network: "n", receivedAt: receivedAt)
            #expect(bad.status == .invalidSignature && !bad.signatureVerified)
            #expect(try await stored(bad.eventID, in: store).1.verification == .invalid)
            let genuine = try await ingestor.ingest(raw: try signer.stanza(id: "forged-1"), network: "n", receivedAt: receivedAt)
            #expect(genuine.status == .counted && genuine.duplicateOf == nil)
        }
    }

    @Test("did-win false is recorded as not won; the same event id retried writes nothing")
    func notWonAndRetry() async throws {
        try await withStore(catalog: .standard) { store in
            let signer = AAKTestSigner()
            let ingestor = AAKPostbackIngestor(store: store, verifier: signer.verifier)
            let raw = try signer.stanza(id: "lost-1", didWin: false)
            let id = UUID()
            let first = try await ingestor.ingest(raw: raw, network: "n", receivedAt: receivedAt, eventID: id)
            let again = try await ingestor.ingest(raw: raw, network: "n", receivedAt: receivedAt, eventID: id)
            #expect(first.status == .notWon && again.status == .notWon && again.wasAlreadyStored)
            let count1 = try await aakEventCount(store)
            #expect(count1 == 1)
        }
    }

    @Test("an app may not store another app's postback; schema refusals store nothing")
    func otherAppAndRefusals() async throws {
        try await withStore(catalog: .standard) { store in
            let signer = AAKTestSigner()
            let ingestor = AAKPostbackIngestor(store: store, verifier: signer.verifier)
            let other = await #expect(throws: SKANPostbackError.self) {
                try await ingestor.ingest(raw: try signer.stanza(id: "p-1", app: "525463029"), network: "n",
                                          receivedAt: receivedAt, app: try AppID("10738027756"))
            }
            #expect(other?.kind == .otherApp && other?.field == "jws-string.payload.advertised-item-identifier")
            let broken = await #expect(throws: SKANPostbackError.self) {
                try await ingestor.ingest(raw: Data(#"{"jws-string": 42}"#.utf8), network: "n", receivedAt: receivedAt)
            }
            #expect(broken?.field == "jws-string" && broken?.rule == "expected_string")
            let count0 = try await aakEventCount(store)
            #expect(count0 == 0)
        }
    }
}
