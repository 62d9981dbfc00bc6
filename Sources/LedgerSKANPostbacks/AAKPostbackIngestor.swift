import Foundation
import LedgerDomain
import LedgerStore
import Logging

/// What became of one AdAttributionKit postback the ingestor took in.
public struct AAKIngestResult: Sendable, Hashable {
    /// The `AAKPostbackReceived` event.
    public var eventID: UUID
    /// Its stream (`skan-<app-id>/aak/<postback-identifier>`).
    public var streamID: String
    /// Its global position.
    public var position: Int64
    /// The postback, parsed.
    public var postback: AAKPostback
    /// How it counts (the same statuses as SKAN's).
    public var status: SKANIngestResult.Status
    /// The earlier verified postback this one repeats.
    public var duplicateOf: UUID?
    /// The cross-check of the unsigned fields.
    public var unsignedCheck: SKANPostbackReceived.UnsignedCheck
    /// The unsigned fields whose value differs from the network's report (or that Apple never sends).
    public var unsignedMismatches: [String]
    /// Whether the key the `kid` names is one of Apple's development keys.
    public var development: Bool
    /// True when this event id had already been stored (an idempotent retry): nothing new was written.
    public var wasAlreadyStored: Bool

    /// Whether Apple's signature verified.
    public var signatureVerified: Bool { status != .invalidSignature }
}

/// The one entry point for AdAttributionKit postbacks (Swift API, HTTP API, `ledger append` and
/// the developer-copy path call it), the peer of ``SKANPostbackIngestor``: checks the stanza and
/// JWS schema, verifies the signature with the key the header's `kid` names, refuses
/// development-key postbacks unless the caller allows them, finds repeats on
/// (`postback-identifier`, `postback-sequence-index`), cross-checks the unsigned fields, and
/// appends one `AAKPostbackReceived` event exactly as received.
///
/// Input that breaks the schema, a postback of another app, or a development postback not
/// allowed is refused with a ``SKANPostbackError`` naming the field and rule, and nothing is
/// stored. A postback whose signature does not verify is stored, flagged, and never counted.
/// Repeats are found on the postback identifier's stream and the append expects the version
/// read, so two copies arriving together cannot both count.
public struct AAKPostbackIngestor: Sendable {
    /// The store appended to.
    public let store: EventStore
    /// The signature check (Apple's published keys unless a test signs its own postbacks).
    public let verifier: AAKSignatureVerifier
    /// The envelope's `actor`.
    public let actor: String
    let logger: Logger

    /// The forwarding-network name recorded for copies Apple's device sends to the app's domain.
    public static let developerCopyNetwork = "apple-developer-copy"

    /// An ingestor appending to `store`.
    public init(store: EventStore, verifier: AAKSignatureVerifier = .apple, actor: String = "aak-postbacks",
                logger: Logger = Logger(label: "ledger.aak")) {
        self.store = store
        self.verifier = verifier
        self.actor = actor
        self.logger = logger
    }

