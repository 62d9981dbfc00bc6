import Foundation
import LedgerDomain
import LedgerSKANPostbacks
import Metrics

/// AdAttributionKit postbacks (through `AAKPostbackIngestor`), the peer of SKAdNetwork's.
extension AttributionLedger {
    /// Takes in one AdAttributionKit postback of `app`: checks the stanza and its JWS, verifies
    /// the signature with the key the header's `kid` names, finds repeats and appends it.
    ///
    /// - Parameters:
    ///   - raw: the postback's JSON stanza, exactly as received.
    ///   - app: the app the caller may write; the JWS payload's `advertised-item-identifier` must be it.
    ///   - network: who delivered it (1–200 characters; `apple-developer-copy` for Apple's copies).
    ///   - receivedAt: when it arrived.
    ///   - allowDevelopmentKeys: the app's configuration: whether postbacks signed with Apple's
    ///     development keys are taken.
    ///   - eventID: the event's id; the same id retries idempotently.
    /// - Returns: the receipt; `status` is `counted`, `duplicate`, `not_won` or `invalid_signature`.
    /// - Throws: ``AttributionLedgerError``: `invalid` naming the field and rule (the schema, or a
    ///   development key the app does not allow; nothing stored), `forbidden` when the postback is
    ///   another app's (nothing stored), `id_conflict`; `PostgresError`.
    @discardableResult
    public func ingestAAKPostback(raw: Data, app: AppID, network: String, receivedAt: Date, allowDevelopmentKeys: Bool = false,
                                  eventID: UUID = UUID()) async throws -> SKANPostbackReceipt {
        let type = AAKPostbackReceived.eventType
        do {
            let result = try await AAKPostbackIngestor(store: store, logger: logger).ingest(
                raw: raw, network: network, receivedAt: receivedAt, eventID: eventID, app: app,
                allowDevelopmentKeys: allowDevelopmentKeys)
            Counter(label: "ledger_aak_postbacks_total", dimensions: [("status", result.status.rawValue)]).increment()
            return SKANPostbackReceipt(
                eventID: result.eventID, position: result.position, status: result.status.rawValue, duplicateOf: result.duplicateOf,
                signatureVerified: result.signatureVerified, wasAlreadyStored: result.wasAlreadyStored)
        } catch let error as SKANPostbackError where error.kind == .otherApp {
            throw AttributionLedgerError(.forbidden, eventType: type, field: error.field, rule: error.rule,
                                         message: "The postback's advertised-item-identifier is not this app.")
        } catch let error as SKANPostbackError {
            Counter(label: "ledger_aak_postbacks_total", dimensions: [("status", "refused")]).increment()
            throw AttributionLedgerError(.invalid, eventType: type, field: error.field, rule: error.rule, message: error.message)
        } catch {
            throw AttributionLedgerError.mapping(error, eventType: type, eventID: eventID)
        }
    }
}
