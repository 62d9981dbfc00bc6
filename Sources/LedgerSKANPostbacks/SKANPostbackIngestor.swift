import Crypto
import Foundation
import LedgerDomain
import LedgerStore
import Logging

/// What became of one postback the ingestor took in.
public struct SKANIngestResult: Sendable, Hashable {
    /// How the postback counts.
    public enum Status: String, Sendable, Hashable, Codable {
        /// Verified, the first with its (`transaction-id`, `postback-sequence-index`), and a win
        /// (or a version without `did-win`): counted.
        case counted
        /// Verified, but the same (`transaction-id`, `postback-sequence-index`) was verified before:
        /// recorded, counted once (see ``SKANIngestResult/duplicateOf``).
        case duplicate
        /// Verified and unique, but `did-win` is false: a qualifying impression that did not win
        /// the attribution. Recorded, not counted as an install.
        case notWon = "not_won"
        /// The signature does not verify: recorded and flagged, never counted.
        case invalidSignature = "invalid_signature"
    }

    /// The `SKANPostbackReceived` event.
    public var eventID: UUID
    /// Its stream (`skan-<app-id>/<transaction-id>`).
    public var streamID: String
    /// Its global position.
    public var position: Int64
    /// The postback, parsed.
    public var postback: SKANPostback
    /// How it counts.
    public var status: Status
    /// The earlier verified postback this one repeats.
    public var duplicateOf: UUID?
    /// The cross-check of the unsigned fields.
    public var unsignedCheck: SKANPostbackReceived.UnsignedCheck
    /// The unsigned fields whose value differs from the network's report.
    public var unsignedMismatches: [String]
    /// True when this event id had already been stored (an idempotent retry): nothing new was written.
    public var wasAlreadyStored: Bool

    /// Whether Apple's signature verified.
    public var signatureVerified: Bool { status != .invalidSignature }
}

/// The one entry point for SKAdNetwork postbacks (Swift API, HTTP API and `ledger append` call
/// it): checks the schema, verifies Apple's signature, finds repeats, cross-checks the unsigned
/// fields, and appends one `SKANPostbackReceived` event exactly as received, with the network
/// that forwarded it and those outcomes.
///
/// Nothing a network sends is lost: input that breaks the schema is appended too, flagged as
/// refused, under the app that sent it (stream `skan-<app>/rejected/<digest>`; `skan-rejected-<digest>`
/// when no app is named), and then the ``SKANPostbackError`` is thrown with the stored event's
/// id. What is kept of a refused input is bounded: its first ``refusedKeptBytes`` bytes, and at
/// most ``refusedPerAppPerHour`` refused inputs per app per hour; past that the input is refused
/// with `refused_postback_limit` and nothing is stored. Only the caller's own bad arguments (the
/// network name, the reported values) are refused without storing anything.
///
/// Repeats are found on the postback's stream (`skan-<app-id>/<transaction-id>`) and the append
/// expects the version read, so two copies ingested at the same moment cannot both count: the
/// loser reads again and is recorded as the duplicate.
public struct SKANPostbackIngestor: Sendable {
    /// The store appended to.
    public let store: EventStore
    /// The signature check (Apple's key unless a test signs its own postbacks).
    public let verifier: SKANSignatureVerifier
    /// The envelope's `actor`.
    public let actor: String
    /// The most refused inputs stored per app in any hour (by recording time); more are refused
    /// without being stored, so a misbehaving sender cannot fill the log.
    public let refusedPerAppPerHour: Int
    let logger: Logger

    /// How many bytes of a refused input are kept: a real postback is well under 2 KiB.
    public static let refusedKeptBytes = 4096

    /// An ingestor appending to `store`.
    public init(store: EventStore, verifier: SKANSignatureVerifier = .apple, actor: String = "skan-postbacks",
                refusedPerAppPerHour: Int = 100, logger: Logger = Logger(label: "ledger.skan")) {
        self.store = store
        self.verifier = verifier
        self.actor = actor
        self.refusedPerAppPerHour = refusedPerAppPerHour
        self.logger = logger
    }

