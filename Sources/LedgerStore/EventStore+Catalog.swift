import Foundation
import LedgerDomain
import LedgerPostgres
import Logging

extension EventStore {
    /// A validator that refuses what the event catalog refuses: unknown types and schema
    /// versions, payloads that do not decode (the field path named), and broken domain rules.
    public static func catalogValidator(_ catalog: EventCatalog = .standard) -> EventValidator {
        { index, event in
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

    /// A store that checks every payload against the catalog before appending.
    public init(pool: PostgresPool, catalog: EventCatalog, logger: Logger = Logger(label: "ledger.store")) {
        self.init(pool: pool, validator: Self.catalogValidator(catalog), logger: logger)
    }
}
