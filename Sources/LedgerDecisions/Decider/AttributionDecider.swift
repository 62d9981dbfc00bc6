import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFolds
import LedgerPostgres
import LedgerProjections
import LedgerProviders
import LedgerStore
import Logging
import Metrics
import ServiceLifecycle
import Tracing

/// One decision the decider appended.
public struct DecisionMade: Sendable, Hashable {
    /// The decision's id (also its event id).
    public var decisionID: UUID
    /// The device.
    public var deviceStreamID: String
    /// The trigger decided about.
    public var triggerEventID: UUID
    /// The decision's position in the log.
    public var position: Int64
    /// The winner, `nil` for organic.
    public var winner: AttributionTouch?
    /// The Google cross-network sends it requested (`ad_event_id` → `attributed`).
    public var crossNetwork: [String: Bool]
    /// True when the deadline, not the last answer, made the decision due.
    public var byDeadline: Bool
    /// The decision it superseded (a redo).
    public var supersedes: UUID?
}

/// Decides attribution once per trigger: when every enabled provider has a terminal answer, or
/// the app's deadline passed. Appends `AttributionDecided` to `decision-<app>/<device>` and, in the
/// same transaction, a Google cross-network send per Google ad event (`attributed` 1 for the
/// winner, else 0) and a webhook delivery per endpoint of the app that wants decisions
/// (docs/webhooks.md).
///
/// Any number of deciders may run (one per worker process): a decision is made under a
/// transaction-scoped advisory lock on the decision stream, after checking none exists yet for
/// the trigger, so a trigger is decided once.
///
/// A swift-service-lifecycle `Service` (``run()``): `ledger worker` runs it in its `ServiceGroup`,
/// which stops it on SIGTERM or SIGINT.
public struct AttributionDecider: Service {
    /// The store.
    public let store: EventStore
    /// Per-app settings, replaceable while the decider runs (`SIGHUP` reloads the apps file).
    public let reloadableSettings: Reloadable<AttributionSettings>
    /// Per-app settings as of now.
    public var settings: AttributionSettings { reloadableSettings.value }
    /// The process projection the decider reads.
    public let projection = AttributionProcessProjection(AttributionProcessReducer())
    /// Google's obligations, for the reports no decision requested.
    let obligations = GoogleObligationProjection(GoogleObligationReducer())
    let logger: Logger

    /// Creates a decider.
    public init(store: EventStore, settings: AttributionSettings = AttributionSettings(),
                logger: Logger = Logger(label: "ledger.attribution")) {
        self.init(store: store, reloadableSettings: Reloadable(settings), logger: logger)
    }

    /// A decider whose settings the caller may replace while it runs.
    public init(store: EventStore, reloadableSettings: Reloadable<AttributionSettings>,
                logger: Logger = Logger(label: "ledger.attribution")) {
        self.store = store
        self.reloadableSettings = reloadableSettings
        self.logger = logger
    }

    /// How often ``run()`` decides: every 5 seconds.
    public static let defaultInterval: Duration = .seconds(5)

    /// Decides every ``defaultInterval`` until graceful shutdown or cancellation
    /// (``run(interval:clock:)``): the `Service` entry point.
    public func run() async throws {
        try await run(interval: Self.defaultInterval)
    }

    /// Brings the process and obligation projections up to date, decides every trigger that is
    /// ready (all awaited sends finished) or overdue at `now`, then requests the Google reports
    /// owed outside any decision (see ``reportOpenObligations(device:now:)``).
    @discardableResult
    public func decidePending(now: Date) async throws -> [DecisionMade] {
        let runner = ProjectionRunner(store: store, projections: [projection, obligations], logger: logger)
        try await runner.prepare()
        try await runner.catchUp()
        let cutoff = now.addingTimeInterval(-settings.shortestDeadline)
        let devices = try await store.pool.withConnection { [projection] in
            try projection.devicesWithDueTriggers(waitingSince: cutoff, on: $0)
        }
        let made = try await decideDevices(devices, now: now)
        for device in try await devicesOwingGoogle() {
            _ = try await reportOpenObligations(device: device, now: now)
        }
        return made
    }

    /// Devices decided at once by ``decidePending(now:)``: each decision is a replay and a few
    /// statements, mostly waiting on the database, so one device at a time left a busy ledger's
    /// triggers waiting for rounds (`ledger-bench pipeline`). Devices are independent (each
    /// decision stream takes its own lock); the store's pool bounds the sessions used.
    public static let concurrentDevices = 4