    /// Takes in one postback.
    ///
    /// - Parameters:
    ///   - raw: the bytes the network sent (the postback's JSON).
    ///   - network: the network that forwarded it, 1–200 characters.
    ///   - receivedAt: when it arrived (the event's `occurred_at`).
    ///   - reportedValues: the unsigned values the network reports having received, if it does.
    ///   - eventID: the event's id; pass the same id to retry an ingest idempotently.
    ///   - app: the app that sent the postback, when the caller knows it (an API key's app): the
    ///     postback's `app-id` must be it, and a refused input is recorded under it.
    /// - Returns: the stored event and how the postback counts.
    /// - Throws: ``SKANPostbackError`` when the input breaks the schema (after storing it as
    ///   refused), the arguments are invalid or the app's refused inputs reached their hourly
    ///   bound (nothing stored); store errors otherwise.
    @discardableResult
    public func ingest(raw: Data, network: String, receivedAt: Date,
                       reportedValues: SKANPostbackReceived.ReportedValues? = nil, eventID: UUID = UUID(),
                       app: AppID? = nil) async throws
        -> SKANIngestResult
    {
        try Self.checkArguments(network: network, reportedValues: reportedValues, receivedAt: receivedAt)
        let postback: SKANPostback
        do throws(SKANPostbackError) {
            postback = try Self.parseWithoutNUL(raw)
        } catch {
            var refused = error
            refused.rejectedEventID = try await storeRefused(raw, network: network, receivedAt: receivedAt,
                                                             reportedValues: reportedValues, error: error, eventID: eventID,
                                                             app: app)
            logger.notice("SKAN postback refused", metadata: [
                "skan.network": "\(network)", "skan.rule": "\(error.rule)", "skan.field": "\(error.field ?? "-")"])
            throw refused
        }
        if let app, postback.appID != app.rawValue {
            throw SKANPostbackError(.otherApp, field: "app-id", rule: "postback_of_this_app",
                                    message: "The postback's app-id is not the app that sent it.")
        }
        let valid = verifier.isValid(postback)
        let (check, mismatches) = SKANUnsignedCheck.compare(postback, with: reportedValues)
        let stream = try StreamID.skanPostbacks(app: AppID(postback.appID), transactionID: postback.transactionID).rawValue
        let metadata = try EventCatalog.standard.encode(metadata: EventMetadata(actor: actor, appID: try AppID(postback.appID)))
        let text = String(decoding: raw, as: UTF8.self)
        for _ in 0..<10 {
            let history = try await store.readStream(stream)
            if let stored = history.first(where: { $0.id == eventID }) {
                return try Self.result(of: stored, postback: postback, wasAlreadyStored: true)
            }
            let duplicateOf = valid
                ? try Self.firstVerified(in: history, sequenceIndex: postback.postbackSequenceIndex, verifier: verifier) : nil
            let event = SKANPostbackReceived(
                raw: text, forwardingNetwork: network, receivedAt: receivedAt, verification: valid ? .valid : .invalid,
                duplicateOf: duplicateOf, reportedValues: reportedValues, unsignedCheck: check,
                unsignedMismatches: mismatches.isEmpty ? nil : mismatches)
            let new = try NewEvent(event, id: eventID, metadata: metadata, occurredAt: receivedAt)
            let expected: ExpectedVersion = history.last.map { .exact($0.streamVersion) } ?? .noStream
            do {
                let appended = try await store.append([new], to: stream, expected: expected)
                guard let place = appended.events.first else { break }
                if !valid {
                    logger.notice("SKAN postback signature invalid", metadata: ["skan.network": "\(network)"])
                }
                return SKANIngestResult(
                    eventID: eventID, streamID: stream, position: place.position, postback: postback,
                    status: Self.status(valid: valid, duplicateOf: duplicateOf, postback: postback), duplicateOf: duplicateOf,
                    unsignedCheck: check, unsignedMismatches: mismatches, wasAlreadyStored: appended.wasDuplicate)
            } catch EventStoreError.wrongExpectedVersion {
                continue  // another copy of this transaction's postbacks arrived meanwhile: read again
            }
        }
        throw EventStoreError.wrongExpectedVersion(stream: stream, expected: .any, actual: try await store.streamVersion(stream))
    }

    /// Appends version `model.modelVersion` of an app's conversion model; versions are
    /// consecutive from 1 (the append expects version `modelVersion - 1` of the model stream).
    /// - Throws: the catalog's `EventValidationError` for an invalid model;
    ///   `EventStoreError.wrongExpectedVersion` when the version is not the next one.
    @discardableResult
    public func configure(model: SKANConversionModelConfigured, eventID: UUID = UUID(), at time: Date = Date())
        async throws -> AppendResult
    {
        let metadata = try EventCatalog.standard.encode(metadata: EventMetadata(actor: actor, appID: try AppID(model.appID)))
        let stream = StreamID.skanModelPrefix + model.appID
        let expected: ExpectedVersion = model.modelVersion == 1 ? .noStream : .exact(Int64(model.modelVersion - 1))
        return try await store.append(
            [try NewEvent(model, id: eventID, metadata: metadata, occurredAt: time)],
            to: stream, expected: expected)
    }

    // MARK: Parts

    static func checkArguments(network: String, reportedValues: SKANPostbackReceived.ReportedValues?,
                               receivedAt: Date) throws(SKANPostbackError) {
        // The event's own rules, on a stand-in postback: the same checks, the same field names.
        let probe = SKANPostbackReceived(raw: "{}", forwardingNetwork: network, receivedAt: receivedAt,
                                         reportedValues: reportedValues)
        do {
            try probe.validate()
        } catch {
            let field = error.field == "forwarding_network" ? "network" : error.field
            throw SKANPostbackError(.invalidArgument, field: field, rule: error.rule, message: error.message)
        }
    }

    /// The schema check, plus one rule of the store: jsonb cannot hold U+0000.
    static func parseWithoutNUL(_ raw: Data) throws(SKANPostbackError) -> SKANPostback {
        let postback = try SKANPostback.parse(raw)
        if raw.range(of: Data("\\u0000".utf8)) != nil {
            throw SKANPostbackError(.invalidValue, rule: "no_nul_character", message: "The postback holds U+0000, which cannot be stored as text.")
        }
        return postback
    }

