import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerStore

/// The pending-send queue (`send_queue`): claims, leases, outcomes and rescues. Every method is
/// synchronous, on a connection the caller holds: no transaction here stays open across an HTTP
/// call, since the worker calls the provider between two of them.
public enum SendQueue {
    /// A send a worker has claimed.
    public struct Claim: Sendable {
        /// The send's id.
        public var sendID: UUID
        /// Its stream.
        public var streamID: String
        /// This try's number (the attempt the claim bumped to).
        public var attempt: Int
        /// The send's earlier tries that made no call (`RetryScheduled` with `called: false`):
        /// this try's call number is `attempt - uncalled` (schema/0010).
        public var uncalled: Int
        /// The send's request.
        public var request: SendRequested
        /// After this, the send fails for good instead of retrying.
        public var deadline: Date
        /// When this claim's lease runs out (by the claiming worker's clock): past it, another
        /// worker may rescue the send and try it again.
        public var leaseExpiresAt: Date
        /// The send's cause event, read with the claim; nil when it is not in the log, or when
        /// its sealed fields could not be opened with the claim (the try reads it again). The
        /// worker opens the sealed fields of the causes it claims before handing them on: a
        /// cause here is as a read returns it.
        public var cause: RecordedEvent?
    }

    /// The lane a send waits in, if any: a lane's sends are claimed one at a time, oldest first
    /// (``claim(limit:owner:now:lease:on:)``), each once the one before it is settled.
    /// - Branch: a device's opens, since each carries the `randomized_bundle_token` the answer
    ///   to an earlier one gave. The lane is the device's stream id (schema/0003).
    /// - Singular: a device's calls, `singular:<device stream id>`. "Events must arrive in order,
    ///   a session before its events" (provider-rules, facts beyond the providers' documents), and
    ///   each call carries the SKAN state the answers before it left (Singular SKAdNetwork 4
    ///   implementation guide's snippet calls one at a time, under a lock).
    ///
    /// Other providers' sends have no lane, and neither have webhook deliveries: a receiver
    /// orders them by their `position` (docs/webhooks.md), so one slow delivery holds up no other.
    public static func lane(provider: SendProvider, deviceStreamID: String) -> String? {
        switch provider {
        case .branch: deviceStreamID
        case .singular: "singular:" + deviceStreamID
        case .google, .appleAdServices, .webhook: nil
        }
    }

