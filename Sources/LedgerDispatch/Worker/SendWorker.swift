import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerProviders
import LedgerStore
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// Drains pending sends to the providers: **where the worker loops**.
///
/// Each try of a send, in order, never holding a transaction across the call:
/// 1. **claim** (one statement, for as many sends as there are free slots, their causes read
///    with it): `FOR UPDATE SKIP LOCKED`, a lease, the attempt bumped;
/// 2. gather the context from the log (the cause, and what the provider needs that the log knows
///    now) and ask the provider's rules for a preflight decision and the request;
/// 3. **record the attempt** (one statement for the whole claim, only for sends whose claim
///    still holds): `SendAttempted` with the request as sent, credentials redacted;
/// 4. **call** the provider through the transport, with a timeout, once one of the worker's
///    slots is free (a claim may run ahead of the slots: ``Configuration/prefetch``);
/// 5. **record the outcome** (one statement per group of outcomes that finished together, each
///    written only while its claim still holds, the queue row settled in the same statement): `ResponseReceived`, then `RetryScheduled` (the
///    queue row goes back to pending) or a terminal `SendSucceeded` / `SendFailed` (the row
///    leaves the queue).
///
/// A worker that dies leaves leases behind; any worker rescues them (``SendQueue/rescue(now:store:policy:on:)``,
/// under the rules' ``SendRules/unknownOutcomePolicy``: a Singular send is parked for an operator)
/// as soon as the dead worker's liveness lock is gone, or when the lease runs out. Time comes from
/// a ``WallClock``, so the 24 h and 5 s rules are tested without waiting.
///
/// A swift-service-lifecycle `Service`: `ledger worker` runs it in a `ServiceGroup` after its pools
/// and transport, so that on SIGTERM the worker stops first and its tries in flight still have
/// their sessions and HTTP client to record their outcomes with (``run()``).
public final class SendWorker: Service {
    /// How a worker behaves.
    public struct Configuration: Sendable {
        /// This worker's name (unique among live workers): the lease owner.
        public var workerID: String
        /// Provider calls in flight at once. A send takes a slot for its call and gives it back
        /// when the answer is in; its outcome then waits for the next group commit without one
        /// (as job queues complete jobs in batches), and the worker claims nothing while twice
        /// `slots` outcomes wait. Sends claimed ahead wait for a slot (``prefetch``).
        public var slots: Int
        /// The default ``slots``: 16. A claim's tries are recorded in one statement and their
        /// outcomes settled in groups, so the more tries a group holds, the less each pays; with 8
        /// slots one worker drained 1,780 sends/s on the loopback bench, with 16 2,600 (and 24 or
        /// 32 little more: docs/performance.md, drain section).
        public static let defaultSlots = 16
        /// How long a claim lasts before another worker may rescue it. A try is called only with
        /// its ``requestTimeout`` and a tenth of the lease left, so the lease must be longer than
        /// that (``SendWorker/leaseLeavesRoom(lease:requestTimeout:)``), or nothing is ever called.
        public var lease: TimeInterval
        /// The longest a provider call may take.
        public var requestTimeout: Duration
        /// How long to wait for a notification before looking anyway.
        public var pollInterval: Duration
        /// How many places (slots and sends ahead, ``prefetch``) must be free before the worker
        /// claims again while tries are in flight (half the slots by default): sends are claimed,
        /// recorded and settled in groups.
        public var claimThreshold: Int
        /// Sends claimed, prepared and recorded ahead of a free slot (as many as the slots by default):
        /// their tries' `SendAttempted` are committed while the calls before them are in flight,
        /// so a freed slot starts its next call without waiting for a claim and a commit. Each
        /// waits for a slot in turn, at most as long as one call takes; a try whose lease would
        /// not outlast its call by then is not called (its lease is rescued as outcome-unknown),
        /// and the rules' preflight and the request are looked at again before the call. `0`: claim
        /// only into free slots; at most ``slots``; `0` too when the lease is shorter than twice the
        /// request timeout plus a tenth of the lease.
        public var prefetch: Int

        /// A configuration.
        public init(workerID: String = "worker-\(ProcessInfo.processInfo.processIdentifier)-\(UUID().uuidString.prefix(8))",
                    slots: Int = defaultSlots, lease: TimeInterval = 60, requestTimeout: Duration = .seconds(20),
                    pollInterval: Duration = .seconds(1), claimThreshold: Int? = nil, prefetch: Int? = nil) {
            self.workerID = workerID
            self.claimThreshold = max(1, min(slots, claimThreshold ?? slots / 2))
            self.slots = slots
            self.prefetch = SendWorker.leaseHoldsSendsAhead(lease: lease, requestTimeout: requestTimeout)
                ? max(0, min(slots, prefetch ?? slots)) : 0
            self.lease = lease
            self.requestTimeout = requestTimeout
            self.pollInterval = pollInterval
        }
    }

