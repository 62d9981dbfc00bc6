import Crypto
import Foundation

/// Re-checks a stored-form export (``StoredExportLine``) with no database: every event's hash
/// from its own fields and its stream's previous hash, every stream's versions and recording
/// times, every seal's digest from the hashes of the events it covers in global order, and, with a
/// public key, every seal's signature. The first line that fails is named by its number.
public struct StoredExportVerifier {
    /// What the check found.
    public struct Report: Sendable, Hashable {
        /// Event lines checked.
        public var eventsChecked = 0
        /// Streams seen.
        public var streamsChecked = 0
        /// Seal lines checked.
        public var sealsChecked = 0
        /// Seal signatures checked (with a public key).
        public var sealSignaturesChecked = 0
        /// The first line that failed (from 1), or nil.
        public var failedLine: Int?
        /// What failed, for a person.
        public var problem: String?
        /// True when every line checked out.
        public var isIntact: Bool { problem == nil }
    }

    /// The seals' public key; every seal must be signed by it when given.
    public let publicKey: SealPublicKey?

    /// A verifier.
    public init(publicKey: SealPublicKey? = nil) { self.publicKey = publicKey }

    private struct StreamState {
        var version: Int64
        var hash: Data
        var recordedAt: Int64
    }

    private struct Kind: Decodable { var kind: String }

    /// Checks `lines` (the export's lines, in order; empty lines are skipped).
    public func verify(lines: some Sequence<Substring>) -> Report {
        var report = Report()
        var streams: [String: StreamState] = [:]
        // The events in file order (the global order): their transaction id, position and hash.
        var globalOrder: [(transaction: UInt64, position: Int64, hash: Data)] = []
        var sealCursor = 0
        var previousDigest: Data?
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        var number = 0
        func fail(_ message: String) -> Report {
            var failed = report
            failed.failedLine = number
            failed.problem = "line \(number): \(message)"
            return failed
        }
        for line in lines {
            number += 1
            if line.isEmpty { continue }
            let bytes = Data(line.utf8)
            guard let kind = try? decoder.decode(Kind.self, from: bytes) else { return fail("not a line of a stored export (not JSON, or no kind)") }
            switch kind.kind {
            case "event":
                guard let event = try? decoder.decode(StoredExportLine.Event.self, from: bytes),
                    let eventID = UUID(uuidString: event.eventID), let transaction = UInt64(event.transactionID),
                    let stored = Self.bytes(hex: event.hash), stored.count == 32
                else { return fail("an event line with a missing or malformed field") }
                guard report.sealsChecked == 0 else { return fail("an event after the seals") }
                let state = streams[event.streamID]
                if state == nil { report.streamsChecked += 1 }
                let expected = (state?.version ?? 0) + 1
                guard event.streamVersion == expected else {
                    return fail("event \(event.eventID) of stream \(event.streamID) has version \(event.streamVersion), not \(expected): an event is missing or repeated")
                }
                let computed = EventHash.compute(
                    previous: state?.hash, stream: event.streamID, version: event.streamVersion, eventID: eventID, type: event.eventType,
                    schemaVersion: event.schemaVersion, data: Array(event.data.utf8), metadata: Array(event.metadata.utf8),
                    occurredAtMicroseconds: event.occurredAtMicroseconds, recordedAtMicroseconds: event.recordedAtMicroseconds)
                guard computed == stored else {
                    return fail("event \(event.eventID) (stream \(event.streamID), version \(event.streamVersion)) does not match its hash: the line, or one before it in its stream, was changed")
                }
                if let state, event.recordedAtMicroseconds < state.recordedAt {
                    return fail("event \(event.eventID) (stream \(event.streamID), version \(event.streamVersion)) was recorded before the event it follows")
                }
                if let last = globalOrder.last, (transaction, event.position) <= (last.transaction, last.position) {
                    return fail("event \(event.eventID) is out of the global order (transaction, position)")
                }
                streams[event.streamID] = StreamState(version: event.streamVersion, hash: stored, recordedAt: event.recordedAtMicroseconds)
                globalOrder.append((transaction, event.position, stored))
                report.eventsChecked += 1
            case "seal":
                guard let line = try? decoder.decode(StoredExportLine.SealLine.self, from: bytes), let seal = try? line.seal.seal() else {
                    return fail("a seal line with a missing or malformed field")
                }
                guard seal.number == Int64(report.sealsChecked + 1) else { return fail("seal \(seal.number) is not the next seal") }
                guard seal.previousDigest == previousDigest else { return fail("seal \(seal.number) does not chain from the seal before it") }
                var hasher = SHA256()
                if let previousDigest { hasher.update(data: previousDigest) }
                var count: Int64 = 0
                while sealCursor < globalOrder.count,
                    (globalOrder[sealCursor].transaction, globalOrder[sealCursor].position) <= (seal.upTo.transactionID, seal.upTo.position)
                {
                    hasher.update(data: globalOrder[sealCursor].hash)
                    sealCursor += 1
                    count += 1
                }
                guard Data(hasher.finalize()) == seal.digest, count == seal.eventCount else {
                    return fail("seal \(seal.number) (through position \(seal.upTo.position)) covers \(seal.eventCount) events but the export holds \(count) before it, or their hashes or order differ")
                }
                if let publicKey {
                    guard let signature = seal.signature, seal.signingKeyID == publicKey.keyID, publicKey.isValid(signature, for: seal) else {
                        return fail("seal \(seal.number) carries no valid signature by key \(publicKey.keyID)")
                    }
                    report.sealSignaturesChecked += 1
                }
                previousDigest = seal.digest
                report.sealsChecked += 1
            default:
                return fail("unknown kind '\(kind.kind)'")
            }
        }
        return report
    }

    static func bytes(hex: String) -> Data? { SealCheckpoint.bytes(hex: hex) }
}
