import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerStore

/// Why an operator's settlement of a send was refused. Nothing was written.
public enum SendSettlementError: Error, Equatable, CustomStringConvertible {
    /// No send has this id: its stream `send-<id>` holds no event.
    case unknownSend(sendID: UUID)
    /// The send exists but is not parked: only a parked send is settled by hand. `state` is
    /// `pending`, `running`, or the terminal event that ended it (`SendSucceeded`, …).
    case notParked(sendID: UUID, state: String)
    /// `by` or `reason` broke the event's rule (empty, too long, a control character).
    case invalidField(field: String, rule: String, message: String)
    /// A listed send's row could not be read back (a provider or kind this version does not know).
    case unreadableSend(deviceStreamID: String)

    /// One line an operator reads.
    public var description: String {
        switch self {
        case .unknownSend(let sendID):
            "no send \(sendID.lowercasedText): its stream send-\(sendID.lowercasedText) holds no event"
        case .notParked(let sendID, let state):
            "send \(sendID.lowercasedText) is not parked (it is \(state)): only a parked send is retried or cancelled by hand"
        case .invalidField(let field, let rule, let message):
            "\(field) breaks rule \(rule): \(message)"
        case .unreadableSend(let device):
            "a send of \(device) names a provider or kind this version does not know"
        }
    }
}

/// An operator's settlement of a parked send (``DeliveryAfterUnknownOutcome/park(rule:)``):
/// `ledger sends retry` and `ledger sends cancel`. Each checks, under the queue row's lock, that
/// the send is parked, then records the decision and changes the row in one transaction.
public enum ParkedSends {
    /// Makes the parked send `sendID` pending again, due at `now`: `SendUnparked` (who and why)
    /// is appended to its stream and the workers are notified. Its next try may repeat a call that
    /// reached the provider; that is the operator's decision, and the log keeps it.
    /// - Throws: ``SendSettlementError`` when there is no such send, it is not parked, or `by` /
    ///   `reason` are not acceptable; a `PostgresError` when the database fails.
    public static func retry(_ sendID: UUID, by: String, reason: String, now: Date, store: EventStore,
                             on connection: PostgresConnection) throws {
        let event = try checked(SendUnparked(by: by, reason: reason))
        try connection.transaction { connection in
            let stream = try lockParked(sendID, on: connection)
            try store.append([try NewEvent(event, occurredAt: now)], to: stream, on: connection)
            try SendQueue.release(sendID, notBefore: now, on: connection)
            try connection.notify(channel: Outbox.channel)
        }
    }

    /// Ends the parked send `sendID` without another try: `SendCancelled` (reason `operator`, the
    /// detail naming who and why) is appended and the row leaves the queue, which frees its lane.
    /// - Throws: as ``retry(_:by:reason:now:store:on:)``.
    public static func cancel(_ sendID: UUID, by: String, reason: String, now: Date, store: EventStore,
                              on connection: PostgresConnection) throws {
        // The same rules as a retry's who and why, before the detail joins them.
        _ = try checked(SendUnparked(by: by, reason: reason))
        let event = try checked(SendCancelled(reason: "operator", detail: String("by \(by): \(reason)".prefix(4_096))))
        try connection.transaction { connection in
            let stream = try lockParked(sendID, on: connection)
            try store.append([try NewEvent(event, occurredAt: now)], to: stream, on: connection)
            try SendQueue.remove(sendID, on: connection)
            // The device's later Singular calls waited behind it in its lane.
            try connection.notify(channel: Outbox.channel)
        }
    }

    /// `event` if it keeps its rules, else the rule it broke as ``SendSettlementError/invalidField(field:rule:message:)``.
    private static func checked<E: LedgerEvent>(_ event: E) throws(SendSettlementError) -> E {
        do {
            try event.validate()
        } catch {
            throw .invalidField(field: error.field ?? "value", rule: error.rule, message: error.message)
        }
        return event
    }

    /// Locks the send's queue row and returns its stream, if the send is parked.
    private static func lockParked(_ sendID: UUID, on connection: PostgresConnection) throws -> String {
        let row = try connection.query("""
            SELECT stream_id, state FROM send_queue WHERE send_id = \(sendID) FOR UPDATE
            """).first
        if let row {
            let state = try row.decode(String.self, at: 1)
            guard state == "parked" else { throw SendSettlementError.notParked(sendID: sendID, state: state) }
            return try row.decode(String.self, at: 0)
        }
        let stream = StreamID.send(id: sendID).rawValue
        guard let last = try EventStore.lastStoredEvent(of: stream, on: connection) else {
            throw SendSettlementError.unknownSend(sendID: sendID)
        }
        throw SendSettlementError.notParked(sendID: sendID, state: "ended with \(last.type)")
    }
}
