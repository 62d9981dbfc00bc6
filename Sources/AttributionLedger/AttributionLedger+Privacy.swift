import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerSKANPostbacks
import LedgerStore
import Logging
import Metrics

/// What an erasure did.
public struct Erasure: Sendable, Hashable, Codable {
    /// The `ErasureCompleted` event (appended now, or the earlier one on a repeat).
    public var erasureEventID: UUID
    /// When the erasure was committed (the first time, for a repeat).
    public var erasedAt: Date
    /// True when the device had already been erased: nothing new was written.
    public var alreadyErased: Bool
    /// Data keys destroyed now.
    public var keysDestroyed: Int
    /// Sends cancelled now.
    public var sendsCancelled: Int

    enum CodingKeys: String, CodingKey {
        case erasureEventID = "erasure_event_id"
        case erasedAt = "erased_at"
        case alreadyErased = "already_erased"
        case keysDestroyed = "keys_destroyed"
        case sendsCancelled = "sends_cancelled"
    }

    /// Encodes the id in lowercase, as the ledger writes UUIDs everywhere.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(erasureEventID.uuidString.lowercased(), forKey: .erasureEventID)
        try container.encode(erasedAt, forKey: .erasedAt)
        try container.encode(alreadyErased, forKey: .alreadyErased)
        try container.encode(keysDestroyed, forKey: .keysDestroyed)
        try container.encode(sendsCancelled, forKey: .sendsCancelled)
    }
}

/// What became of a SKAdNetwork postback the ledger took in.
public struct SKANPostbackReceipt: Sendable, Hashable, Codable {
    /// The `SKANPostbackReceived` event.
    public var eventID: UUID
    /// Its global position.
    public var position: Int64
    /// How it counts: `counted`, `duplicate`, `not_won` or `invalid_signature`.
    public var status: String
    /// The earlier verified postback this one repeats, if any.
    public var duplicateOf: UUID?
    /// Whether Apple's signature verified.
    public var signatureVerified: Bool
    /// True when this event id had been stored before (an idempotent retry).
    public var wasAlreadyStored: Bool

    enum CodingKeys: String, CodingKey {
        case eventID = "id"
        case position, status
        case duplicateOf = "duplicate_of"
        case signatureVerified = "signature_verified"
        case wasAlreadyStored = "already_stored"
    }

    /// Encodes ids in lowercase, as the ledger writes UUIDs everywhere.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(eventID.uuidString.lowercased(), forKey: .eventID)
        try container.encode(position, forKey: .position)
        try container.encode(status, forKey: .status)
        try container.encodeIfPresent(duplicateOf?.uuidString.lowercased(), forKey: .duplicateOf)
        try container.encode(signatureVerified, forKey: .signatureVerified)
        try container.encode(wasAlreadyStored, forKey: .wasAlreadyStored)
    }
}