    /// Settings for the sessions of a pool that serves a worker and nothing else: pass them as
    /// ``PostgresPool/Configuration/sessionSettings`` (`ledger worker` does, and gives the
    /// decider a pool of its own).
    ///
    /// `plan_cache_mode = force_generic_plan`: a try's and an outcome group's appends carry their
    /// events as one JSON parameter, and PostgreSQL's custom plans for them look cheaper than the
    /// generic one (they see the array's length), so it planned both afresh on every call, about a
    /// sixth of their time. The setting applies to every statement with parameters on those
    /// sessions, prepared or not; the worker's others are index lookups by key (sends, events by
    /// id, keys), the claim (a function that keeps its own plan) and rescue's scan of the small
    /// queue table, whose plans do not depend on the values. Reads whose best plan does depend on
    /// them (the global log from a checkpoint, with a `LIMIT`) belong on another pool.
    /// Measured with `ledger-bench drain`, 4 workers: PostgreSQL CPU per send 0.67–0.69 → 0.59–0.62
    /// ms.
    public static let sessionSettings: [String: String] = ["plan_cache_mode": "force_generic_plan"]

    let store: EventStore
    let rules: any SendRules
    let transport: any ProviderTransport
    let configuration: Configuration
    let clock: any WallClock
    let jitter: @Sendable () -> Double
    let logger: Logger
    let loader: SendContextLoader
    /// What is removed from answers and details before they are stored (``SendRules/configuredSecrets``).
    let redactors = SecretRedactorCache()
    /// Sends claimed whose answer (or outcome, for a send settled without a call) is not in yet,
    /// those waiting for a slot included: at most ``Configuration/slots`` + ``Configuration/prefetch``.
    let inFlight = Atomic<Int>(0)
    /// The slots: provider calls in flight, at most ``Configuration/slots``; a send recorded
    /// ahead waits here for one.
    let callSlots: CallSlots
    /// Answers whose outcome is not yet recorded: they hold no slot, but once
    /// ``outcomeBacklog(slots:)`` of them wait the worker stops claiming.
    let awaitingOutcome = Atomic<Int>(0)
    let bell = WakeUpBell()
    let outcomes = OutcomeRecorder()

    /// How many answers may wait for their outcome's commit before the worker stops claiming:
    /// twice the slots. (With as many as the slots, one worker on the loopback bench stopped
    /// claiming now and then while a group commit was under way: ≈ 3,300 against ≈ 3,600 sends/s.)
    static func outcomeBacklog(slots: Int) -> Int { 2 * slots }

    /// The part of the lease a try must have left beyond its call's timeout to be called: a tenth.
    /// A margin for the outcome's commit and for other workers' clocks running ahead.
    static let leaseSlack = 0.1

    /// How much of its lease a try must have left to be called: its request timeout and a tenth
    /// of the lease (``leaseSlack``).
    static func leaseNeededForCall(lease: TimeInterval, requestTimeout: Duration) -> TimeInterval {
        requestTimeout.timeInterval + lease * leaseSlack
    }

    /// Whether a claim's lease leaves room for a call: what a call needs
    /// (``leaseNeededForCall(lease:requestTimeout:)``) and a second for the claim and the
    /// attempt's commit. With less, every try would be settled without its call.
    public static func leaseLeavesRoom(lease: TimeInterval, requestTimeout: Duration) -> Bool {
        lease >= leaseNeededForCall(lease: lease, requestTimeout: requestTimeout) + 1
    }

    /// Whether a claim's lease can hold a send ahead of the slots: it may wait one call's time for
    /// its slot and must then still have what its own call needs. Otherwise the worker claims none
    /// ahead (``Configuration/prefetch`` is 0).
    public static func leaseHoldsSendsAhead(lease: TimeInterval, requestTimeout: Duration) -> Bool {
        lease >= requestTimeout.timeInterval + leaseNeededForCall(lease: lease, requestTimeout: requestTimeout)
    }

    /// A worker over `store`'s queue.
    public init(store: EventStore, rules: any SendRules, transport: any ProviderTransport,
                configuration: Configuration = Configuration(), clock: any WallClock = SystemClock(),
                jitter: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
                logger: Logger = Logger(label: "ledger.worker")) {
        self.store = store
        self.rules = rules
        self.transport = transport
        self.configuration = configuration
        self.clock = clock
        self.jitter = jitter
        self.logger = logger
        self.loader = SendContextLoader(store: store)
        if !Self.leaseLeavesRoom(lease: configuration.lease, requestTimeout: configuration.requestTimeout) {
            logger.error("the lease leaves no room for a call: every try will be settled without its call", metadata: [
                "ledger.lease": "\(configuration.lease)", "ledger.timeout": "\(configuration.requestTimeout)",
            ])
        }
        self.callSlots = CallSlots(configuration.slots)
    }

