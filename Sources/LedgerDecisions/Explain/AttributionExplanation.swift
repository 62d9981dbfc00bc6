import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFolds
import LedgerProjections
import LedgerStore

/// Everything about a device's attribution an auditor or a support engineer asks: per trigger,
/// the sends it waited for and how they ended, every decision made (superseded ones too) with its
/// candidates and reasons, answers that came late, what Google was told, and the device's sends
/// that need people (parked after an unknown outcome, or failed for good) with their rule.
public struct AttributionExplanation: Sendable, Codable {
    /// One decision as recorded.
    public struct Decision: Sendable, Codable {
        /// The event.
        public var decision: AttributionDecided
        /// Its log position.
        public var position: Int64
        /// When it was recorded.
        public var recordedAt: Date
    }

    /// One Google ad event and what Google was told about it.
    public struct GoogleReport: Sendable, Codable {
        /// `ad_event_id`.
        public var adEventID: String
        /// `open`, `requested` or `closed` (Google answered 200).
        public var state: String
        /// The `attributed` value last requested.
        public var attributed: String?
    }

    /// One trigger's story.
    public struct TriggerStory: Sendable, Codable {
        /// The process state.
        public var trigger: AttributionProcessReducer.Trigger
        /// Decisions about it, oldest first.
        public var decisions: [Decision]
    }

    /// The device.
    public var deviceStreamID: String
    /// Its app, when known.
    public var appID: String?
    /// Every trigger in log order.
    public var triggers: [TriggerStory]
    /// What Google was told, per ad event.
    public var google: [GoogleReport]
    /// The device's sends no worker will finish by itself, oldest first: parked (a try's outcome
    /// is unknown and the provider counts every request; an operator settles it) or failed for
    /// good (``SendsNeedingPeople/fold(_:)``).
    public var sendsNeedingPeople: [SendNeedingPeople]
    /// The device's webhook deliveries (docs/webhooks.md), oldest first; each decision's are
    /// shown under it.
    public var webhooks: [WebhookDeliveryStory] = []

    /// Reads a device's explanation (as of a position or time, for auditors).
    public static func load(device: String, asOf: AsOf? = nil, store: EventStore) async throws -> AttributionExplanation {
        let process = try await AttributionProcessProjection(AttributionProcessReducer()).state(of: device, asOf: asOf, store: store)
        let obligations = try await GoogleObligationProjection(GoogleObligationReducer()).state(of: device, asOf: asOf, store: store)
        let decisionStream = "decision-" + device.dropFirst("device-".count)
        let decoder = LedgerJSON.makeDecoder()
        let recorded = try await store.readStream(decisionStream, limit: 10_000, asOf: asOf)
            .filter { $0.type == AttributionDecided.eventType }
            .map { Decision(decision: try decoder.decode(AttributionDecided.self, from: $0.data), position: $0.position,
                            recordedAt: $0.recordedAt) }
        let sends = try await store.readHistory(
            of: .deviceHistory(device), types: Array(Set(SendsNeedingPeople.eventTypes + WebhookDeliveryStory.eventTypes)), asOf: asOf)
        return AttributionExplanation(
            deviceStreamID: device, appID: process.appID,
            triggers: process.triggers.map { trigger in
                TriggerStory(trigger: trigger, decisions: recorded.filter { $0.decision.triggerEventID == trigger.eventID })
            },
            google: obligations.obligations.values.sorted { $0.adEventID < $1.adEventID }.map {
                GoogleReport(adEventID: $0.adEventID, state: $0.state.rawValue, attributed: $0.attributed)
            },
            sendsNeedingPeople: SendsNeedingPeople.fold(sends), webhooks: WebhookDeliveryStory.fold(sends))
    }

