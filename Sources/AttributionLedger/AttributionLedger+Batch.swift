import Foundation
import LedgerDecisions
import LedgerDomain
import LedgerPostgres
import LedgerStore
import Logging

extension AttributionLedger {
    /// Records a batch of prepared facts, in order, **all or nothing**: the facts and the sends
    /// they cause commit in one transaction, or none of them does. A batch with the same id twice,
    /// or with an id already recorded with other content, is refused before anything is written;
    /// facts already recorded with the same content answer as duplicates, so retrying a batch
    /// whose answer was lost is safe. Concurrent batches to the same devices queue (see
    /// `DeviceFactRecorder`); none fails because another got there first.
    ///
    /// - Returns: one ``Recorded`` per fact, in order.
    /// - Throws: ``AttributionLedgerError`` with ``AttributionLedgerError/index`` set to the
    ///   offending fact's place, `PostgresError` (nothing of the batch is then stored).
    public func recordBatch(_ facts: [PreparedFact]) async throws -> [Recorded] {
        var seen: [UUID: Int] = [:]
        for (index, fact) in facts.enumerated() {
            if seen.updateValue(index, forKey: fact.id) != nil {
                var error = AttributionLedgerError.invalid(
                    eventType: fact.eventType, field: "id", rule: "unique_in_batch",
                    message: "The id appears twice in the batch; each fact needs an id of its own.")
                error.index = index
                metrics.refused(type: fact.eventType, rule: error.rule)
                throw error
            }
        }
        if let (index, conflict) = try await firstConflict(in: facts) {
            var error = AttributionLedgerError(
                .idConflict, eventType: facts[index].eventType, field: "id", rule: "same_id_same_content",
                message: "This id was already recorded with other content or for another device; use a new id for a new fact.",
                eventID: conflict)
            error.index = index
            metrics.refused(type: facts[index].eventType, rule: error.rule)
            throw error
        }
        guard !facts.isEmpty else { return [] }
        let started = ContinuousClock.now
        let recorded: [RecordedFact]
        do {
            recorded = try await recorder.record(planned: facts.map(\.planned), now: clock.now())
        } catch {
            let place = Self.place(of: error, in: facts)
            let type = facts[place ?? 0].eventType
            let mapped = AttributionLedgerError.mapping(error, eventType: type, eventID: facts[place ?? 0].id)
            guard var refusal = mapped as? AttributionLedgerError else {
                metrics.failed(type: type)
                logger.error("recording a batch failed", metadata: [
                    "ledger.app": "\(facts[0].device.app)", "ledger.events": "\(facts.count)", "error": "\(Self.errorKind(error))"])
                throw mapped
            }
            metrics.refused(type: type, rule: refusal.rule)
            refusal.index = place ?? (facts.count == 1 ? 0 : nil)
            throw refusal
        }
        let duration = ContinuousClock.now - started
        return zip(facts, recorded).map { fact, result in
            metrics.recorded(type: fact.eventType, duplicate: result.wasDuplicate, duration: duration)
            return Recorded(eventID: result.eventID, position: result.position, wasDuplicate: result.wasDuplicate,
                            sendIDs: result.sends)
        }
    }

    /// The place in `facts` of the fact `error` is about, when it names one.
    static func place(of error: any Error, in facts: [PreparedFact]) -> Int? {
        switch error {
        case EventStoreError.eventIDConflict(let id): facts.firstIndex { $0.id == id }
        case let violation as TenancyViolation: facts.firstIndex { $0.device.streamID.rawValue == violation.stream }
        default: nil
        }
    }

    /// What failed, for a log line: the error's type and, for the database, its SQLSTATE — never
    /// its message, which can quote rows and SQL.
    static func errorKind(_ error: any Error) -> String {
        if let error = error as? PostgresError { return "PostgresError \(error.sqlState ?? "-")" }
        return String(describing: type(of: error))
    }

    /// The first fact whose id is already stored with other content (another stream, type, data,
    /// metadata or time): the append would refuse it, so the batch is refused up front. Stored
    /// events are read through the store, so sealed personal fields are compared opened.
    func firstConflict(in facts: [PreparedFact]) async throws -> (Int, UUID)? {
        guard !facts.isEmpty else { return nil }
        let storedIDs = try await store.storedIDs(facts.map(\.id))
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

    /// Whether stored metadata decodes to `metadata`, but for the trace: a retry from another
    /// trace is the same fact (the first trace stays recorded).
    static func sameMetadata(_ stored: Data, as metadata: EventMetadata) -> Bool {
        guard var decoded = try? LedgerJSON.makeDecoder().decode(EventMetadata.self, from: stored) else { return false }
        var metadata = metadata
        decoded.traceparent = nil
        metadata.traceparent = nil
        return decoded == metadata
    }
}
