import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerProviders
import LedgerStore
import Logging
import Metrics
import Synchronization
import Tracing

extension SendWorker {
    /// What a claimed send needs next, once its context is gathered.
    enum NextStep {
        /// Call the provider with this request (the try's `SendAttempted` is recorded first).
        case call(ProviderRequest, SendContext)
        /// Settle without a call: the request could not be built, the deadline passed, or the
        /// rules' preflight decided (Apple's token past its 24 h; a Singular send waiting for its
        /// device's SKAN registration).
        case settle(SendDisposition)
    }

    /// The tries of one claim, together: the claimed sends' cause events came with the claim,
    /// their `SendAttempted` events are recorded in one statement, committed before any call
    /// leaves, each call runs as soon as one of the worker's slots is free (``CallSlots``), and
    /// each outcome joins the next group commit of ``OutcomeRecorder``. A send stops counting
    /// against the worker's room once its answer is in (its outcome then waits for its group
    /// commit, and the worker claims nothing while ``SendWorker/outcomeBacklog(slots:)`` such
    /// outcomes wait), or, for a send settled without a call, once its outcome is recorded.
    ///
    /// If recording the attempts together fails (a database error, one send's stream moved under
    /// it, or the answer of a statement that did commit was lost), each send is tried on its own
    /// instead. A try whose attempt turns out to be recorded already (its `SendAttempted` id
    /// follows from the send and the attempt) is refused and makes no call; it, and a try that
    /// fails again, is left to its lease, which a rescue makes pending again: nothing is lost,
    /// and no call is made twice.
    func process(_ claims: [SendQueue.Claim], alone: Bool = false) async {
        let open = UnansweredTries(claims.map(\.sendID))
        let release: @Sendable (UUID) -> Void = { [self] sendID in
            guard open.remove(sendID) else { return }
            inFlight.subtract(1, ordering: .relaxed)
            bell.ring()
        }
        defer {
            // A try that ended without its answer or outcome (an error) gives its room back here.
            let left = open.removeAll()
            if left > 0 {
                inFlight.subtract(left, ordering: .relaxed)
                bell.ring()
            }
        }
        let steps: [(SendQueue.Claim, NextStep)]
        let held: Set<UUID>
        do {
            steps = try await prepare(claims)
            held = try await recordAttempts(steps)
        } catch {
            guard !alone, claims.count > 1 else {
                logger.error("a try failed before its outcome was recorded; its lease will be rescued", metadata: ErrorLogMetadata.of(error, adding: [
                    "ledger.send": "\(claims.map(\.sendID))",
                ]))
                return
            }
            logger.warning("recording a claim's attempts together failed; trying each send on its own",
                           metadata: ErrorLogMetadata.of(error))
            _ = open.removeAll()  // each lone try gives its own room back
            await withTaskGroup(of: Void.self) { group in
                for claim in claims { group.addTask { await self.process([claim], alone: true) } }
            }
            return
        }
        await withTaskGroup(of: UUID.self) { group in
            for (claim, step) in steps {
                guard held.contains(claim.sendID) else {
                    logger.warning("a claim's lease was rescued before its try was recorded; nothing sent", metadata: [
                        "ledger.send": "\(claim.sendID)", "ledger.attempt": "\(claim.attempt)",
                    ])
                    release(claim.sendID)
                    continue
                }
                switch step {
                case .settle(let disposition):
                    group.addTask {
                        await self.traced(claim, cause: claim.cause) { span in
                            await self.recordOutcome(claim, answer: nil, disposition: disposition, progress: .settledBeforeAttempt,
                                                     span: span)
                        }
                        return claim.sendID
                    }
                case .call(let request, let context):
                    group.addTask {
                        await self.traced(claim, cause: context.cause) { span in
                            await self.call(claim, request: request, context: context, span: span) { release(claim.sendID) }
                        }
                        return claim.sendID
                    }
                }
            }
            // A try given back at its answer is given back once; one settled without a call is
            // given back once its outcome is recorded.
            for await finished in group { release(finished) }
        }
    }

