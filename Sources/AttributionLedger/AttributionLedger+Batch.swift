import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerStore

extension AttributionLedger {
    /// Records a batch of prepared facts, in order, all or nothing as far as the caller's input
    /// goes: a batch with the same id twice, or with an id already recorded with other content, is
    /// refused before anything is written. Each fact is then recorded (with its sends) in its own
    /// transaction; if the database fails midway, retrying the same batch is safe — the facts
    /// already recorded answer as duplicates.
    ///
    /// - Returns: one ``Recorded`` per fact, in order.
    /// - Throws: ``AttributionLedgerError`` with ``AttributionLedgerError/index`` set to the
    ///   offending fact's place, `PostgresError`.
    public func recordBatch(_ facts: [PreparedFact]) async throws -> [Recorded] {
        var seen: [UUID: Int] = [:]
        for (index, fact) in facts.enumerated() {
            if seen.updateValue(index, forKey: fact.id) != nil {
                var error = AttributionLedgerError.invalid(
                    eventType: fact.eventType, field: "id", rule: "unique_in_batch",
                    message: "The id appears twice in the batch; each fact needs an id of its own.")
                error.index = index
                throw error
            }
        }
        if let (index, conflict) = try await firstConflict(in: facts) {
            var error = AttributionLedgerError(
                .idConflict, eventType: facts[index].eventType, field: "id", rule: "same_id_same_content",
                message: "This id was already recorded with other content or for another device; use a new id for a new fact.",
                eventID: conflict)
            error.index = index
            throw error
        }
        var results: [Recorded] = []
        results.reserveCapacity(facts.count)
        for (index, fact) in facts.enumerated() {
            do {
                results.append(try await record(fact))
            } catch var error as AttributionLedgerError {
                error.index = index
                throw error
            }
        }
        return results
    }

    /// The first fact whose id is already stored with other content (another stream, type, data,
    /// metadata or time): the append would refuse it, so the batch is refused up front. Stored
    /// events are read through the store, so sealed personal fields are compared opened.
    func firstConflict(in facts: [PreparedFact]) async throws -> (Int, UUID)? {
        guard !facts.isEmpty else { return nil }
        let literal = "{" + facts.map { $0.id.uuidString.lowercased() }.joined(separator: ",") + "}"
        let rows = try await store.pool.query("SELECT event_id::text FROM events WHERE event_id = ANY(\(literal)::uuid[])")
        let storedIDs = Set(try rows.map { try $0.decode(String.self, at: 0) }.compactMap(UUID.init(uuidString:)))
        for (index, fact) in facts.enumerated() where storedIDs.contains(fact.id) {
            guard let existing = try await store.event(id: fact.id) else { continue }
            let same = existing.streamID == fact.device.streamID.rawValue && existing.type == fact.eventType
                && existing.schemaVersion == type(of: fact.fact).schemaVersion
                && Self.sameFact(existing.data, as: fact) && Self.sameMetadata(existing.metadata, as: fact.metadata)
                && abs(existing.occurredAt.timeIntervalSince(fact.occurredAt)) < 0.000_001
            if !same { return (index, fact.id) }
        }
        return nil
    }

    /// Whether stored data decodes to the same typed fact (typed values compare exactly, where
    /// Foundation's JSON objects compare numbers by their boxes).
    static func sameFact(_ stored: Data, as prepared: PreparedFact) -> Bool {
        let type = Swift.type(of: prepared.fact)
        guard let decoded = try? EventCatalog.standard.decode(type: type.eventType, schemaVersion: type.schemaVersion, data: stored)
        else { return false }
        return AnyHashable(decoded) == AnyHashable(prepared.fact)
    }

    /// Whether stored metadata decodes to `metadata`.
    static func sameMetadata(_ stored: Data, as metadata: EventMetadata) -> Bool {
        (try? LedgerJSON.makeDecoder().decode(EventMetadata.self, from: stored)) == metadata
    }
}