    /// Runs until graceful shutdown (the worker is a swift-service-lifecycle `Service`: SIGTERM or
    /// SIGINT in `ledger worker`'s `ServiceGroup`) or until the task is cancelled: holds the
    /// liveness lock, listens for `NOTIFY ledger_sends` (re-listening after a reconnect), rescues
    /// stale leases, claims as many sends as it has room for (free slots and sends ahead), and
    /// sleeps until a notification, a finished send, the next due retry or the poll interval.
    ///
    /// A stop, either way, cancels the loop (`cancelWhenGracefulShutdown`), never the tries: the
    /// loop claims nothing more, and the sends claimed — in flight or waiting for a slot — finish
    /// and record their outcomes before this returns (at most about two calls' timeouts); a stop
    /// during an outage ends the back-off's wait at once. It returns normally, so that a group
    /// does not take a stop for a failure. A turn that loses its connection (a server restart) is
    /// tried again with back-off until the database is back (``ConnectionLossRetry``, loop
    /// `send worker`: logged once); any other failed turn is logged and tried again after the
    /// poll interval.
    /// - Throws: what taking the liveness lock throws at the start (the database unreachable).
    public func run() async throws {
        try await cancelWhenGracefulShutdown { try await self.loop() }
    }

    /// The loop of ``run()``, until the task is cancelled.
    private func loop() async throws {
        let liveness = try LivenessLock(conninfo: store.pool.configuration.conninfo, workerID: configuration.workerID)
        defer { liveness.release() }
        let listener = PostgresListener(conninfo: store.pool.configuration.conninfo, channels: [Outbox.channel], logger: logger)
        let listening = Task { [bell] in for await _ in listener.events { bell.ring() } }
        defer {
            listening.cancel()
            listener.stop()
        }
        let outage = ConnectionLossRetry(loop: "send worker", logger: logger)
        await withTaskGroup(of: Void.self) { group in
            var lastHousekeeping: ContinuousClock.Instant?
            while !Task.isCancelled {
                do {
                    try liveness.ensureHeld()
                    // Rescues and the queue-depth metrics run at most once per poll interval, not
                    // on every turn (a turn follows every finished try).
                    let started = ContinuousClock.now
                    let housekeeping = lastHousekeeping.map { started - $0 >= configuration.pollInterval } ?? true
                    if housekeeping { lastHousekeeping = started }
                    let wait = try await step(housekeeping: housekeeping) { claims in
                        // A claim's tries run in a task of their own, shielded from the loop's
                        // cancellation (the stop): they finish and record their outcomes; the loop
                        // waits for them.
                        group.addTask { await Task { await self.process(claims) }.value }
                    }
                    outage.succeeded()
                    _ = await bell.wait(upTo: wait)
                } catch {
                    // A stop cancels the step's statement: that is no failure to report.
                    if Task.isCancelled { break }
                    if let retry = outage.delay(after: error) {
                        try? await Task.sleep(for: retry)
                        continue
                    }
                    logger.error("worker step failed; retrying", metadata: ErrorLogMetadata.of(error))
                    _ = await bell.wait(upTo: configuration.pollInterval)
                }
            }
            await group.waitForAll()
        }
    }

    /// Processes due sends until none is due or in flight (for tests, the demo and `ledger worker --drain`):
    /// returns how many tries were made.
    @discardableResult
    public func drain() async throws -> Int {
        let liveness = try LivenessLock(conninfo: store.pool.configuration.conninfo, workerID: configuration.workerID)
        defer { liveness.release() }
        var tries = 0
        while true {
            var claimed = 0
            await withTaskGroup(of: Void.self) { group in
                do {
                    _ = try await step(housekeeping: true) { claims in
                        claimed += claims.count
                        group.addTask { await self.process(claims) }
                    }
                } catch {
                    logger.error("worker step failed", metadata: ErrorLogMetadata.of(error))
                }
                await group.waitForAll()
            }
            tries += claimed
            if claimed == 0 { return tries }
        }
    }