    static func status(valid: Bool, duplicateOf: UUID?, postback: SKANPostback) -> SKANIngestResult.Status {
        if !valid { return .invalidSignature }
        if duplicateOf != nil { return .duplicate }
        return postback.didWin == false ? .notWon : .counted
    }

    /// The first verified, non-repeat postback of `history` with `sequenceIndex` (an event
    /// appended without the ingestor, with no recorded verification, is verified now).
    static func firstVerified(in history: [RecordedEvent], sequenceIndex: Int, verifier: SKANSignatureVerifier) throws
        -> UUID?
    {
        let decoder = LedgerJSON.makeDecoder()
        for record in history where record.type == SKANPostbackReceived.eventType {
            let event = try decoder.decode(SKANPostbackReceived.self, from: record.data)
            guard event.duplicateOf == nil, !event.isRefused, let earlier = try? SKANPostback.parse(Data(event.raw.utf8)),
                earlier.postbackSequenceIndex == sequenceIndex,
                event.verification.map({ $0 == .valid }) ?? verifier.isValid(earlier)
            else { continue }
            return record.id
        }
        return nil
    }

    static func result(of record: RecordedEvent, postback: SKANPostback, wasAlreadyStored: Bool) throws -> SKANIngestResult {
        let event = try LedgerJSON.makeDecoder().decode(SKANPostbackReceived.self, from: record.data)
        return SKANIngestResult(
            eventID: record.id, streamID: record.streamID, position: record.position, postback: postback,
            status: status(valid: event.verification == .valid, duplicateOf: event.duplicateOf, postback: postback),
            duplicateOf: event.duplicateOf, unsignedCheck: event.unsignedCheck ?? .unconfirmed,
            unsignedMismatches: event.unsignedMismatches ?? [], wasAlreadyStored: wasAlreadyStored)
    }

    /// Appends a refused input to `skan-<app>/rejected/<first 32 hex digits of its SHA-256>`
    /// (`skan-rejected-…` without an app), keeping its first ``refusedKeptBytes`` bytes; returns
    /// the event id. An idempotent retry (the same event id already stored) answers as the first
    /// time, whatever the bound.
    /// - Throws: ``SKANPostbackError`` `refused_postback_limit` when the app's refused inputs of
    ///   the last hour reached ``refusedPerAppPerHour`` (nothing stored).
    func storeRefused(_ raw: Data, network: String, receivedAt: Date, reportedValues: SKANPostbackReceived.ReportedValues?,
                      error: SKANPostbackError, eventID: UUID, app: AppID?) async throws -> UUID {
        let digest = String(SHA256.hash(data: raw).map { String(format: "%02x", $0) }.joined().prefix(32))
        var stream = "\(StreamCategory.skan.rawValue)-rejected-\(digest)"
        if let app { stream = try StreamID.refusedSKANPostbacks(app: app, digest: digest).rawValue }
        // A retry of an input already kept (the same event id, in this stream) answers as the first
        // time, whatever its time of arrival now.
        if let stored = try await store.event(id: eventID), stored.streamID == stream { return eventID }
        if let app {
            let recent = try await store.countEvents(
                inStreamsWithPrefix: try StreamID.refusedSKANPostbacks(app: app, digest: "").rawValue,
                recordedSince: Date().addingTimeInterval(-3600))
            if recent >= refusedPerAppPerHour {
                logger.warning("SKAN postbacks refused without storing: hourly bound reached",
                               metadata: ["ledger.app": "\(app)", "skan.bound": "\(refusedPerAppPerHour)"])
                throw SKANPostbackError(.refusedLimit, rule: "refused_postback_limit",
                                        message: "This app sent \(recent) postbacks the ledger refused in the last hour; "
                                            + "until the hour passes, refused postbacks are answered without being kept.")
            }
        }
        let keptBytes = Self.refusedKeptBytes
        let kept = raw.prefix(keptBytes)
        let text = raw.count <= keptBytes && !raw.contains(0) && raw.range(of: Data("\\u0000".utf8)) == nil
            ? String(validating: kept, as: UTF8.self) : nil
        var message = error.message
        if raw.count > keptBytes { message += " (The first \(keptBytes) of \(raw.count) bytes are kept.)" }
        let event = SKANPostbackReceived(
            raw: text ?? "", forwardingNetwork: network, receivedAt: receivedAt,
            rawBase64: (text ?? "").isEmpty ? kept.base64EncodedString() : nil,
            verification: error.kind == .unsupportedVersion ? .unsupportedVersion : .rejected,
            rejection: .init(kind: error.kind.rawValue, field: error.field, rule: error.rule, message: message),
            reportedValues: reportedValues)
        let metadata = try EventCatalog.standard.encode(metadata: EventMetadata(actor: actor, appID: app))
        let new = try NewEvent(event, id: eventID, metadata: metadata, occurredAt: receivedAt)
        try await store.append([new], to: stream)
        return eventID
    }
}
