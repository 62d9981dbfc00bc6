import Foundation
import LedgerDecisions
import LedgerDomain
import LedgerPostgres
import LedgerStore
import Logging

extension AttributionLedger {
    /// Records a batch of prepared facts, in order, **all or nothing**: the facts and the sends
    /// they cause commit in one transaction, or none of them does. A batch with the same id twice
    /// is refused before anything is sent; one with an id already recorded with other content is
    /// refused by its append, and nothing of the batch is stored. Facts already recorded with the
    /// same content answer as duplicates (the store compares them with personal fields opened and
    /// the trace aside, ``EventStore``'s idempotency), so retrying a batch
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
}