    /// Gathers each claimed send's context and decides its next step (pure but for the reads).
    func prepare(_ claims: [SendQueue.Claim]) async throws -> [(SendQueue.Claim, NextStep)] {
        for claim in claims {
            // The claim carries the send's device: sealing the try's events need not look it up.
            store.privacy.noteSubject(claim.request.deviceStreamID.rawValue, ofSendStream: claim.streamID)
        }
        // The claim read the causes; one it did not find is looked for again (a claim made elsewhere).
        var causes: [UUID: RecordedEvent] = [:]
        for claim in claims { if let cause = claim.cause { causes[cause.id] = cause } }
        let missing = claims.map(\.request.causeEventID).filter { causes[$0] == nil }
        if !missing.isEmpty { causes.merge(try await store.events(ids: missing)) { first, _ in first } }
        var steps: [(SendQueue.Claim, NextStep)] = []
        steps.reserveCapacity(claims.count)
        for claim in claims {
            let context: SendContext
            do {
                context = try await loader.load(claim, cause: causes[claim.request.causeEventID], now: clock.now(), jitter: jitter())
            } catch let error as DispatchError where error.code == .unbuildable {
                steps.append((claim, .settle(.failed(rule: error.rule, detail: error.detail))))
                continue
            }
            steps.append((claim, nextStep(context, deadline: claim.deadline)))
        }
        return steps
    }

    /// A send's next step at `context.now`: settled when its deadline has passed, when the rules'
    /// preflight decides (``SendRules/preflight(_:)``), or when its request cannot be built;
    /// otherwise its call.
    func nextStep(_ context: SendContext, deadline: Date) -> NextStep {
        if context.now >= deadline { return .settle(.failed(rule: "deadline_passed", detail: "the send's deadline passed")) }
        if let disposition = rules.preflight(context) { return .settle(disposition) }
        do {
            return .call(try rules.buildRequest(context), context)
        } catch {
            return .settle(.failed(rule: error.rule, detail: error.detail))
        }
    }

    /// Records the `SendAttempted` of every send about to be called, in one statement that
    /// commits before any call, and only for claims still held (same attempt, same owner,
    /// running; ``SendQueue/stillHeld(_:owner:)``). Returns the ids of the claims whose tries
    /// may go on: those recorded, and those to settle without a call (their outcome checks the
    /// claim itself).
    func recordAttempts(_ steps: [(SendQueue.Claim, NextStep)]) async throws -> Set<UUID> {
        let redactor = redactors.redactor(for: rules.configuredSecrets)
        var attempts: [StreamAppend] = []
        var calling: [SendQueue.Claim] = []
        var going = Set<UUID>()
        for (claim, step) in steps {
            guard case .call(let request, let context) = step else {
                going.insert(claim.sendID)
                continue
            }
            let attempted = SendAttempted(attempt: claim.attempt, request: redactor.redact(Self.recorded(request.redacted())))
            let id = Outbox.attemptEventID(sendID: claim.sendID, attempt: claim.attempt)
            attempts.append(StreamAppend([try NewEvent(attempted, id: id, occurredAt: context.now)], to: claim.streamID))
            calling.append(claim)
        }
        guard !calling.isEmpty else { return going }
        let recorded = try await store.pool.withConnection { [store, configuration, attempts, calling] connection in
            try store.append(attempts, where: SendQueue.stillHeld(calling, owner: configuration.workerID), on: connection)
        }
        for claim in calling where recorded[claim.streamID] != nil { going.insert(claim.sendID) }
        return going
    }

