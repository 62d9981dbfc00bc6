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
        /// Events after the last seal in the file: checked for their chains, but no seal commits to them.
        public var unsealedEvents = 0
        /// The checkpoint's seal, when one was given and the export holds it unchanged.
        public var checkpointSeal: Int64?
        /// The first line that failed (from 1), or nil.
        public var failedLine: Int?
        /// What failed, for a person.
        public var problem: String?
        /// True when every line checked out.
        public var isIntact: Bool { problem == nil }
    }

    /// The seals' public key; every seal must be signed by it when given.
    public let publicKey: SealPublicKey?
    /// A seal an auditor kept (``SealCheckpoint``): the export must hold it unchanged.
    public let checkpoint: Seal?

    /// A verifier.
    public init(publicKey: SealPublicKey? = nil, checkpoint: Seal? = nil) {
        self.publicKey = publicKey
        self.checkpoint = checkpoint
    }

    /// An event line waiting for an earlier version of its stream (a stream's versions need not
    /// follow the global order: two transactions may append to one stream in either order of
    /// their transaction ids).
    private struct PendingEvent {
        var line: Int
        var event: StoredExportLine.Event
        var eventID: UUID
        var hash: Data
    }

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
        var pending: [String: [Int64: PendingEvent]] = [:]
        var sealCursor = 0
        var previousDigest: Data?
        var sawCheckpoint = false
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
                    let stored = Hex.bytes(event.hash), stored.count == 32
                else { return fail("an event line with a missing or malformed field") }
                guard report.sealsChecked == 0 else { return fail("an event after the seals") }
                if let last = globalOrder.last, (transaction, event.position) <= (last.transaction, last.position) {
                    return fail("event \(event.eventID) is out of the global order (transaction, position)")
                }
                globalOrder.append((transaction, event.position, stored))
                report.eventsChecked += 1
                if streams[event.streamID] == nil, pending[event.streamID] == nil { report.streamsChecked += 1 }
                let next = (streams[event.streamID]?.version ?? 0) + 1
                guard event.streamVersion >= next, pending[event.streamID]?[event.streamVersion] == nil else {
                    return fail("event \(event.eventID) of stream \(event.streamID) repeats version \(event.streamVersion)")
                }
                pending[event.streamID, default: [:]][event.streamVersion] = PendingEvent(
                    line: number, event: event, eventID: eventID, hash: stored)
                // Chain every event of the stream that is now next in version order.
                while let waiting = pending[event.streamID]?[(streams[event.streamID]?.version ?? 0) + 1] {
                    let state = streams[event.streamID]
                    pending[event.streamID]?[waiting.event.streamVersion] = nil
                    if let problem = chain(waiting, after: state) {
                        var failed = report
                        failed.failedLine = waiting.line
                        failed.problem = "line \(waiting.line): \(problem)"
                        return failed
                    }
                    streams[event.streamID] = StreamState(version: waiting.event.streamVersion, hash: waiting.hash,
                                                          recordedAt: waiting.event.recordedAtMicroseconds)
                }
                if pending[event.streamID]?.isEmpty == true { pending[event.streamID] = nil }
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
                if let checkpoint, checkpoint.number == seal.number {
                    guard checkpoint.digest == seal.digest, checkpoint.upTo == seal.upTo, checkpoint.eventCount == seal.eventCount,
                        checkpoint.previousDigest == seal.previousDigest
                    else { return fail("seal \(seal.number) differs from the checkpoint's: events it covered were changed, removed or reordered") }
                    sawCheckpoint = true
                    report.checkpointSeal = seal.number
                }
                previousDigest = seal.digest
                report.sealsChecked += 1
            default:
                return fail("unknown kind '\(kind.kind)'")
            }
        }
        number += 1
        if let (stream, waiting) = pending.first(where: { !$0.value.isEmpty }), let first = waiting.values.min(by: { $0.line < $1.line }) {
            var failed = report
            failed.failedLine = first.line
            let have = streams[stream]?.version ?? 0
            failed.problem = "line \(first.line): stream \(stream) has no version \(have + 1) before version \(first.event.streamVersion): an event is missing"
            return failed
        }
        report.unsealedEvents = globalOrder.count - sealCursor
        if let checkpoint, !sawCheckpoint {
            return fail("the export holds no seal \(checkpoint.number): the log it was made from does not extend the checkpoint")
        }
        if publicKey != nil, report.sealsChecked == 0, report.eventsChecked > 0 {
            return fail("no seal covers the export's events: with a public key, at least one signed seal is expected")
        }
        return report
    }

    /// Checks `waiting` as the next event of its stream after `state` (nil: the stream's first).
    private func chain(_ waiting: PendingEvent, after state: StreamState?) -> String? {
        let event = waiting.event
        let computed = EventHash.compute(
            previous: state?.hash, stream: event.streamID, version: event.streamVersion, eventID: waiting.eventID, type: event.eventType,
            schemaVersion: event.schemaVersion, data: Array(event.data.utf8), metadata: Array(event.metadata.utf8),
            occurredAtMicroseconds: event.occurredAtMicroseconds, recordedAtMicroseconds: event.recordedAtMicroseconds)
        guard computed == waiting.hash else {
            return "event \(event.eventID) (stream \(event.streamID), version \(event.streamVersion)) does not match its hash: "
                + "the line, or one before it in its stream, was changed"
        }
        if let state, event.recordedAtMicroseconds < state.recordedAt {
            return "event \(event.eventID) (stream \(event.streamID), version \(event.streamVersion)) was recorded before the event it follows"
        }
        return nil
    }


}