    /// Claims up to `limit` due sends for `owner`, each with a lease until `now + lease`:
    /// `FOR UPDATE SKIP LOCKED`, so any number of workers share the queue. A lane (a device's
    /// Branch opens, a device's Singular calls: ``lane(provider:deviceStreamID:)``) offers only
    /// its oldest send, and only while nothing of it is running. The claim's
    /// commit does not wait for its flush (`ledger_claim_sends`, schema/0006).
    public static func claim(limit: Int, owner: String, now: Date, lease: TimeInterval,
                             on connection: PostgresConnection) throws -> [Claim] {
        guard limit > 0 else { return [] }
        // One statement (schema/0006). Run on its own, its commit need not wait for its flush;
        // inside a caller's transaction, it leaves that transaction's commit as it is.
        let rows = try connection.query("""
            SELECT send_id, stream_id, attempt, request, deadline, uncalled
            FROM ledger_claim_sends(\(owner), \(now.addingTimeInterval(lease)), \(now), \(limit)::integer, \(!connection.isInTransaction))
            """, prepare: true)
        let decoder = LedgerJSON.makeDecoder()
        var claims = try rows.map { row in
            Claim(sendID: try row.decode(UUID.self, at: 0), streamID: try row.decode(String.self, at: 1),
                  attempt: try row.decode(Int.self, at: 2),
                  uncalled: try row.decode(Int.self, at: 5),
                  request: try decoder.decode(SendRequested.self, from: Data(try row.decode(String.self, at: 3).utf8)),
                  deadline: try row.decode(Date.self, at: 4), leaseExpiresAt: now.addingTimeInterval(lease), cause: nil)
        }
        guard !claims.isEmpty else { return [] }
        // The causes, as stored, in one more round trip for the whole claim. The claim has
        // committed: a failure here must not keep its sends from their tries, so the causes stay
        // unread and each try reads its own again.
        guard let causes = try? EventStore.storedEvents(withIDs: Array(Set(claims.map(\.request.causeEventID))), on: connection)
        else { return claims }
        let byID = Dictionary(causes.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        for index in claims.indices { claims[index].cause = byID[claims[index].request.causeEventID] }
        return claims
    }

    /// The condition under which a claim's tries are recorded (``EventStore/append(_:where:on:)``):
    /// the streams of `claims` that are still this worker's tries (same attempt, same owner,
    /// running), their rows locked for the statement. A claim that no longer holds (its lease was
    /// rescued, the send made pending again) records nothing, and its try makes no call
    /// (`ledger_send_still_held`, schema/0018).
    public static func stillHeld(_ claims: [Claim], owner: String) -> AppendCondition {
        AppendCondition(function: "ledger_send_still_held",
                        arguments: [.jsonb(tries(claims.map { ($0, nil, true) })), .text(owner)])
    }

    /// The condition under which tries' outcomes are recorded, which also settles them, in the
    /// statement that appends their outcomes: each try whose claim still holds (same attempt,
    /// same owner, running) is settled — `retryAt` nil, the row leaves the queue; else it is
    /// pending again not before then, and counted among the send's ``Claim/uncalled`` tries when
    /// it made no call (`called` false) — and its stream may append. The others (a late answer
    /// from a rescued try) change nothing and append nothing (`ledger_send_settled`, schema/0018).
    public static func settled(_ tries: [(claim: Claim, retryAt: Date?, called: Bool)], owner: String) -> AppendCondition {
        AppendCondition(function: "ledger_send_settled", arguments: [.jsonb(Self.tries(tries)), .text(owner)])
    }

    /// ``settled(_:owner:)`` for tries that all called the provider.
    public static func settled(_ tries: [(claim: Claim, retryAt: Date?)], owner: String) -> AppendCondition {
        settled(tries.map { ($0.claim, $0.retryAt, true) }, owner: owner)
    }

    /// `[{"send_id":…,"attempt":…,"retry_at":…,"uncalled":1}]` (`retry_at` only for a retry,
    /// `uncalled` only for a try that made no call), written as bytes (ids and timestamps need no
    /// escaping).
    private static func tries(_ tries: [(claim: Claim, retryAt: Date?, called: Bool)]) -> String {
        var json: [UInt8] = [UInt8(ascii: "[")]
        for (index, (claim, retryAt, called)) in tries.enumerated() {
            if index > 0 { json.append(UInt8(ascii: ",")) }
            json.append(contentsOf: #"{"send_id":""#.utf8)
            json.append(contentsOf: claim.sendID.lowercasedText.utf8)
            json.append(contentsOf: #"","attempt":"#.utf8)
            json.append(contentsOf: String(claim.attempt).utf8)
            if let retryAt {
                json.append(contentsOf: #","retry_at":""#.utf8)
                json.append(contentsOf: PostgresTimestamp.format(retryAt).utf8)
                json.append(UInt8(ascii: "\""))
            }
            if !called { json.append(contentsOf: #","uncalled":1"#.utf8) }
            json.append(UInt8(ascii: "}"))
        }
        json.append(UInt8(ascii: "]"))
        return String(decoding: json, as: UTF8.self)
    }

    /// The send is settled: it leaves the queue (in the transaction that records its terminal event).
    public static func remove(_ sendID: UUID, on connection: PostgresConnection) throws {
        try connection.execute("DELETE FROM send_queue WHERE send_id = \(sendID)", prepare: true)
    }

    /// The send will be tried again, not before `notBefore`.
    public static func release(_ sendID: UUID, notBefore: Date, on connection: PostgresConnection) throws {
        try connection.execute("""
            UPDATE send_queue SET state = 'pending', lease_owner = NULL, lease_expires_at = NULL, not_before = \(notBefore)
            WHERE send_id = \(sendID)
            """, prepare: true)
    }

    /// A running send whose lease ran out (or whose worker died).
    struct Stale {
        var sendID: UUID
        var streamID: String
        var attempt: Int
        var leaseExpiresAt: Date
        var ownerDead: Bool
        var provider: String
        var deviceStreamID: String
    }

    /// A send a rescue parked (``DeliveryAfterUnknownOutcome/park(rule:)``), for the worker's
    /// metric of sends that need people.
    public struct ParkedByRescue: Sendable, Hashable {
        /// The send.
        public var sendID: UUID
        /// Its provider (`SendRequested.provider`).
        public var provider: String
        /// Its device's stream (`device-<app>/<device>`).
        public var deviceStreamID: String
        /// The rule that parked it.
        public var rule: String
    }

    /// What one rescue did.
    public struct Rescued: Sendable {
        /// How many running sends it took back (pending again, or parked).
        public var count: Int
        /// The sends among them it parked.
        public var parked: [ParkedByRescue]
    }

    /// ``rescue(now:store:policy:on:)`` under the providers' documents' policy
    /// (``UnknownOutcomePolicy/documented``); returns how many were rescued.
    public static func rescue(now: Date, store: EventStore, on connection: PostgresConnection) throws -> Int {
        try rescue(now: now, store: store, policy: .documented, on: connection).count
    }

    /// Rescues running sends whose lease expired before `now`, or whose worker is gone (it no
    /// longer holds its liveness lock). A try that had been recorded as attempted
    /// (`SendAttempted` committed, no outcome) gets `SendOutcomeUnknown` — the call may or may not
    /// have reached the provider — and then what `policy` says for its provider: pending again,
    /// or parked (`SendParked` with the policy's rule; the row stays, in state `parked`, and no
    /// worker claims it until an operator settles it: ``ParkedSends``). A try that recorded
    /// nothing made no call: it gets `RetryScheduled` (`rescued_before_attempt`, `called: false`),
    /// is counted among the send's ``Claim/uncalled`` tries, and is pending again whatever its
    /// provider. All in one transaction.
    public static func rescue(now: Date, store: EventStore, policy: UnknownOutcomePolicy,
                              on connection: PostgresConnection) throws -> Rescued {
        try connection.transaction { connection in
            // `ledger_worker_alive`'s rule (schema/0003), with the live workers' locks read from
            // pg_locks once rather than once per running send: with four workers' 32 tries
            // running, the per-row form cost 27 ms of server time on every rescue.
            // Liveness is judged on the row itself, so that a row another worker claimed since this
            // statement's snapshot is judged again by its new owner when it is locked.
            let stale = try connection.query("""
                WITH alive AS MATERIALIZED (
                    SELECT (classid::bigint << 32) | objid::bigint AS lock_key FROM pg_locks
                    WHERE locktype = 'advisory' AND objsubid = 1 AND granted
                      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                )
                SELECT q.send_id, q.stream_id, q.attempt, q.lease_expires_at,
                       NOT EXISTS (SELECT 1 FROM alive WHERE lock_key = hashtextextended('ledger.worker.' || q.lease_owner, 0)),
                       q.provider, q.device_stream_id
                FROM send_queue AS q
                WHERE q.state = 'running' AND (q.lease_expires_at < \(now)
                    OR NOT EXISTS (SELECT 1 FROM alive WHERE lock_key = hashtextextended('ledger.worker.' || q.lease_owner, 0)))
                ORDER BY q.lease_expires_at
                FOR UPDATE OF q SKIP LOCKED
                """).map { row in
                Stale(sendID: try row.decode(UUID.self, at: 0), streamID: try row.decode(String.self, at: 1),
                      attempt: try row.decode(Int.self, at: 2), leaseExpiresAt: try row.decode(Date.self, at: 3),
                      ownerDead: try row.decode(Bool.self, at: 4), provider: try row.decode(String.self, at: 5),
                      deviceStreamID: try row.decode(String.self, at: 6))
            }
            var parked: [ParkedByRescue] = []
            for send in stale {
                let last = try EventStore.lastStoredEvent(of: send.streamID, on: connection)
                var attempted = false
                if let last, last.type == SendAttempted.eventType {
                    // As stored: its personal fields may be sealed, its attempt never is.
                    let object = try? JSONSerialization.jsonObject(with: last.data) as? [String: Any]
                    attempted = (object?["attempt"] as? Int) == send.attempt
                }
                if attempted {
                    let how = send.ownerDead ? "the worker process ended during the try" : "the lease ran out during the try"
                    var events = [try NewEvent(SendOutcomeUnknown(attempt: send.attempt, leaseExpiredAt: send.leaseExpiresAt,
                                                                  detail: how), occurredAt: now)]
                    // A provider the queue does not know (a row written by a newer version) is
                    // parked too: a repeat is safe only where the policy says so.
                    let delivery = SendProvider(rawValue: send.provider).map(policy.delivery(for:))
                        ?? .park(rule: "unknown_provider_outcome_unknown")
                    if case .park(let rule) = delivery {
                        events.append(try NewEvent(SendParked(attempt: send.attempt, rule: rule,
                                                              detail: how + "; a repeat may be counted twice"), occurredAt: now))
                        try store.append(events, to: send.streamID, on: connection)
                        try park(send.sendID, on: connection)
                        parked.append(ParkedByRescue(sendID: send.sendID, provider: send.provider,
                                                     deviceStreamID: send.deviceStreamID, rule: rule))
                        continue
                    }
                    try store.append(events, to: send.streamID, on: connection)
                } else {
                    // The try recorded nothing, so it called nobody: it is not one of the send's
                    // calls. The log says so too, so the queue rebuilt from it agrees.
                    let retry = RetryScheduled(attempt: send.attempt, rule: "rescued_before_attempt", notBefore: now, called: false)
                    try store.append([try NewEvent(retry, occurredAt: now)], to: send.streamID, on: connection)
                    try connection.execute("UPDATE send_queue SET uncalled = uncalled + 1 WHERE send_id = \(send.sendID)")
                }
                try release(send.sendID, notBefore: now, on: connection)
            }
            if stale.count > parked.count { try connection.notify(channel: Outbox.channel) }
            return Rescued(count: stale.count, parked: parked)
        }
    }

    /// The send is parked: no worker claims it (schema/0020) until ``ParkedSends`` settles it.
    static func park(_ sendID: UUID, on connection: PostgresConnection) throws {
        try connection.execute("""
            UPDATE send_queue SET state = 'parked', lease_owner = NULL, lease_expires_at = NULL WHERE send_id = \(sendID)
            """, prepare: true)
    }

    /// The earliest time a pending send becomes due (nil: nothing pending).
    public static func nextDue(on connection: PostgresConnection) throws -> Date? {
        try connection.query("SELECT min(not_before) FROM send_queue WHERE state = 'pending'").single().decode(Date?.self, at: 0)
    }

    /// Queue depth and oldest pending age, by provider.
    public struct Depth: Sendable, Hashable {
        /// The provider.
        public var provider: String
        /// Sends pending.
        public var pending: Int
        /// Sends running.
        public var running: Int
        /// Sends parked for an operator (``DeliveryAfterUnknownOutcome/park(rule:)``).
        public var parked: Int
        /// When the oldest pending send was enqueued.
        public var oldestEnqueuedAt: Date?
    }

    /// The queue's depth by provider.
    public static func depth(on connection: PostgresConnection) throws -> [Depth] {
        try connection.query("""
            SELECT provider, count(*) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state = 'running'),
                min(enqueued_at) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state = 'parked')
            FROM send_queue GROUP BY provider ORDER BY provider
            """).map { row in
            Depth(provider: try row.decode(String.self, at: 0), pending: try row.decode(Int.self, at: 1),
                  running: try row.decode(Int.self, at: 2), parked: try row.decode(Int.self, at: 4),
                  oldestEnqueuedAt: try row.decode(Date?.self, at: 3))
        }
    }
}
