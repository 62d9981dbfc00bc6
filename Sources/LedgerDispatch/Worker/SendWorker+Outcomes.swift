import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerProviders
import LedgerStore
import Logging
import Metrics
import Synchronization

/// How far a try went before its outcome.
enum TryProgress: Sendable {
    /// Settled before its `SendAttempted` was recorded (the preflight, the deadline, a request
    /// that could not be built): a failure names no attempt.
    case settledBeforeAttempt
    /// Its `SendAttempted` is recorded but it made no call (its request changed while it waited
    /// for a slot, its lease was too short for the call).
    case attemptedWithoutCall
    /// It called the provider.
    case called
}

/// One try's outcome, encoded and ready to record: the events for its send stream and what
/// becomes of its queue row.
struct Outcome: Sendable {
    let claim: SendQueue.Claim
    /// `ResponseReceived` (when there was an answer), then `RetryScheduled`, `SendSucceeded` or `SendFailed`.
    let events: [NewEvent]
    /// When the send is tried again; nil when the outcome is terminal (the row leaves the queue).
    let retryAt: Date?
    /// Whether the try called the provider: one that did not is not counted as a call
    /// (``SendQueue/Claim/uncalled``).
    let called: Bool
    /// `succeeded`, `retry` or `failed` (the outcome metric's label).
    let label: String
    /// The answer's HTTP status, or `none`.
    let status: String
    /// The rule of a terminal failure (`SendFailed.rule`), nil otherwise.
    let failedRule: String?

    /// The outcome's events, with every secret `redactor` knows removed from the answer and the
    /// details (an answer may echo the request's credentials).
    init(_ claim: SendQueue.Claim, answer: SendAnswer?, disposition: SendDisposition, progress: TryProgress, now: Date,
         redactor: SecretRedactor) throws {
        called = progress == .called
        var events: [NewEvent] = []
        var failedRule: String?
        if case .response(let response) = answer {
            events.append(try NewEvent(redactor.redact(SendWorker.received(response, attempt: claim.attempt)), occurredAt: now))
        }
        switch disposition {
        case .succeeded:
            label = "succeeded"
            retryAt = nil
            events.append(try NewEvent(SendSucceeded(attempt: claim.attempt), occurredAt: now))
        case .retry(let notBefore, let rule):
            label = "retry"
            retryAt = notBefore
            var detail: String?
            if case .failure(let error) = answer { detail = redactor.redact(error.description) }
            events.append(try NewEvent(RetryScheduled(attempt: claim.attempt, rule: rule, detail: detail, notBefore: notBefore,
                                                      called: called ? nil : false),
                                       occurredAt: now))
        case .failed(let rule, let detail):
            label = "failed"
            retryAt = nil
            failedRule = rule
            events.append(try NewEvent(SendFailed(attempt: progress == .settledBeforeAttempt ? nil : claim.attempt, rule: rule,
                                                  detail: String(redactor.redact(detail).prefix(4096))), occurredAt: now))
        }
        if case .response(let response) = answer { status = String(response.response.status) } else { status = "none" }
        self.claim = claim
        self.events = events
        self.failedRule = failedRule
    }
}

/// Records outcomes in group commits: the first outcome to arrive is written at once, and the
/// outcomes that arrive while a write is under way are written together by the next one (one
/// statement settles their queue rows and appends their events, one commit). Nothing waits for
/// a group to fill: an outcome alone is written alone.
final class OutcomeRecorder: Sendable {
    private struct Waiting: Sendable {
        var outcome: Outcome
        var done: CheckedContinuation<Void, Never>
    }

    private struct State: Sendable {
        var waiting: [Waiting] = []
        var writing = false
    }

    private let state = Mutex(State())

    /// Returns once `outcome` has been written by `write` (alone or with others that arrived
    /// meanwhile). `write` handles its own failures.
    func record(_ outcome: Outcome, write: @escaping @Sendable ([Outcome]) async -> Void) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let leads = state.withLock { state -> Bool in
                state.waiting.append(Waiting(outcome: outcome, done: done))
                guard !state.writing else { return false }
                state.writing = true
                return true
            }
            // Unstructured, so a cancelled worker loop (SIGTERM) still writes what finished.
            if leads { Task { await self.writeWhileWaiting(write) } }
        }
    }

    private func writeWhileWaiting(_ write: @Sendable ([Outcome]) async -> Void) async {
        while true {
            // Let tries whose answers are already in finish first (their tasks are queued on
            // the same executor): they join this group instead of waiting for the next write.
            for _ in 0..<3 { await Task.yield() }
            let group = state.withLock { state -> [Waiting] in
                let group = state.waiting
                state.waiting = []
                if group.isEmpty { state.writing = false }
                return group
            }
            guard !group.isEmpty else { return }
            await write(group.map(\.outcome))
            for waiting in group { waiting.done.resume() }
        }
    }
}

extension SendWorker {
    /// Writes a group of outcomes in one statement (``SendQueue/settled(_:owner:)``): the queue
    /// rows of the claims that still hold are settled — a terminal outcome removes the row, a
    /// retry makes it pending again — and their events appended, together; a late answer from a
    /// rescued try writes nothing. If the group fails (one send already has its terminal event,
    /// or the database failed), each outcome is written on its own.
    func writeOutcomes(_ group: [Outcome]) async {
        let written: Set<String>
        do {
            written = try await store.pool.withConnection { [store, configuration] connection in
                let appended = try store.append(
                    group.map { StreamAppend($0.events, to: $0.claim.streamID) },
                    where: SendQueue.settled(group.map { ($0.claim, $0.retryAt, $0.called) }, owner: configuration.workerID),
                    on: connection)
                // A retried send is due again later: wake the workers sleeping until their next due.
                // The outcomes are committed already: a failed notification is no failed outcome.
                if group.contains(where: { $0.retryAt != nil && appended[$0.claim.streamID] != nil }) {
                    do {
                        try connection.notify(channel: Outbox.channel)
                    } catch {
                        self.logger.warning("a retry was recorded but the workers were not notified; they poll",
                                            metadata: ErrorLogMetadata.of(error))
                    }
                }
                return Set(appended.keys)
            }
        } catch {
            if group.count > 1 {
                for outcome in group { await writeOutcomes([outcome]) }
                return
            }
            if let failure = error as? PostgresError, failure.sqlState == "LE004" {
                // The send already has its terminal event (cancelled meanwhile): nothing more to write.
                written = []
            } else {
                logger.error("an outcome could not be recorded; the lease will be rescued", metadata: ErrorLogMetadata.of(error, adding: [
                    "ledger.send": "\(group[0].claim.sendID)",
                ]))
                return
            }
        }
        for outcome in group {
            if written.contains(outcome.claim.streamID) {
                Counter(label: "ledger_send_outcomes_total", dimensions: [
                    ("provider", outcome.claim.request.provider.rawValue), ("outcome", outcome.label), ("status", outcome.status),
                ]).increment()
                if outcome.label == "failed", let rule = outcome.failedRule {
                    SendsNeedingPeople.count(provider: outcome.claim.request.provider.rawValue,
                                             deviceStreamID: outcome.claim.request.deviceStreamID.rawValue, state: .failed, rule: rule)
                }
            } else {
                logger.warning("an answer came after the try's lease was rescued; not recorded", metadata: [
                    "ledger.send": "\(outcome.claim.sendID)", "ledger.attempt": "\(outcome.claim.attempt)",
                ])
            }
        }
    }
}