    /// The call of one try, once a slot is free, then its outcome recorded. `answered` runs once
    /// the answer (or the call's failure) is in, before the outcome is recorded: the send's
    /// claim no longer counts against the worker's room, and the outcome waits for its group
    /// commit as one of ``awaitingOutcome``.
    ///
    /// A try whose lease could run out before its call ends is not called at all: another worker
    /// could rescue it mid-call and call again. It is settled at once as a retry
    /// (`lease_too_short_for_call`), and the next try, with a lease of its own, calls: due at once
    /// when none of the send's tries missed its call before, then after 2, 4, 8 … s (at most a
    /// lease; any earlier try without a call counts), so a lease too short for any call cannot
    /// spin the queue. A send that waited for its slot (one recorded ahead) is looked at again
    /// with the time it is now: its deadline, the rules' preflight (Apple's 24 h, …) and its
    /// request, rebuilt (a Branch open drops an Apple token past its 24 h; a Singular send whose
    /// SKAN window closed fails) decide as they would have at the claim. A request that is no longer the one recorded is not sent: the try
    /// is settled as a retry due at once, and the next try records and sends the new one. (The
    /// try's `SendAttempted` is recorded, so such an outcome names its attempt; its
    /// `RetryScheduled` says it made no call, and the provider's attempts do not count it.)
    func call(_ claim: SendQueue.Claim, request: ProviderRequest, context: SendContext, span: (any Span)? = nil,
              answered: @Sendable () -> Void) async {
        let waited = await callSlots.acquire()
        var current = context
        current.now = clock.now()
        let leaseLeft = claim.leaseExpiresAt.timeIntervalSince(current.now)
        if leaseLeft < Self.leaseNeededForCall(lease: configuration.lease, requestTimeout: configuration.requestTimeout) {
            callSlots.release()
            logger.warning("a try's lease could run out before its call ends; not called, tried again", metadata: [
                "ledger.send": "\(claim.sendID)", "ledger.attempt": "\(claim.attempt)",
            ])
            let backOff = claim.uncalled == 0 ? 0 : Backoff.exponential(attempt: claim.uncalled, base: 2, cap: configuration.lease)
            await recordOutcome(claim, answer: nil,
                                disposition: .retry(notBefore: current.now.addingTimeInterval(backOff), rule: "lease_too_short_for_call"),
                                progress: .attemptedWithoutCall, span: span)
            return
        }
        if waited, let late = recheck(request, current: current, deadline: claim.deadline) {
            callSlots.release()
            await recordOutcome(claim, answer: nil, disposition: late, progress: .attemptedWithoutCall, span: span)
            return
        }
        let answer: SendAnswer
        do {
            answer = .response(try await transport.send(request, timeout: configuration.requestTimeout))
        } catch {
            answer = .failure(error)
        }
        callSlots.release()
        awaitingOutcome.add(1, ordering: .relaxed)
        answered()
        defer {
            // The worker may have stopped claiming while too many outcomes waited.
            awaitingOutcome.subtract(1, ordering: .relaxed)
            bell.ring()
        }
        if case .response(let response) = answer {
            Timer(label: "ledger_send_attempt_seconds", dimensions: [("provider", claim.request.provider.rawValue)])
                .record(duration: response.latency)
        }
        var judged = context
        judged.now = clock.now()
        if rules.needsEarlierAnswers(answer, context: judged) {
            do {
                judged.earlierAnswers = try await store.readStream(claim.streamID)
                    .filter { $0.type == ResponseReceived.eventType }
                    .map { try $0.decode(ResponseReceived.self).status }
            } catch {
                logger.warning("the send's earlier answers could not be read; judged without them", metadata: ErrorLogMetadata.of(error, adding: [
                    "ledger.send": "\(claim.sendID)",
                ]))
            }
        }
        var disposition = rules.classify(answer, context: judged)
        if case .retry(let notBefore, let rule) = disposition, notBefore > claim.deadline {
            disposition = .failed(rule: "deadline_passed", detail: "\(rule): the next try would fall after the send's deadline")
        }
        await recordOutcome(claim, answer: answer, disposition: disposition, progress: .called, span: span)
    }

    /// Records a try's outcome (``OutcomeRecorder``): returns once it is committed, or known not
    /// to be written (the lease was rescued meanwhile, or the database failed: the lease then
    /// decides). The outcome is noted on the try's `span` (``noteOutcome(_:answer:disposition:)``).
    func recordOutcome(_ claim: SendQueue.Claim, answer: SendAnswer?, disposition: SendDisposition, progress: TryProgress,
                       span: (any Span)? = nil) async {
        Self.noteOutcome(span, answer: answer, disposition: disposition)
        let outcome: Outcome
        do {
            outcome = try Outcome(claim, answer: answer, disposition: disposition, progress: progress, now: clock.now(),
                                  redactor: redactors.redactor(for: rules.configuredSecrets))
        } catch {
            logger.error("an outcome could not be encoded; the lease will be rescued", metadata: ErrorLogMetadata.of(error, adding: [
                "ledger.send": "\(claim.sendID)",
            ]))
            return
        }
        await outcomes.record(outcome) { group in await self.writeOutcomes(group) }
    }

