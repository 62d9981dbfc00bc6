import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerProviders
import LedgerStore
import Logging
import Metrics
import LedgerProjections
import Synchronization

extension SendWorker {
    /// One try of a claimed send. Errors (the database unreachable) are logged and the claim is
    /// left to its lease: a later rescue makes the send pending again, so nothing is lost.
    func process(_ claim: SendQueue.Claim) async {
        defer {
            inFlight.subtract(1, ordering: .relaxed)
            bell.ring()
        }
        do {
            try await attempt(claim)
        } catch {
            logger.error("a try failed before its outcome was recorded; its lease will be rescued", metadata: [
                "ledger.send": "\(claim.sendID)", "ledger.error": "\(error)",
            ])
        }
    }

    func attempt(_ claim: SendQueue.Claim) async throws {
        let provider = claim.request.provider.rawValue
        // The claim carries the send's device: sealing the try's events need not look it up.
        store.privacy.noteSubject(claim.request.deviceStreamID.rawValue, ofSendStream: claim.streamID)
        let context: SendContext
        do {
            context = try await loader.load(claim, now: clock.now(), jitter: jitter())
        } catch let error as SendBuildError {
            return try await settle(claim, answer: nil, disposition: .failed(rule: error.rule, detail: error.detail), attempted: false)
        }
        if context.now >= claim.deadline {
            return try await settle(claim, answer: nil, disposition: .failed(rule: "deadline_passed", detail: "the send's deadline passed"),
                                    attempted: false)
        }
        if let disposition = rules.preflight(context) {
            return try await settle(claim, answer: nil, disposition: disposition, attempted: false)
        }
        let request: ProviderRequest
        do {
            request = try rules.buildRequest(context)
        } catch {
            return try await settle(claim, answer: nil, disposition: .failed(rule: error.rule, detail: error.detail), attempted: false)
        }

        // The attempt is on the record before the request leaves.
        let attempted = SendAttempted(attempt: claim.attempt, request: Self.recorded(request.redacted()))
        let attemptEvent = try NewEvent(attempted, occurredAt: context.now)
        let held = try await store.pool.withConnection { [store, configuration] connection in
            try connection.transaction { connection in
                guard try SendQueue.stillHeld(claim, owner: configuration.workerID, on: connection) else { return false }
                try store.append([attemptEvent], to: claim.streamID, on: connection)
                return true
            }
        }
        guard held else { return }

        let answer: SendAnswer
        do {
            answer = .response(try await transport.send(request, timeout: configuration.requestTimeout))
        } catch {
            answer = .failure(error)
        }
        if case .response(let response) = answer {
            Timer(label: "ledger_send_attempt_seconds", dimensions: [("provider", provider)])
                .recordNanoseconds(Int64(response.latency.components.seconds) * 1_000_000_000
                                   + response.latency.components.attoseconds / 1_000_000_000)
        }
        var judged = context
        judged.now = clock.now()
        var disposition = rules.classify(answer, context: judged)
        if case .retry(let notBefore, let rule) = disposition, notBefore > claim.deadline {
            disposition = .failed(rule: "deadline_passed", detail: "\(rule): the next try would fall after the send's deadline")
        }
        try await settle(claim, answer: answer, disposition: disposition, attempted: true)
    }

    /// Records a try's outcome and moves the queue row, in one transaction, only while the claim
    /// still holds: a late answer from a rescued try never writes a second outcome.
    func settle(_ claim: SendQueue.Claim, answer: SendAnswer?, disposition: SendDisposition, attempted: Bool) async throws {
        let now = clock.now()
        var events: [NewEvent] = []
        func add(_ event: some LedgerEvent) throws {
            events.append(try NewEvent(event, occurredAt: now))
        }
        if case .response(let response) = answer {
            try add(Self.received(response, attempt: claim.attempt))
        }
        let outcome: String
        switch disposition {
        case .succeeded:
            outcome = "succeeded"
            try add(SendSucceeded(attempt: claim.attempt))
        case .retry(let notBefore, let rule):
            outcome = "retry"
            var detail: String?
            if case .failure(let error) = answer { detail = error.description }
            try add(RetryScheduled(attempt: claim.attempt, rule: rule, detail: detail, notBefore: notBefore))
        case .failed(let rule, let detail):
            outcome = "failed"
            try add(SendFailed(attempt: attempted ? claim.attempt : nil, rule: rule, detail: String(detail.prefix(4096))))
        }
        let batch = events
        let written: Bool
        do {
            written = try await store.pool.withConnection { [store, configuration] connection in
                try connection.transaction { connection in
                    // The lease check and the queue change in one statement; the outcome's events
                    // follow in the same transaction, so either both are written or neither.
                    var retryAt: Date?
                    if case .retry(let notBefore, _) = disposition { retryAt = notBefore }
                    guard try SendQueue.settleIfHeld(claim, owner: configuration.workerID, retryAt: retryAt, on: connection)
                    else { return false }
                    try store.append(batch, to: claim.streamID, on: connection)
                    if retryAt != nil { try connection.notify(channel: Outbox.channel) }
                    return true
                }
            }
        } catch let error as PostgresError where error.sqlState == "LE004" {
            written = false  // the send already has its terminal event (cancelled meanwhile): nothing more to write
        }
        var status = "none"
        if case .response(let response) = answer { status = String(response.response.status) }
        if written {
            Counter(label: "ledger_send_outcomes_total",
                    dimensions: [("provider", claim.request.provider.rawValue), ("outcome", outcome), ("status", status)]).increment()
        } else {
            logger.warning("an answer came after the try's lease was rescued; not recorded", metadata: [
                "ledger.send": "\(claim.sendID)", "ledger.attempt": "\(claim.attempt)",
            ])
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