    /// ``decideDevice(_:now:)`` for every device, ``concurrentDevices`` at a time; the decisions
    /// in the order of `devices`.
    func decideDevices(_ devices: [String], now: Date) async throws -> [DecisionMade] {
        try await withThrowingTaskGroup(of: (Int, [DecisionMade]).self) { group in
            var made = [[DecisionMade]](repeating: [], count: devices.count)
            var next = 0
            func start() {
                guard next < devices.count else { return }
                let index = next, device = devices[index]
                next += 1
                group.addTask { (index, try await decideDevice(device, now: now)) }
            }
            for _ in 0..<Self.concurrentDevices { start() }
            while let (index, decisions) = try await group.next() {
                made[index] = decisions
                start()
            }
            return made.flatMap { $0 }
        }
    }

    /// Decides the due triggers of one device from a fresh replay of its history.
    public func decideDevice(_ device: String, now: Date) async throws -> [DecisionMade] {
        let state = try await projection.state(of: device, store: store)
        let app = settings.forApp(state.appID ?? "")
        var made: [DecisionMade] = []
        for trigger in state.triggers where trigger.state == "waiting" {
            let ready = trigger.allSendsFinished && (!app.awaitsIAdDetails || trigger.kind != .install || trigger.iAdReceived)
            let overdue = trigger.recordedAt.addingTimeInterval(app.decisionDeadline) <= now
            guard ready || overdue else { continue }
            if let decision = try await decide(trigger, device: device, windows: app.windows, supersedes: nil, byDeadline: !ready,
                                               previousAttributed: [:], now: now) {
                made.append(decision)
            }
        }
        return made
    }

    /// Applies the rule to `trigger` and appends the decision with its cross-network sends, unless
    /// the trigger already has a decision (when `supersedes` is nil) or a newer one than
    /// `supersedes`. `previousAttributed` holds what Google was already told per ad event: a
    /// cross-network send is requested only where the value changes.
    ///
    /// Traced as one span, `attribution decision` (attributes `ledger.decision.trigger`,
    /// `ledger.decision.rule_version`, `ledger.decision.winner`: a source, `organic`, or
    /// `already_decided`); the decision's metadata records that span's `traceparent`, so that
    /// the Google cross-network sends it requests continue its trace.
    func decide(
        _ trigger: AttributionProcessReducer.Trigger, device: String, windows: AttributionWindows, supersedes: UUID?,
        byDeadline: Bool, previousAttributed: [String: Bool], now: Date
    ) async throws -> DecisionMade? {
        try await withSpan("attribution decision") { span in
            span.attributes["ledger.decision.trigger"] = trigger.kind.rawValue
            span.attributes["ledger.decision.rule_version"] = LastClickRule.version
            let made = try await decideInSpan(trigger, device: device, windows: windows, supersedes: supersedes, byDeadline: byDeadline,
                                              previousAttributed: previousAttributed, now: now)
            span.attributes["ledger.decision.winner"] = made.map { $0.winner?.source.rawValue ?? "organic" } ?? "already_decided"
            return made
        }
    }