    /// What becomes of a try that waited for its slot, at `current.now`: the same decision as at
    /// its claim (``nextStep(_:deadline:)``); nil to call with `request`, or the disposition it gets
    /// instead — a retry due at once when the request would now be another than the one recorded.
    func recheck(_ request: ProviderRequest, current: SendContext, deadline: Date) -> SendDisposition? {
        switch nextStep(current, deadline: deadline) {
        case .settle(let disposition): return disposition
        case .call(let rebuilt, _): return rebuilt == request ? nil : .retry(notBefore: current.now, rule: "request_changed_while_waiting")
        }
    }

    /// The request as stored: the redacted form, byte for byte otherwise.
    static func recorded(_ request: ProviderRequest) -> RecordedRequest {
        RecordedRequest(method: request.method.rawValue, url: request.urlString,
                        headers: request.headers.map { HTTPHeader($0.name, $0.value) },
                        body: request.body.map { RecordedBody(bytes: $0) })
    }

    /// Headers worth keeping from an answer: its type, back-off hints and request ids. Never cookies.
    static func keptHeader(_ name: String) -> Bool {
        let name = name.lowercased()
        return name == "content-type" || name == "retry-after" || name.hasSuffix("request-id") || name == "x-ratelimit-reset"
    }

    static func received(_ response: TransportResponse, attempt: Int) -> ResponseReceived {
        let latency = response.latency.components
        return ResponseReceived(
            attempt: attempt, status: response.response.status,
            headers: response.response.headers.filter { keptHeader($0.name) }.map { HTTPHeader($0.name, $0.value) },
            body: response.response.body.isEmpty ? nil : RecordedBody(bytes: response.response.body),
            latencyMilliseconds: max(0, latency.seconds * 1000 + latency.attoseconds / 1_000_000_000_000_000))
    }
}

/// The worker's liveness lock: a session-level advisory lock on its name, held on a connection of
/// its own for as long as the worker runs. Other workers rescue its leases the moment it is gone
/// (`ledger_worker_alive`), without waiting for the leases to run out.
final class LivenessLock {
    private var connection: PostgresConnection?
    private let conninfo: String
    private let key: String

    init(conninfo: String, workerID: String) throws {
        self.conninfo = conninfo
        self.key = "ledger.worker." + workerID
        try take()
    }

    private func take() throws {
        let connection = try PostgresConnection(conninfo: conninfo)
        try connection.execute("SELECT pg_advisory_lock(hashtextextended(\(key), 0))")
        self.connection = connection
    }

    /// Takes the lock again if its session broke (a server restart, a terminated backend).
    func ensureHeld() throws {
        if connection?.checkUsable() != true {
            connection = nil
            try take()
        }
    }

    func release() { connection = nil }
}

/// The sends of one claim whose answer (or outcome, when there is no call) is not in yet: each
/// counts against the worker's room (``SendWorker/inFlight``) until then, and is given back from
/// its own task.
final class UnansweredTries: Sendable {
    private let sendIDs: Mutex<Set<UUID>>

    init(_ sendIDs: [UUID]) { self.sendIDs = Mutex(Set(sendIDs)) }

    /// Whether `sendID` was still unanswered (it no longer is).
    func remove(_ sendID: UUID) -> Bool { sendIDs.withLock { $0.remove(sendID) != nil } }

    /// Removes every send still unanswered; returns how many there were.
    func removeAll() -> Int {
        sendIDs.withLock { sendIDs in
            defer { sendIDs.removeAll() }
            return sendIDs.count
        }
    }
}

/// A worker's slots: a counting semaphore for provider calls. ``acquire()`` waits for a free
/// slot, first come first served, so a send recorded ahead waits at most for as many calls to end
/// as there are sends ahead of it (never more than the slots: ``SendWorker/Configuration/prefetch``).
final class CallSlots: Sendable {
    private struct State {
        var free: Int
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>

    init(_ slots: Int) { state = Mutex(State(free: slots)) }

    /// Takes a slot, waiting for one if none is free; returns whether it waited.
    func acquire() async -> Bool {
        let taken = state.withLock { state -> Bool in
            guard state.free > 0 else { return false }
            state.free -= 1
            return true
        }
        if taken { return false }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.free > 0 {
                    state.free -= 1
                    return true
                }
                state.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
        return true
    }

    /// Gives a slot back: to the longest waiting, if any.
    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiting.isEmpty {
                state.free += 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
