import Crypto
import Foundation
import LedgerDomain
import LedgerPostgres
import Logging

/// What `verify` found.
public struct VerificationReport: Sendable, Hashable {
    /// Events whose hash was recomputed.
    public var eventsChecked: Int
    /// Streams whose chain was walked.
    public var streamsChecked: Int
    /// Seals whose digest was recomputed.
    public var sealsChecked: Int
    /// Seals whose signature verified with the public key given (0 when none was given).
    public var sealsSignatureChecked: Int = 0
    /// Unsigned seals before the first signed one (made before the ledger had a key), accepted
    /// because the first signed seal's digest chains over them.
    public var sealsUnsignedBeforeFirstSigned: Int = 0
    /// Events checked against the store's catalog (0 for a store without one). Events whose
    /// personal fields were erased are checked as far as what is left allows: not counted.
    public var eventsCatalogChecked: Int = 0
    /// Events after the last seal: checked for their hash chains, but nothing outside their own
    /// streams yet commits to them (a removed tail among them cannot be seen until sealed).
    public var unsealedEvents: Int = 0
    /// The first and last global positions of the unsealed events.
    public var unsealedPositions: ClosedRange<Int64>?
    /// The checkpoint the log was checked against, when one was given: its seal number.
    public var checkpointSeal: Int64?
    /// The first broken link, or nil when the history is intact.
    public var problem: VerificationProblem?
    /// True when nothing was found broken.
    public var isIntact: Bool { problem == nil }
}

/// A broken link in the ledger's history.
public struct VerificationProblem: Sendable, Hashable, CustomStringConvertible {
    /// What kind of break.
    public enum Kind: String, Sendable, Hashable {
        /// The stored hash does not match the event's content and its predecessor: the event (or
        /// one before it in its stream) was edited.
        case hashMismatch = "hash_mismatch"
        /// A stream's versions are not 1, 2, 3…: an event was removed.
        case versionGap = "version_gap"
        /// An event's `recorded_at` lies before its predecessor's in the stream: appends never do
        /// that (each takes at least its predecessor's time), so the event was inserted back-dated.
        case timeOrder = "time_order"
        /// A seal's digest or count does not match the events it covers: events were removed,
        /// added behind it, or reordered.
        case sealMismatch = "seal_mismatch"
        /// A seal is unsigned, signed by another key, or its signature does not verify: the seal
        /// was written or rewritten by someone without the signing key.
        case sealSignature = "seal_signature"
        /// The log does not extend the checkpoint given: the checkpoint's seal is missing or
        /// differs, so events it covered were changed, removed or reordered since.
        case checkpointMismatch = "checkpoint_mismatch"
        /// An event the store's catalog refuses (an unknown type or schema version, a payload
        /// or metadata that does not decode, a broken domain rule): the store never appends
        /// one, so it was written around the store.
        case catalog = "catalog"
    }
    /// What kind of break.
    public var kind: Kind
    /// The stream of the event at fault, when one is named.
    public var streamID: String?
    /// The event at fault, when one is named.
    public var eventID: UUID?
    /// The global position of the event at fault, or the last position of the seal at fault.
    public var position: Int64?
    /// The event's version in its stream.
    public var streamVersion: Int64?
    /// The seal at fault.
    public var sealNumber: Int64?
    /// The global positions the broken seal covers (after the previous seal, through its own).
    public var positions: ClosedRange<Int64>?
    /// A sentence for a person.
    public var message: String

