import Foundation
import LedgerDomain
import LedgerFolds
import LedgerPostgres
import LedgerProjections
import LedgerStore
import Logging
import ServiceLifecycle

/// The decision rules the ledger knows, by version.
public enum AttributionRuleVersion {
    /// Every rule version the decider can apply (`last-click-v1`, also accepted as `1`).
    public static let known = [LastClickRule.version]

    /// The canonical version for `text` (`1` or `last-click-v1`), or nil when unknown.
    public static func resolve(_ text: String) -> String? {
        if known.contains(text) { return text }
        if let number = Int(text), known.contains("last-click-v\(number)") { return "last-click-v\(number)" }
        return nil
    }
}

/// Why a redo refused to start.
public struct UnknownRuleVersion: Error, Sendable, Hashable, CustomStringConvertible {
    /// The version asked for.
    public var requested: String
    /// What the ledger knows.
    public var known: [String]
    /// `unknown rule version 'x' (known: …)`.
    public var description: String { "unknown rule version '\(requested)' (known: \(known.joined(separator: ", ")))" }
}

/// What a redo did.
public struct RedoReport: Sendable, Hashable {
    /// Decisions looked at.
    public var examined = 0
    /// Decisions whose recomputation gave the same answer (nothing appended).
    public var unchanged = 0
    /// New decisions appended, each superseding the one it replaces.
    public var superseded: [DecisionMade] = []
}

extension AttributionDecider {
    /// Follows the log until graceful shutdown or cancellation: every `interval`, brings the
    /// process projection up to date and decides what is due at `clock.now()`. A round that loses
    /// its connection (a server restart) is tried again with back-off until the database is back
    /// (``ConnectionLossRetry``, loop `attribution decider`: logged once); any other failure is
    /// logged and the next round tries again.
    ///
    /// A stop cancels the round under way (`cancelWhenGracefulShutdown`): each decision is its own
    /// transaction, so a cancelled round leaves whole decisions or none, and the next process
    /// decides the rest. The stop's own cancellation is not logged as a failure, and this returns
    /// normally.
    public func run(interval: Duration, clock: any WallClock = SystemClock()) async throws {
        await cancelWhenGracefulShutdown {
            let outage = ConnectionLossRetry(loop: "attribution decider", logger: logger)
            while !Task.isCancelled {
                do {
                    try await outage.retrying { try await decidePending(now: clock.now()) }
                } catch {
                    // A stop cancels the round's statement: that is no failure to report.
                    if Task.isCancelled { return }
                    logger.error("deciding failed; trying again next round", metadata: ErrorLogMetadata.of(error))
                }
                try? await Task.sleep(for: interval)
            }
        }
    }

    /// Re-decides every decision recorded at or after `since` (all when nil) with `ruleVersion`,
    /// from the inputs the log holds now (after a fix to how answers are read, or a new rule).
    ///
    /// Never edits: a changed outcome is a new `AttributionDecided` that `supersedes` the old one;
    /// an unchanged one appends nothing. Google is told again only about ad events whose
    /// `attributed` value changed from what the last cross-network send for it said.
    /// - Parameter progress: called with (devices re-decided, devices in all) before the first
    ///   device and after each.
    public func redo(ruleVersion: String, since: Date?, now: Date,
                     progress: (@Sendable (Int, Int) -> Void)? = nil) async throws -> RedoReport {
        guard let version = AttributionRuleVersion.resolve(ruleVersion) else {
            throw UnknownRuleVersion(requested: ruleVersion, known: AttributionRuleVersion.known)
        }
        precondition(version == LastClickRule.version, "one rule version is known")
        let runner = ProjectionRunner(store: store, projections: [projection], logger: logger)
        try await runner.prepare()
        try await runner.catchUp()
        let devices = try await store.pool.withConnection { [projection] in
            try projection.devicesDecided(since: since ?? Date(timeIntervalSince1970: 0), on: $0)
        }
        let obligations = GoogleObligationProjection(GoogleObligationReducer())
        var report = RedoReport()
        progress?(0, devices.count)
        for (index, device) in devices.enumerated() {
            defer { progress?(index + 1, devices.count) }
            let state = try await projection.state(of: device, store: store)
            let decisionStream = "decision-" + device.dropFirst("device-".count)
            let recorded = try await store.readStream(decisionStream, limit: 10_000)
            let told = try await obligations.state(of: device, store: store).obligations
            let app = settings.forApp(state.appID ?? "")
            for trigger in state.triggers {
                guard let current = trigger.decisionID, let decidedAt = trigger.decidedAt, decidedAt >= (since ?? Date(timeIntervalSince1970: 0)),
                    let old = try recorded.first(where: { $0.id == current })
                        .map({ try LedgerJSON.makeDecoder().decode(AttributionDecided.self, from: $0.data) })
                else { continue }
                report.examined += 1
                let outcome = LastClickRule.decide(triggerTime: trigger.occurredAt, candidates: trigger.candidates, windows: app.windows)
                if outcome.winner == old.winner, outcome.candidates == old.candidates {
                    report.unchanged += 1
                    continue
                }
                var previous: [String: Bool] = [:]
                for (adEventID, obligation) in told {
                    if let attributed = obligation.attributed { previous[adEventID] = attributed == "1" }
                }
                if let made = try await decide(trigger, device: device, windows: app.windows, supersedes: current,
                                               byDeadline: false, previousAttributed: previous, now: now) {
                    report.superseded.append(made)
                }
            }
        }
        return report
    }
}
