import Foundation
import LedgerDomain
import LedgerPostgres
import Logging

extension EventStore {
    /// A validator that refuses what the event catalog refuses: unknown types and schema
    /// versions, payloads that do not decode (the field path named), and broken domain rules;
    /// and metadata that is neither empty (`{}`, as the ledger's own send events carry) nor an
    /// ``EventMetadata`` (its field named as `metadata.<field>`).
    public static func catalogValidator(_ catalog: EventCatalog = .standard) -> EventValidator {
        { index, event in
            // Metadata this catalog wrote from a checked EventMetadata (NewEvent.setMetadata) is trusted likewise.
            if !event.metadataWasEncoded(by: catalog), !isEmptyObject(event.metadata) {
                do {
                    _ = try catalog.validateMetadata(event.metadata)
                } catch let error as EventValidationError {
                    throw EventStoreError.invalidEvent(
                        index: index, eventType: event.type, field: "metadata" + (error.field.map { ".\($0)" } ?? ""),
                        rule: error.rule, message: error.message)
                }
            }
            // Bytes this catalog encoded from a typed event were checked then (NewEvent.init(_:catalog:…)).
            if event.wasEncoded(by: catalog) { return }
            do {
                _ = try catalog.validate(type: event.type, schemaVersion: event.schemaVersion, data: event.data)
            } catch let error as EventValidationError {
                throw EventStoreError.invalidEvent(
                    index: index, eventType: event.type, field: error.field ?? "data", rule: error.rule,
                    message: error.message)
            }
        }
    }

    /// Whether `json` is `{}`, whitespace aside.
    static func isEmptyObject(_ json: Data) -> Bool {
        var significant = json.lazy.filter { !($0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09) }.makeIterator()
        return significant.next() == UInt8(ascii: "{") && significant.next() == UInt8(ascii: "}") && significant.next() == nil
    }

    /// A store that checks every payload against the catalog before appending.
    public init(pool: PostgresPool, catalog: EventCatalog, logger: Logger = Logger(label: "ledger.store")) {
        self.init(pool: pool, validator: Self.catalogValidator(catalog), catalog: catalog, privacy: nil, logger: logger)
    }
}