    /// The explanation as text a person reads.
    public func render() -> String {
        var lines = ["Device \(deviceStreamID)" + (appID.map { " (app \($0))" } ?? "")]
        if triggers.isEmpty { lines.append("  No first open or session recorded: nothing to attribute.") }
        for story in triggers {
            let trigger = story.trigger
            let what = trigger.kind == .install ? "Install" : "Session (re-attribution)"
            lines.append("")
            lines.append("\(what) at \(Self.time(trigger.occurredAt)) — event \(trigger.eventID.uuidString.lowercased()), position \(trigger.position)")
            let finished = trigger.sends.filter { $0.terminal != nil }.count
            lines.append("  Sends awaited: \(finished) of \(trigger.sends.count) finished"
                + (trigger.sends.isEmpty ? "" : ": " + trigger.sends.map { "\($0.provider.rawValue) \(Self.ending($0.terminal))" }
                    .joined(separator: ", ")))
            if story.decisions.isEmpty {
                lines.append(trigger.state == "not_needed"
                    ? "  No decision needed: no deep link and no provider offered a touch."
                    : "  Not decided yet: waiting for the sends above or the app's deadline.")
            }
            for (index, recorded) in story.decisions.enumerated() {
                let decision = recorded.decision
                let current = index == story.decisions.count - 1
                lines.append("  Decision \(decision.decisionID.uuidString.lowercased()) (\(decision.ruleVersion)), recorded "
                    + "\(Self.time(recorded.recordedAt)) at position \(recorded.position)"
                    + (decision.supersedes.map { ", supersedes \($0.uuidString.lowercased())" } ?? "")
                    + (current ? "" : " — superseded"))
                if let winner = decision.winner {
                    lines.append("    Winner: \(Self.describe(winner))")
                } else {
                    lines.append("    Winner: none — organic")
                }
                for candidate in decision.candidates {
                    let mark = candidate.outcome == .won ? "✓" : "✗"
                    lines.append("    \(mark) \(Self.describe(candidate.touch)) — \(Self.reason(candidate.outcome))")
                }
                lines.append("    Inputs (log positions): \(decision.inputPositions.map(String.init).joined(separator: ", "))")
                for delivery in webhooks where delivery.decisionID == decision.decisionID {
                    lines.append("    \(delivery.line)")
                }
            }
            for late in trigger.lateAnswers {
                lines.append("  Late answer: \(late.provider?.rawValue ?? "apple_iad") \(late.type) at position \(late.position)"
                    + (late.offeredTouch ? " offered a touch the decision did not see" : " offered no touch"))
            }
        }
        if !google.isEmpty {
            lines.append("")
            lines.append("Google cross-network reports:")
            for report in google {
                lines.append("  ad event \(report.adEventID): attributed=\(report.attributed ?? "-"), \(Self.googleState(report.state))")
            }
        }
        if !sendsNeedingPeople.isEmpty {
            lines.append("")
            lines.append("Sends that need people:")
            for send in sendsNeedingPeople {
                let id = send.sendID.uuidString.lowercased()
                let what = "\(send.provider.rawValue)/\(send.kind.rawValue) send \(id)"
                switch send.state {
                case .parked:
                    lines.append("  \(what): parked at \(Self.time(send.at)) (\(send.rule)) — a try's outcome is unknown "
                        + "and \(send.provider.rawValue) counts every request, so it is not repeated by itself; "
                        + "settle it with `ledger sends retry \(id)` or `ledger sends cancel \(id)`")
                case .failed:
                    lines.append("  \(what): failed for good at \(Self.time(send.at)) (\(send.rule))")
                }
            }
        }
        return lines.joined(separator: "\n")
    }

    /// A time as the explanation writes it (ISO 8601, UTC), shared with the timeline page.
    public static func time(_ date: Date) -> String { date.formatted(.iso8601) }

    /// A touch in words: source, click or view, time, campaign, ad event. The text and the drawn
    /// timeline use these same words.
    public static func describe(_ touch: AttributionTouch) -> String {
        var parts = ["\(touch.source.rawValue) \(touch.interaction.rawValue) at \(time(touch.time))"]
        if let campaign = touch.campaignID { parts.append("campaign \(campaign)") }
        if let name = touch.campaignName { parts.append("\"\(name)\"") }
        if let adEvent = touch.adEventID { parts.append("ad event \(adEvent)") }
        return parts.joined(separator: ", ")
    }

    /// Why a candidate won or lost, in words (the last-click rule's step that decided it).
    public static func reason(_ outcome: CandidateOutcome) -> String {
        switch outcome {
        case .won: "won: the latest eligible touch"
        case .outsideWindow: "lost: outside its lookback window (or after the trigger)"
        case .viewBeatenByClick: "lost: a view, and a click inside its window beats any view"
        case .earlierClick: "lost: a later touch won (last click wins)"
        case .tieLost: "lost: as late as the winner, after it in the tie-break order"
        }
    }

    /// How an awaited send ended (`answered`, `failed`, `cancelled`), or `pending`.
    public static func ending(_ terminal: String?) -> String {
        switch terminal {
        case SendSucceeded.eventType: "answered"
        case SendFailed.eventType: "failed"
        case SendCancelled.eventType: "cancelled"
        default: "pending"
        }
    }

    /// What a Google report's state means, in words.
    public static func googleState(_ state: String) -> String {
        switch state {
        case "closed": "Google answered 200"
        case "requested": "request pending"
        default: "still owed"
        }
    }
}