/// Erasure (through the privacy layer's `DeviceEraser`) and SKAdNetwork postbacks (through
/// `SKANPostbackIngestor`).
extension AttributionLedger {
    /// Erases the device's personal data (crypto-shredding: its data keys are destroyed, an
    /// `ErasureCompleted` is appended, its pending sends are cancelled). Erasing again is harmless.
    ///
    /// - Parameters:
    ///   - device: the device.
    ///   - requestedBy: who asked: a role or system (`dsar-portal`), never a person.
    ///   - requestedAt: when the data subject asked.
    /// - Returns: what the erasure did (`alreadyErased` on a repeat).
    /// - Throws: ``AttributionLedgerError`` (`not_found` for a device the ledger has never seen,
    ///   `invalid` for an invalid `requestedBy`, `forbidden` when the log records the device's
    ///   stream for another app: nothing is erased), `PostgresError`.
    public func erase(_ device: DeviceRef, requestedBy: String, requestedAt: Date) async throws -> Erasure {
        let length = requestedBy.unicodeScalars.count
        guard (1...100).contains(length), !requestedBy.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw AttributionLedgerError.invalid(
                eventType: ErasureCompleted.eventType, field: "requested_by", rule: "text_1_100_no_control_characters",
                message: "'requested_by' is 1–100 characters without control characters: a role or system, never a person.")
        }
        do {
            try await checkStreamTenancy(of: device)
            let outcome = try await DeviceEraser(store: store).erase(
                device: device.streamID, requestedBy: requestedBy, requestedAt: requestedAt, now: clock.now())
            logger.info("erased a device", metadata: ["ledger.app": "\(device.app)", "ledger.already": "\(outcome.alreadyErased)"])
            return Erasure(erasureEventID: outcome.erasureEventID, erasedAt: outcome.erasedAt, alreadyErased: outcome.alreadyErased,
                           keysDestroyed: outcome.keysDestroyed, sendsCancelled: outcome.sendsCancelled.count)
        } catch PrivacyError.unknownDevice {
            throw AttributionLedgerError(.notFound, field: "device_id", rule: "known_device",
                                         message: "The ledger holds no event of this device.")
        } catch {
            throw AttributionLedgerError.mapping(error, eventType: ErasureCompleted.eventType, eventID: UUID())
        }
    }

    /// Takes in one SKAdNetwork postback of `app` as a network forwarded it: checks its schema,
    /// verifies Apple's signature, finds repeats and appends it (see `SKANPostbackIngestor`).
    ///
    /// - Parameters:
    ///   - raw: the postback's JSON, exactly as received.
    ///   - app: the app the caller may write; the postback's `app-id` must be it.
    ///   - network: the network that forwarded it (1–200 characters).
    ///   - receivedAt: when it arrived.
    ///   - eventID: the event's id; the same id retries idempotently.
    /// - Throws: ``AttributionLedgerError``: `invalid` naming the postback's field and rule (the
    ///   input is kept as a refused postback under `app`, its id in `eventID`), `forbidden` when
    ///   the postback is another app's (nothing stored), `rate_limited` when the app's refused
    ///   postbacks of the last hour reached their bound (nothing stored), `id_conflict` when
    ///   `eventID` holds another postback; `PostgresError`.
    @discardableResult
    public func ingestSKANPostback(raw: Data, app: AppID, network: String, receivedAt: Date, eventID: UUID = UUID())
        async throws -> SKANPostbackReceipt
    {
        do {
            let result = try await SKANPostbackIngestor(store: store, logger: logger).ingest(
                raw: raw, network: network, receivedAt: receivedAt, eventID: eventID, app: app)
            Counter(label: "ledger_skan_postbacks_total", dimensions: [("status", result.status.rawValue)]).increment()
            return SKANPostbackReceipt(
                eventID: result.eventID, position: result.position, status: result.status.rawValue, duplicateOf: result.duplicateOf,
                signatureVerified: result.signatureVerified, wasAlreadyStored: result.wasAlreadyStored)
        } catch let error as SKANPostbackError where error.kind == .otherApp {
            throw AttributionLedgerError(.forbidden, eventType: SKANPostbackReceived.eventType, field: "app-id",
                                         rule: "postback_of_this_app", message: "The postback's app-id is not the app of this API key.")
        } catch let error as SKANPostbackError where error.kind == .refusedLimit {
            Counter(label: "ledger_skan_postbacks_total", dimensions: [("status", "refused_unkept")]).increment()
            throw AttributionLedgerError(.rateLimited, eventType: SKANPostbackReceived.eventType, field: nil, rule: error.rule,
                                         message: error.message)
        } catch let error as SKANPostbackError {
            Counter(label: "ledger_skan_postbacks_total", dimensions: [("status", "refused")]).increment()
            throw AttributionLedgerError(.invalid, eventType: SKANPostbackReceived.eventType, field: error.field, rule: error.rule,
                                         message: error.message, eventID: error.rejectedEventID)
        } catch {
            // An event id reused for another postback (`id_conflict`), a store refusal; else the database.
            throw AttributionLedgerError.mapping(error, eventType: SKANPostbackReceived.eventType, eventID: eventID)
        }
    }
}