    /// One turn of the loop: rescue and report queue metrics (when `housekeeping`), claim into
    /// free slots; returns how long to wait before the next turn (a finished try or a
    /// notification rings the bell sooner).
    func step(housekeeping: Bool, _ start: ([SendQueue.Claim]) -> Void) async throws -> Duration {
        let now = clock.now()
        let running = inFlight.load(ordering: .relaxed)
        // Room for the slots and the sends recorded ahead of them. Outcomes falling behind their
        // answers (a slow database): no new claims until they catch up; each recorded outcome
        // rings the bell.
        let capacity = configuration.slots + configuration.prefetch
        let free = awaitingOutcome.load(ordering: .relaxed) >= Self.outcomeBacklog(slots: configuration.slots) ? 0 : capacity - running
        // Too few slots free: claim nothing yet; the next finished try rings the bell. Claiming
        // into every slot the moment it frees would settle into claims of one or two sends, and
        // each claim, its tries' record and their outcomes cost a statement whatever their size.
        guard free >= (running == 0 ? 1 : configuration.claimThreshold) || housekeeping else { return configuration.pollInterval }
        let (rescued, claims, nextDue, depth) = try await store.pool.withConnection {
            [configuration, rules] connection -> (SendQueue.Rescued, [SendQueue.Claim], Date?, [SendQueue.Depth]?) in
            let rescued = housekeeping
                ? try SendQueue.rescue(now: now, store: self.store, policy: rules.unknownOutcomePolicy, on: connection)
                : SendQueue.Rescued(count: 0, parked: [])
            var claims: [SendQueue.Claim] = []
            if free > 0 {
                // One statement, committed without waiting for its flush (schema/0006), then the
                // causes as stored; their sealed fields are opened here.
                claims = try SendQueue.claim(limit: free, owner: configuration.workerID, now: now,
                                             lease: configuration.lease, on: connection)
                // The claim has committed: nothing from here on may keep its sends from their tries.
                // Causes that do not open here (a database error, a damaged box) are read again by
                // each try, where a failure stays that send's own.
                var causes = claims.compactMap(\.cause)
                do {
                    try self.store.privacy.reveal(&causes, on: connection)
                    let opened = Dictionary(causes.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
                    for index in claims.indices {
                        if let id = claims[index].cause?.id { claims[index].cause = opened[id] }
                    }
                } catch {
                    for index in claims.indices { claims[index].cause = nil }
                }
            }
            // When to look again matters only when the slots were not filled.
            // Hints and metrics only: their failure must not lose the claim just made.
            let nextDue: Date? = claims.count < free ? (try? SendQueue.nextDue(on: connection)) : nil
            return (rescued, claims, nextDue, housekeeping ? (try? SendQueue.depth(on: connection)) : nil)
        }
        // Made at each housekeeping turn, so that the series is exported (at 0) from the first
        // one: an alert on its rate then sees the first rescue rather than a series appearing.
        if housekeeping { _ = Counter(label: "ledger_send_rescues_total") }
        if rescued.count > 0 {
            Counter(label: "ledger_send_rescues_total").increment(by: rescued.count)
            logger.warning("rescued sends whose worker or lease was gone", metadata: ["ledger.rescued": "\(rescued.count)"])
        }
        for parked in rescued.parked {
            SendsNeedingPeople.count(provider: parked.provider, deviceStreamID: parked.deviceStreamID, state: .parked, rule: parked.rule)
            logger.warning("parked a send whose outcome is unknown: an operator settles it (ledger sends retry|cancel)", metadata: [
                "ledger.send": "\(parked.sendID)", "ledger.provider": "\(parked.provider)", "ledger.rule": "\(parked.rule)",
            ])
        }
        if let depth {
            // Every provider, 0 when none of its sends is in the queue: once the last pending or
            // parked send is gone, the gauges must say so rather than keep their last value.
            let byProvider = Dictionary(depth.map { ($0.provider, $0) }, uniquingKeysWith: { first, _ in first })
            for provider in SendProvider.allCases {
                let row = byProvider[provider.rawValue]
                let dimensions = [("provider", provider.rawValue)]
                Gauge(label: "ledger_send_queue_depth", dimensions: dimensions).record(row?.pending ?? 0)
                let age = row?.oldestEnqueuedAt.map { max(0, now.timeIntervalSince($0)) } ?? 0
                Gauge(label: "ledger_send_oldest_pending_seconds", dimensions: dimensions).record(age)
                Gauge(label: "ledger_send_parked", dimensions: dimensions).record(row?.parked ?? 0)
            }
        }
        if !claims.isEmpty {
            inFlight.add(claims.count, ordering: .relaxed)
            start(claims)
        }
        // Slots filled: more may be due at once.
        if free > 0 && claims.count == free { return .zero }
        // Otherwise wait for a notification, a finished try, the next due retry or the poll
        // interval. A send already due but not claimable (its lane is busy, or another worker
        // holds it) is not a reason to look again at once: its release rings the bell.
        var wait = configuration.pollInterval
        if let nextDue, nextDue > now {
            wait = min(wait, .milliseconds(Int64((nextDue.timeIntervalSince(now) * 1000).rounded(.up))))
        }
        return wait
    }
}