    /// Takes in one postback.
    ///
    /// - Parameters:
    ///   - raw: the bytes received (the postback's JSON stanza).
    ///   - network: who delivered it, 1–200 characters (``developerCopyNetwork`` for a copy).
    ///   - receivedAt: when it arrived.
    ///   - reportedValues: the unsigned values the network reports having received, if it does.
    ///   - eventID: the event's id; the same id retries idempotently.
    ///   - app: the app the caller may write: the postback's `advertised-item-identifier` must be it.
    ///   - allowDevelopmentKeys: whether postbacks signed with Apple's development keys are taken
    ///     (the app's configuration); refused otherwise.
    /// - Throws: ``SKANPostbackError``: the schema (`invalid_value`, `missing_field`, …), another
    ///   app's postback (`other_app`), a development key not allowed (`development_key`); nothing
    ///   is stored then. Store errors otherwise.
    @discardableResult
    public func ingest(raw: Data, network: String, receivedAt: Date,
                       reportedValues: SKANPostbackReceived.ReportedValues? = nil, eventID: UUID = UUID(),
                       app: AppID? = nil, allowDevelopmentKeys: Bool = false) async throws -> AAKIngestResult {
        try SKANPostbackIngestor.checkArguments(network: network, reportedValues: reportedValues, receivedAt: receivedAt)
        let postback = try AAKPostback.parse(raw)
        if raw.range(of: Data("\\u0000".utf8)) != nil {
            throw SKANPostbackError(.invalidValue, rule: "no_nul_character", message: "The postback holds U+0000, which cannot be stored as text.")
        }
        if let app, postback.advertisedItemIdentifier != app.rawValue {
            throw SKANPostbackError(.otherApp, field: "jws-string.payload.advertised-item-identifier", rule: "postback_of_this_app",
                                    message: "The postback's advertised-item-identifier is not the app that sent it.")
        }
        let development = verifier.environment(of: postback.keyID) == .development
        if development, !allowDevelopmentKeys {
            throw SKANPostbackError(.developmentKey, field: "jws-string.header.kid", rule: "production_key_only",
                                    message: "This postback is signed with one of Apple's development keys, which this app's configuration does not allow.")
        }
        let valid = verifier.isValid(postback)
        let (check, mismatches) = Self.compare(postback, with: reportedValues)
        let appID = try AppID(postback.advertisedItemIdentifier)
        let stream = try StreamID.aakPostbacks(app: appID, postbackIdentifier: postback.postbackIdentifier).rawValue
        let metadata = try EventCatalog.standard.encode(metadata: EventMetadata(actor: actor, appID: appID))
        let text = String(decoding: raw, as: UTF8.self)
        for _ in 0..<10 {
            let history = try await store.readStream(stream)
            let decoder = LedgerJSON.makeDecoder()
            let earlier = try history.filter { $0.type == AAKPostbackReceived.eventType }
                .map { ($0, try decoder.decode(AAKPostbackReceived.self, from: $0.data)) }
            if let (stored, event) = earlier.first(where: { $0.0.id == eventID }) {
                return AAKIngestResult(
                    eventID: stored.id, streamID: stream, position: stored.position, postback: postback,
                    status: Self.status(valid: event.verification == .valid, duplicateOf: event.duplicateOf, postback: postback),
                    duplicateOf: event.duplicateOf, unsignedCheck: event.unsignedCheck,
                    unsignedMismatches: event.unsignedMismatches ?? [], development: event.development, wasAlreadyStored: true)
            }
            let duplicateOf = valid ? Self.firstVerified(in: earlier, sequenceIndex: postback.postbackSequenceIndex) : nil
            let event = AAKPostbackReceived(
                raw: text, forwardingNetwork: network, receivedAt: receivedAt, verification: valid ? .valid : .invalid,
                keyID: postback.keyID, development: development, duplicateOf: duplicateOf, reportedValues: reportedValues,
                unsignedCheck: check, unsignedMismatches: mismatches.isEmpty ? nil : mismatches)
            let new = try NewEvent(event, id: eventID, metadata: metadata, occurredAt: receivedAt)
            let expected: ExpectedVersion = history.last.map { .exact($0.streamVersion) } ?? .noStream
            do {
                let appended = try await store.append([new], to: stream, expected: expected)
                guard let place = appended.events.first else { break }
                if !valid { logger.notice("AAK postback signature invalid", metadata: ["aak.network": "\(network)"]) }
                return AAKIngestResult(
                    eventID: eventID, streamID: stream, position: place.position, postback: postback,
                    status: Self.status(valid: valid, duplicateOf: duplicateOf, postback: postback), duplicateOf: duplicateOf,
                    unsignedCheck: check, unsignedMismatches: mismatches, development: development,
                    wasAlreadyStored: appended.wasDuplicate)
            } catch EventStoreError.wrongExpectedVersion {
                continue  // another copy of this postback arrived meanwhile: read again
            }
        }
        throw EventStoreError.wrongExpectedVersion(stream: stream, expected: .any, actual: try await store.streamVersion(stream))
    }

    static func status(valid: Bool, duplicateOf: UUID?, postback: AAKPostback) -> SKANIngestResult.Status {
        if !valid { return .invalidSignature }
        if duplicateOf != nil { return .duplicate }
        return postback.didWin ? .counted : .notWon
    }

    /// The first verified, non-repeat postback of the stream with `sequenceIndex`.
    static func firstVerified(in history: [(RecordedEvent, AAKPostbackReceived)], sequenceIndex: Int) -> UUID? {
        for (record, event) in history where event.verification == .valid && event.duplicateOf == nil {
            if let earlier = try? AAKPostback.parse(Data(event.raw.utf8)), earlier.postbackSequenceIndex == sequenceIndex {
                return record.id
            }
        }
        return nil
    }

    /// The cross-check of the unsigned fields, as SKAN's (``SKANUnsignedCheck``): against the
    /// network's report when there is one; a fine value in a later postback is always a mismatch.
    public static func compare(_ postback: AAKPostback, with reported: SKANPostbackReceived.ReportedValues?)
        -> (check: SKANPostbackReceived.UnsignedCheck, mismatches: [String])
    {
        var mismatches: [String] = []
        var check = SKANPostbackReceived.UnsignedCheck.unconfirmed
        if let reported, reported.conversionValue != nil || reported.coarseConversionValue != nil || reported.countryCode != nil {
            if let value = reported.conversionValue, value != postback.conversionValue { mismatches.append("conversion-value") }
            if let value = reported.coarseConversionValue, value != postback.coarseConversionValue {
                mismatches.append("coarse-conversion-value")
            }
            if let value = reported.countryCode, value != postback.countryCode { mismatches.append("country-code") }
            check = mismatches.isEmpty ? .confirmed : .mismatch
        }
        if postback.unexpectedConversionValue != nil {
            if !mismatches.contains("conversion-value") { mismatches.insert("conversion-value", at: 0) }
            check = .mismatch
        }
        return (check, mismatches)
    }
}