    /// Creates a problem.
    public init(kind: Kind, streamID: String? = nil, eventID: UUID? = nil, position: Int64? = nil, streamVersion: Int64? = nil,
                sealNumber: Int64? = nil, positions: ClosedRange<Int64>? = nil, message: String) {
        self.kind = kind
        self.streamID = streamID
        self.eventID = eventID
        self.position = position
        self.streamVersion = streamVersion
        self.sealNumber = sealNumber
        self.positions = positions
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

extension EventStore {
    /// Recomputes every stream's hash chain and every seal's digest; with `publicKey`, checks
    /// every seal's signature; with `checkpoint`, checks that the log still extends it.
    ///
    /// Reads in one repeatable-read snapshot, so concurrent appends neither disturb nor get
    /// counted. Stops at the first broken link and names it: the event (hash, version gap, time
    /// order), or the seal and the positions it covers.
    /// - Parameters:
    ///   - publicKey: the seals' public key; every seal must carry a valid signature by it.
    ///   - checkpoint: a seal an auditor kept outside the database (``SealCheckpoint``).
    ///   - progress: called now and then with (events checked, events in all).
    public func verify(publicKey: SealPublicKey? = nil, checkpoint: SealCheckpoint? = nil,
                       progress: (@Sendable (Int, Int) -> Void)? = nil) async throws -> VerificationReport {
        try await pool.withConnection { connection in
            try connection.transaction(isolation: .repeatableRead) { connection in
                var report = try Self.verifyChains(on: connection, progress: progress)
                guard report.isIntact else { return report }
                report.problem = try verifyCatalog(on: connection, report: &report)
                guard report.isIntact else { return report }
                report.problem = try Self.verifySeals(on: connection, publicKey: publicKey, report: &report)
                if report.problem == nil, let checkpoint {
                    report.checkpointSeal = checkpoint.sealNumber
                    report.problem = try Self.verifyCheckpoint(checkpoint, publicKey: publicKey, on: connection)
                }
                return report
            }
        }
    }

    /// Checks every event, its personal fields opened where their key still exists, with the
    /// store's validator (the catalog's rules, as at append): the first it refuses is named.
    func verifyCatalog(on connection: PostgresConnection, report: inout VerificationReport) throws -> VerificationProblem? {
        guard let validator else { return nil }
        var after: Int64 = 0
        while true {
            var query = PostgresQuery(sql: "SELECT \(Self.columns) FROM events WHERE position > ")
            query.append(bind: after)
            query.append(sql: " ORDER BY events.position LIMIT 2000")
            var events = try connection.query(query, prepare: true).map(Self.record)
            guard let last = events.last else { return nil }
            after = last.position
            try privacy.reveal(&events, on: connection)
            for event in events {
                let erased = event.data.range(of: Self.erasedMarker) != nil
                // An erased event is judged without the marker that lists its erased fields.
                let data = erased ? Self.withoutErasedMarker(event.data) : event.data
                do {
                    try validator(0, NewEvent(id: event.id, type: event.type, schemaVersion: event.schemaVersion,
                                              data: data, metadata: event.metadata, occurredAt: event.occurredAt))
                } catch let EventStoreError.invalidEvent(_, _, field, rule, message) {
                    // An erased event lacks its personal fields: only what is left is judged.
                    if erased, rule == RuleViolation.requiredRule { continue }
                    return Self.catalogProblem(event, "fails the catalog at \(field): \(message) [\(rule)]")
                }
                if let expected = catalog?.entry(named: event.type, schemaVersion: event.schemaVersion)?.streamCategory,
                    (try? StreamID(event.streamID))?.category != expected.rawValue
                {
                    return Self.catalogProblem(event, "is in a stream that is not a \(expected.rawValue) stream, where the "
                        + "catalog keeps \(event.type) [stream_category]")
                }
                if !erased { report.eventsCatalogChecked += 1 }
            }
        }
    }

    /// The problem of an event the catalog refuses, `why` saying how.
    static func catalogProblem(_ event: RecordedEvent, _ why: String) -> VerificationProblem {
        VerificationProblem(
            kind: .catalog, streamID: event.streamID, eventID: event.id, position: event.position,
            streamVersion: event.streamVersion,
            message: "event \(event.id.uuidString.lowercased()) (\(event.type), stream \(event.streamID), version "
                + "\(event.streamVersion), position \(event.position)) \(why): the store never appends such an event")
    }

    /// `data` without its top-level erased marker (``PersonalDataProtection/erasedMarkerKey``).
    static func withoutErasedMarker(_ data: Data) -> Data {
        guard var object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return data }
        object.removeValue(forKey: PersonalDataProtection.erasedMarkerKey)
        return (try? JSONSerialization.data(withJSONObject: object)) ?? data
    }

    /// `"ledger_erased"` as a key: an event whose personal fields' key was destroyed.
    private static let erasedMarker = Data("\"\(PersonalDataProtection.erasedMarkerKey)\"".utf8)

    static func verifyChains(on connection: PostgresConnection, progress: (@Sendable (Int, Int) -> Void)?) throws
        -> VerificationReport
    {
        let total = try connection.query("SELECT count(*) FROM events").single().decode(Int.self, at: 0)
        var report = VerificationReport(eventsChecked: 0, streamsChecked: 0, sealsChecked: 0, problem: nil)
        var lastStream = ""
        var lastVersion: Int64 = 0
        var lastRecordedAt: Int64 = .min
        var previousHash = Data()
        progress?(0, total)
        while true {
            let rows = try connection.query("""
                SELECT stream_id, stream_version, event_id, position, hash, event_type, schema_version::text,
                       data::text, metadata::text,
                       (extract(epoch FROM occurred_at) * 1000000)::bigint::text,
                       (extract(epoch FROM recorded_at) * 1000000)::bigint::text
                FROM events WHERE (stream_id, stream_version) > (\(lastStream), \(lastVersion))
                ORDER BY events.stream_id, events.stream_version LIMIT 5000
                """, prepare: true)
            if rows.isEmpty { break }
            for row in rows {
                let stream = try row.decode(String.self, at: 0)
                let version = try row.decode(Int64.self, at: 1)
                let eventID = try row.decode(UUID.self, at: 2)
                let position = try row.decode(Int64.self, at: 3)
                let stored = try row.decode(Data.self, at: 4)
                let id = eventID.uuidString.lowercased()
                if stream != lastStream {
                    report.streamsChecked += 1
                    previousHash = Data()
                    lastVersion = 0
                    lastRecordedAt = .min
                }
                if version != lastVersion + 1 {
                    report.problem = VerificationProblem(
                        kind: .versionGap, streamID: stream, eventID: eventID, position: position, streamVersion: version,
                        message: "stream \(stream) jumps from version \(lastVersion) to \(version) at event \(id) "
                            + "(position \(position)): an event was removed")
                    return report
                }
                var canonical = [stream, String(version), id]
                for column in 5...10 { canonical.append(try row.decode(String.self, at: column)) }
                var hasher = SHA256()
                hasher.update(data: previousHash)
                hasher.update(data: Data(canonical.joined(separator: "\n").utf8))
                let computed = Data(hasher.finalize())
                if computed != stored {
                    report.problem = VerificationProblem(
                        kind: .hashMismatch, streamID: stream, eventID: eventID, position: position, streamVersion: version,
                        message: "event \(id) (stream \(stream), version \(version), position \(position)) does not "
                            + "match its hash: it, or the chain before it, was changed")
                    return report
                }
                let recordedAt = Int64(canonical[8]) ?? .min
                if recordedAt < lastRecordedAt {
                    report.problem = VerificationProblem(
                        kind: .timeOrder, streamID: stream, eventID: eventID, position: position, streamVersion: version,
                        message: "event \(id) (stream \(stream), version \(version), position \(position)) was recorded "
                            + "before the event it follows: it was inserted back-dated")
                    return report
                }
                previousHash = stored
                lastStream = stream
                lastVersion = version
                lastRecordedAt = recordedAt
                report.eventsChecked += 1
            }
            progress?(report.eventsChecked, total)
        }
        return report
    }

    /// Recomputes every seal (and, with `publicKey`, checks its signature), then counts the
    /// events after the last seal.
    static func verifySeals(on connection: PostgresConnection, publicKey: SealPublicKey?, report: inout VerificationReport)
        throws -> VerificationProblem?
    {
        var from = GlobalCheckpoint.start
        var previous: Data?
        var signedSeen = false
        for seal in try storedSeals(on: connection) {
            let (computed, computedCount, positions) = try sealDigest(previous: previous, from: from, through: seal.upTo,
                                                                      on: connection)
            if seal.previousDigest != previous || computed != seal.digest || computedCount != seal.eventCount {
                let range = positions.map { " (positions \($0.lowerBound)–\($0.upperBound) now)" } ?? ""
                return VerificationProblem(
                    kind: .sealMismatch, position: seal.upTo.position, sealNumber: seal.number, positions: positions,
                    message: "seal \(seal.number) (through position \(seal.upTo.position)) covers \(seal.eventCount) events but "
                        + "\(computedCount) are there now\(range), or their hashes or order differ: events it covers were "
                        + "removed, changed or reordered")
            }
            if publicKey != nil, seal.signature == nil, !signedSeen {
                // Seals made before the ledger had a key: the first signed seal's digest chains
                // over them, so they are proven through it.
                report.sealsUnsignedBeforeFirstSigned += 1
            } else if let publicKey {
                guard let signature = seal.signature, seal.signingKeyID == publicKey.keyID,
                    publicKey.isValid(signature, for: seal)
                else {
                    let why = seal.signature == nil ? "is not signed"
                        : seal.signingKeyID != publicKey.keyID ? "is signed by another key (\(seal.signingKeyID ?? "-"))"
                        : "has a signature that does not verify"
                    return VerificationProblem(
                        kind: .sealSignature, position: seal.upTo.position, sealNumber: seal.number,
                        message: "seal \(seal.number) (through position \(seal.upTo.position)) \(why) with key "
                            + "\(publicKey.keyID): it was not made by the ledger's sealer, or was rewritten")
                }
                report.sealsSignatureChecked += 1
                signedSeen = true
            }
            report.sealsChecked += 1
            previous = seal.digest
            from = seal.upTo
        }
        if let publicKey, report.sealsChecked > 0, !signedSeen {
            return VerificationProblem(
                kind: .sealSignature, position: from.position, sealNumber: Int64(report.sealsChecked),
                message: "no seal is signed with key \(publicKey.keyID): the seals were not made by a sealer holding it")
        }
                let tail = try connection.query("""
            SELECT count(*), min(position), max(position) FROM events
            WHERE (transaction_id, position) > (\(String(from.transactionID))::xid8, \(from.position))
            """).single()
        report.unsealedEvents = try tail.decode(Int.self, at: 0)
        if report.unsealedEvents > 0 {
            report.unsealedPositions = try tail.decode(Int64.self, at: 1)...tail.decode(Int64.self, at: 2)
        }
        return nil
    }

    /// Whether the log still holds the checkpoint's seal as the auditor saw it (the seals after it
    /// chain from its digest, and every seal was recomputed before this is asked).
    static func verifyCheckpoint(_ checkpoint: SealCheckpoint, publicKey: SealPublicKey?, on connection: PostgresConnection)
        throws -> VerificationProblem?
    {
        let seal = try checkpoint.seal()
        if let publicKey, !(seal.signature.map { publicKey.isValid($0, for: seal) } ?? false) {
            return VerificationProblem(
                kind: .sealSignature, position: seal.upTo.position, sealNumber: seal.number,
                message: "the checkpoint (seal \(seal.number)) carries no valid signature by key \(publicKey.keyID)")
        }
        let stored = try storedSeals(on: connection, number: seal.number).first
        guard let stored, stored.digest == seal.digest, stored.upTo == seal.upTo, stored.eventCount == seal.eventCount,
            stored.previousDigest == seal.previousDigest
        else {
            return VerificationProblem(
                kind: .checkpointMismatch, position: seal.upTo.position, sealNumber: seal.number,
                positions: 1...seal.upTo.position,
                message: "the log does not extend the checkpoint: seal \(seal.number) (through position \(seal.upTo.position)) "
                    + (stored == nil ? "is missing" : "differs from the one the checkpoint holds")
                    + ", so events it covered were changed, removed or reordered since")
        }
        return nil
    }

    /// The seals in order (only seal `number` when given).
    static func storedSeals(on connection: PostgresConnection, number: Int64? = nil) throws -> [Seal] {
        let rows = try connection.query("""
            SELECT seal_number, up_to_transaction::text, up_to_position, event_count, previous_digest, digest, signature,
                   signing_key_id, sealed_at
            FROM seals WHERE \(number == nil) OR seal_number = \(number ?? 0) ORDER BY seal_number
            """)
        return try rows.map { row in
            Seal(number: try row.decode(Int64.self, at: 0),
                 upTo: GlobalCheckpoint(transactionID: try row.decode(UInt64.self, at: 1), position: try row.decode(Int64.self, at: 2)),
                 eventCount: try row.decode(Int64.self, at: 3), previousDigest: try row.decode(Data?.self, at: 4),
                 digest: try row.decode(Data.self, at: 5), signature: try row.decode(Data?.self, at: 6),
                 signingKeyID: try row.decode(String?.self, at: 7), sealedAt: try row.decode(Date.self, at: 8))
        }
    }

    /// sha256(previous digest || the hashes of the events after `from` through `through`, in
    /// global order), how many events that is, and their lowest and highest positions.
    static func sealDigest(previous: Data?, from: GlobalCheckpoint, through: GlobalCheckpoint,
                           on connection: PostgresConnection) throws -> (Data, Int64, ClosedRange<Int64>?)
    {
        var hasher = SHA256()
        if let previous { hasher.update(data: previous) }
        var count: Int64 = 0
        var cursor = from
        var lowest = Int64.max, highest = Int64.min
        while true {
            var query = PostgresQuery(
                sql: "SELECT transaction_id::text AS transaction_text, position, hash FROM events WHERE (transaction_id, position) > (")
            query.append(bind: String(cursor.transactionID))
            query.append(sql: "::xid8, ")
            query.append(bind: cursor.position)
            query.append(sql: ") AND (transaction_id, position) <= (")
            query.append(bind: String(through.transactionID))
            query.append(sql: "::xid8, ")
            query.append(bind: through.position)
            query.append(sql: ") ORDER BY events.transaction_id, events.position LIMIT 10000")
            let rows = try connection.query(query)
            if rows.isEmpty { break }
            for row in rows {
                hasher.update(data: try row.decode(Data.self, at: 2))
                let position = try row.decode(Int64.self, at: 1)
                lowest = min(lowest, position)
                highest = max(highest, position)
                count += 1
            }
            let last = rows[rows.count - 1]
            cursor = GlobalCheckpoint(transactionID: try last.decode(UInt64.self, at: 0),
                                      position: try last.decode(Int64.self, at: 1))
        }
        return (Data(hasher.finalize()), count, count > 0 ? lowest...highest : nil)
    }
}