    private func decideInSpan(
        _ trigger: AttributionProcessReducer.Trigger, device: String, windows: AttributionWindows, supersedes: UUID?,
        byDeadline: Bool, previousAttributed: [String: Bool], now: Date
    ) async throws -> DecisionMade? {
        let deviceStream = try StreamID(device)
        let decisionStream = try StreamID("decision-" + device.dropFirst("device-".count))
        let outcome = LastClickRule.decide(triggerTime: trigger.occurredAt, candidates: trigger.candidates, windows: windows)
        let decisionID = Self.decisionID(trigger: trigger.eventID, ruleVersion: LastClickRule.version, supersedes: supersedes)
        let decision = AttributionDecided(
            decisionID: decisionID, deviceStreamID: deviceStream, triggerEventID: trigger.eventID, triggerKind: trigger.kind,
            ruleVersion: LastClickRule.version, winner: outcome.winner, candidates: outcome.candidates,
            organic: outcome.winner == nil, inputPositions: Array(Set(trigger.inputPositions)).sorted(), supersedes: supersedes)
        try decision.validate()
        var crossNetwork: [String: Bool] = [:]
        for candidate in trigger.candidates {
            guard let adEventID = candidate.touch.adEventID else { continue }
            let attributed = outcome.winner?.source == .google && outcome.winner?.adEventID == adEventID
            if previousAttributed[adEventID] != attributed { crossNetwork[adEventID] = attributed }
        }
        let metadata = try EventCatalog.standard.encode(
            metadata: EventMetadata(causationID: trigger.eventID, actor: "ledger.decider", appID: deviceStream.tenant?.app,
                                    traceparent: TraceContext.traceParent()))
        let event = try NewEvent(decision, id: decisionID, metadata: metadata, occurredAt: now)
        let sends = try crossNetwork.sorted { $0.key < $1.key }.map { adEventID, attributed in
            let key = "google:cross_network:\(decisionID.uuidString.lowercased()):\(adEventID)"
            let request = SendRequested(
                sendID: Outbox.sendID(forKey: key), provider: .google, kind: .crossNetwork, causeEventID: decisionID,
                causeStreamID: decisionStream, deviceStreamID: deviceStream, idempotencyKey: key,
                parameters: ["ad_event_id": adEventID, "attributed": attributed ? "1" : "0"])
            try request.validate()
            return request
        }
        let deliveries = try webhookDeliveries(of: decisionID, decisionStream: decisionStream, deviceStream: deviceStream)
        let triggerText = trigger.eventID.uuidString.lowercased()
        let position: Int64? = try await store.pool.withTransaction { [store] connection in
            try connection.execute("SELECT pg_advisory_xact_lock(hashtext(\(decisionStream.rawValue)))")
            let latest = try EventStore.newestEventID(ofType: AttributionDecided.eventType, in: decisionStream.rawValue,
                                                      whereMember: "trigger_event_id", is: triggerText, on: connection)
            guard latest == supersedes else { return nil }
            let result = try store.append([event], to: decisionStream.rawValue, expected: .any, on: connection)
            for request in sends + deliveries { _ = try Outbox.enqueue(request, store: store, now: now, on: connection) }
            return result.events.first?.position
        }
        guard let position else { return nil }
        Counter(label: "ledger_attribution_decisions_total", dimensions: [
            ("trigger", trigger.kind.rawValue), ("winner", outcome.winner?.source.rawValue ?? "organic"),
            ("due_to", byDeadline ? "deadline" : supersedes != nil ? "redo" : "answers"),
        ]).increment()
        logger.info("attribution decided", metadata: [
            "decision": "\(decisionID)", "organic": "\(outcome.winner == nil)", "source": "\(outcome.winner?.source.rawValue ?? "-")",
            "by_deadline": "\(byDeadline)", "cross_network": "\(crossNetwork.count)", "webhooks": "\(deliveries.count)",
        ])
        return DecisionMade(
            decisionID: decisionID, deviceStreamID: device, triggerEventID: trigger.eventID, position: position,
            winner: outcome.winner, crossNetwork: crossNetwork, byDeadline: byDeadline, supersedes: supersedes)
    }

    /// One `webhook/delivery` send per endpoint of the device's app that wants decisions, keyed
    /// `webhook:<endpoint>:<decision id>`: a decision is delivered once per endpoint, and a
    /// superseding decision (a redo) is a delivery of its own.
    func webhookDeliveries(of decisionID: UUID, decisionStream: StreamID, deviceStream: StreamID) throws -> [SendRequested] {
        guard let app = deviceStream.tenant?.app.rawValue else { return [] }
        return try settings.forApp(app).webhooks.filter { $0.events.contains(.decision) }.map { subscription in
            let key = "webhook:\(subscription.endpoint):\(decisionID.uuidString.lowercased())"
            let request = SendRequested(
                sendID: Outbox.sendID(forKey: key), provider: .webhook, kind: .delivery, causeEventID: decisionID,
                causeStreamID: decisionStream, deviceStreamID: deviceStream, idempotencyKey: key,
                parameters: [ProviderSendRules.webhookEndpointParameter: subscription.endpoint,
                             ProviderSendRules.webhookEventKindParameter: WebhookEventKind.decision.rawValue])
            try request.validate()
            return request
        }
    }

    /// A decision's id, from its trigger, rule version and the decision it supersedes: deciders
    /// racing on the same trigger would write the same id.
    static func decisionID(trigger: UUID, ruleVersion: String, supersedes: UUID?) -> UUID {
        Outbox.sendID(forKey: "decision:\(trigger.uuidString.lowercased()):\(ruleVersion):"
            + (supersedes?.uuidString.lowercased() ?? "first"))
    }
}
