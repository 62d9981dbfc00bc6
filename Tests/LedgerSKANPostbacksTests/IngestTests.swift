import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import Testing
@testable import LedgerSKANPostbacks

// Issue 10: every postback is appended exactly as received, with the network that forwarded it
// and the outcome of the checks; Apple: "count only unique postbacks with signatures you verify".
@Suite("SKAN postback ingest", .database, .serialized)
struct IngestTests {
    func storedEvent(_ id: UUID, in store: EventStore) async throws -> (RecordedEvent, SKANPostbackReceived) {
        let record = try #require(try await store.event(id: id))
        return (record, try LedgerJSON.makeDecoder().decode(SKANPostbackReceived.self, from: record.data))
    }

    @Test("Apple's example is stored as received, verified; sent twice it is one postback and one duplicate")
    func appleExampleAndItsRepeat() async throws {
        try await withStore(catalog: .standard) { store in
            let ingestor = SKANPostbackIngestor(store: store)
            let raw = Data(AppleExamples.v4.utf8)
            let first = try await ingestor.ingest(raw: raw, network: "example-network", receivedAt: receivedAt)
            #expect(first.status == .counted)
            #expect(first.streamID == "skan-525463029/6aafb7a5-0170-41b5-bbe4-fe71dedf1e30")
            let (record, event) = try await storedEvent(first.eventID, in: store)
            #expect(event.raw == AppleExamples.v4)
            #expect(event.forwardingNetwork == "example-network")
            #expect(event.verification == .valid && event.duplicateOf == nil && event.unsignedCheck == .unconfirmed)
            #expect(record.occurredAt == receivedAt)

            let second = try await ingestor.ingest(raw: raw, network: "other-network", receivedAt: receivedAt.addingTimeInterval(60))
            #expect(second.status == .duplicate)
            #expect(second.duplicateOf == first.eventID)
            #expect(try await storedEvent(second.eventID, in: store).1.duplicateOf == first.eventID)
            #expect(try await store.readStream(first.streamID).count == 2)
        }
    }

    @Test("sequences 0, 1 and 2 of one transaction are three postbacks; each repeated is a duplicate")
    func threeSequences() async throws {
        try await withStore(catalog: .standard) { store in
            let signer = TestSigner()
            let ingestor = SKANPostbackIngestor(store: store, verifier: signer.verifier)
            var statuses: [SKANIngestResult.Status] = []
            for sequence in 0...2 {
                let raw = try signer.v4(transaction: "txn-1", sequence: sequence, fine: sequence == 0 ? 12 : nil,
                                        coarse: sequence == 0 ? nil : "medium")
                statuses.append(try await ingestor.ingest(raw: raw, network: "n", receivedAt: receivedAt).status)
                statuses.append(try await ingestor.ingest(raw: raw, network: "n", receivedAt: receivedAt).status)
            }
            #expect(statuses == [.counted, .duplicate, .counted, .duplicate, .counted, .duplicate])
        }
    }

    @Test("a bad signature is kept and flagged, and does not claim the transaction")
    func invalidSignature() async throws {
        try await withStore(catalog: .standard) { store in
            let signer = TestSigner()
            let forged = try TestSigner().v4(transaction: "txn-2", fine: 1)
            let ingestor = SKANPostbackIngestor(store: store, verifier: signer.verifier)
            let bad = try await ingestor.ingest(raw: forged, network: "n", receivedAt: receivedAt)
            #expect(bad.status == .invalidSignature)
            #expect(try await storedEvent(bad.eventID, in: store).1.verification == .invalid)
            let good = try await ingestor.ingest(raw: try signer.v4(transaction: "txn-2", fine: 1), network: "n", receivedAt: receivedAt)
            #expect(good.status == .counted)
        }
    }

    @Test("refused input: a typed error naming the field, and the raw input still kept")
    func refusedInputIsKept() async throws {
        try await withStore(catalog: .standard) { store in
            let ingestor = SKANPostbackIngestor(store: store)
            let cases: [(Data, SKANPostbackError.Kind, String?)] = [
                (Data(#"{"version": "4.0", "#.utf8), .malformedJSON, nil),
                (Data(AppleExamples.replacing(AppleExamples.v4, "conversion-value", "63", "99").utf8), .invalidValue, "conversion-value"),
                (Data(AppleExamples.replacing(AppleExamples.v4, "version", "\"4.0\"", "\"9.9\"").utf8), .unknownVersion, "version"),
                (Data(AppleExamples.replacing(AppleExamples.v4, "version", "\"4.0\"", "\"2.0\"").utf8), .unsupportedVersion, "version"),
                (Data([0x7B, 0xFF, 0x00, 0x7D]), .invalidUTF8, nil),
                (Data(), .malformedJSON, nil),
            ]
            for (raw, kind, field) in cases {
                do {
                    try await ingestor.ingest(raw: raw, network: "n", receivedAt: receivedAt)
                    Issue.record("accepted \(kind)")
                } catch let error as SKANPostbackError {
                    #expect(error.kind == kind)
                    #expect(error.field == field)
                    let id = try #require(error.rejectedEventID)
                    let (record, event) = try await storedEvent(id, in: store)
                    #expect(record.streamID.hasPrefix("skan-rejected-"))
                    #expect(event.rejection?.kind == kind.rawValue && event.rejection?.field == field)
                    #expect(event.verification == (kind == .unsupportedVersion ? .unsupportedVersion : .rejected))
                    let kept = event.rawBase64.flatMap { Data(base64Encoded: $0) } ?? Data(event.raw.utf8)
                    #expect(kept == raw, "the bytes received are kept")
                }
            }
        }
    }

    @Test("bad arguments store nothing; the same event id twice is stored once")
    func argumentsAndIdempotency() async throws {
        try await withStore(catalog: .standard) { store in
            let ingestor = SKANPostbackIngestor(store: store)
            let raw = Data(AppleExamples.v4.utf8)
            await #expect(throws: SKANPostbackError.self) {
                try await ingestor.ingest(raw: raw, network: "", receivedAt: receivedAt)
            }
            await #expect(throws: SKANPostbackError.self) {
                try await ingestor.ingest(raw: raw, network: "n", receivedAt: receivedAt,
                                          reportedValues: .init(conversionValue: 64))
            }
            let count = try await store.pool.query("SELECT count(*) FROM events").single().decode(Int.self, at: 0)
            #expect(count == 0)
            let id = UUID()
            let first = try await ingestor.ingest(raw: raw, network: "n", receivedAt: receivedAt, eventID: id)
            let retry = try await ingestor.ingest(raw: raw, network: "n", receivedAt: receivedAt, eventID: id)
            #expect(!first.wasAlreadyStored && retry.wasAlreadyStored)
            #expect(retry.status == .counted && retry.position == first.position)
        }
    }

    @Test("the network's report of the unsigned values: agreement confirms, a difference is a mismatch")
    func secondSource() async throws {
        try await withStore(catalog: .standard) { store in
            let ingestor = SKANPostbackIngestor(store: store)
            let tampered = Data(AppleExamples.replacing(AppleExamples.v4, "conversion-value", "63", "20").utf8)
            let result = try await ingestor.ingest(raw: tampered, network: "n", receivedAt: receivedAt,
                                                   reportedValues: .init(conversionValue: 63))
            #expect(result.signatureVerified)
            #expect(result.unsignedCheck == .mismatch && result.unsignedMismatches == ["conversion-value"])
            let event = try await storedEvent(result.eventID, in: store).1
            #expect(event.unsignedMismatches == ["conversion-value"] && event.reportedValues?.conversionValue == 63)
        }
    }

    @Test("the same postback ingested concurrently counts once")
    func concurrentRepeats() async throws {
        try await withStore(catalog: .standard) { store in
            let ingestor = SKANPostbackIngestor(store: store)
            let raw = Data(AppleExamples.v4.utf8)
            let statuses = try await withThrowingTaskGroup(of: SKANIngestResult.Status.self) { group in
                for _ in 0..<6 {
                    group.addTask { try await ingestor.ingest(raw: raw, network: "n", receivedAt: receivedAt).status }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == .counted }.count == 1)
            #expect(statuses.filter { $0 == .duplicate }.count == 5)
        }
    }

    @Test("refused input of an app is kept under it, at most N per hour; past that nothing is stored; retries still answer")
    func refusedBoundPerApp() async throws {
        try await withStore(catalog: .standard) { store in
            let ingestor = SKANPostbackIngestor(store: store, refusedPerAppPerHour: 2)
            let app = try AppID("525463029")
            let at = Date(timeIntervalSince1970: 1_763_000_000)
            var kept: [UUID] = []
            for index in 0..<2 {
                do {
                    try await ingestor.ingest(raw: Data("not json \(index)".utf8), network: "n", receivedAt: at, app: app)
                } catch let error as SKANPostbackError {
                    let id = try #require(error.rejectedEventID)
                    let (record, _) = try await storedEvent(id, in: store)
                    #expect(record.streamID.hasPrefix("skan-525463029/rejected/"))
                    #expect(String(decoding: record.metadata, as: UTF8.self).contains("525463029"))
                    kept.append(id)
                }
            }
            #expect(kept.count == 2)
            let before = try await store.pool.query("SELECT count(*) FROM events").single().decode(Int.self, at: 0)
            await #expect(throws: SKANPostbackError.self) {
                try await ingestor.ingest(raw: Data("not json 3".utf8), network: "n", receivedAt: Date(), app: app)
            }
            do {
                try await ingestor.ingest(raw: Data("not json 4".utf8), network: "n", receivedAt: Date(), app: app)
            } catch let error as SKANPostbackError {
                #expect(error.rule == "refused_postback_limit")
                #expect(error.rejectedEventID == nil)
            }
            #expect(try await store.pool.query("SELECT count(*) FROM events").single().decode(Int.self, at: 0) == before)
            // Another app's bound is its own.
            await #expect(throws: SKANPostbackError.self) {
                try await ingestor.ingest(raw: Data("not json".utf8), network: "n", receivedAt: Date(), app: try AppID("999"))
            }
            #expect(try await store.pool.query("SELECT count(*) FROM events").single().decode(Int.self, at: 0) == before + 1)
            // A retry of a kept input (same event id) answers as the first time, bound or not.
            do {
                try await ingestor.ingest(raw: Data("not json 0".utf8), network: "n", receivedAt: at.addingTimeInterval(30),
                                         eventID: kept[0], app: app)
            } catch let error as SKANPostbackError {
                #expect(error.rejectedEventID == kept[0])
            }
        }
    }

    @Test("a postback whose app-id is not the sender's app is refused and nothing is stored")
    func otherAppsPostback() async throws {
        try await withStore(catalog: .standard) { store in
            let ingestor = SKANPostbackIngestor(store: store)
            do {
                try await ingestor.ingest(raw: Data(AppleExamples.v4.utf8), network: "n", receivedAt: Date(), app: try AppID("1"))
                Issue.record("accepted")
            } catch let error as SKANPostbackError {
                #expect(error.kind == .otherApp)
            }
            #expect(try await store.pool.query("SELECT count(*) FROM events").single().decode(Int.self, at: 0) == 0)
        }
    }
}
