import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFolds
import LedgerPostgres
import LedgerProjections
import LedgerStore
import Logging

extension AttributionDecider {
    /// Requests the Google cross-network reports that no decision requested: affirmative answers
    /// to in-app conversions (a purchase, a custom event), and answers to a trigger's conversion
    /// that came after its decision. Google App Conversion Tracking API: every affirmative answer
    /// obliges a cross-network request "after deciding the last click".
    ///
    /// - A late answer to a trigger's conversion is reported against that trigger's decision:
    ///   `attributed=1` only if its ad event is the winner (it cannot be: the decision did not see
    ///   it), so `0`.
    /// - An in-app conversion is reported against the device's latest decision: `attributed=1`
    ///   when that decision's winner is Google and the ad event is of the winning campaign (the
    ///   user the campaign brought in converted), `0` otherwise.
    /// - Nothing is reported before the device has a decision; an obligation with a
    ///   cross-network send already requested (pending, failed or done) is left alone.
    /// - Returns: how many reports were requested.
    func reportOpenObligations(device: String, now: Date) async throws -> Int {
        let owed = try await obligations.state(of: device, store: store).obligations.values
            .filter { $0.state == .open && $0.crossNetworkSends.isEmpty }
        let enqueued = try await requestReports(of: owed, device: device, now: now)
        if enqueued > 0 {
            logger.info("Google cross-network reports requested for obligations outside a decision",
                        metadata: ["count": "\(enqueued)"])
        }
        return enqueued
    }

    /// Requests again the Google cross-network reports whose every request failed for good (the
    /// obligation is open again, with as many failures as reports): for ops, once what made them
    /// fail is fixed (credentials, an outage). The report is built as
    /// ``reportOpenObligations(device:now:)`` builds it, under a new idempotency key (the old
    /// sends stay in the log). An obligation whose report was cancelled (the report superseded)
    /// is left alone, and so is every obligation of an erased device.
    /// - Returns: how many reports were requested.
    public func requestFailedReportsAgain(now: Date) async throws -> Int {
        let runner = ProjectionRunner(store: store, projections: [projection, obligations], logger: logger)
        try await runner.prepare()
        try await runner.catchUp()
        let devices = try await store.pool.withConnection { [obligations] connection in
            let reported = try obligations.devicesWithOpenObligations(reportRequested: true, on: connection)
            let erased = try EventStore.erasedSubjects(among: reported, on: connection)
            return reported.filter { !erased.contains($0) }
        }
        var requested = 0
        for device in devices {
            let failed = try await obligations.state(of: device, store: store).obligations.values
                .filter { $0.state == .open && !$0.crossNetworkSends.isEmpty && $0.failures.count == $0.crossNetworkSends.count }
            requested += try await requestReports(of: failed, device: device, now: now)
        }
        if requested > 0 {
            logger.info("failed Google cross-network reports requested again", metadata: ["count": "\(requested)"])
        }
        return requested
    }

    /// Enqueues the cross-network reports of `owed` (obligations of `device`), each against the
    /// decision it belongs to (see ``reportOpenObligations(device:now:)``); an obligation with
    /// earlier reports gets a key of its own (`…:<n>`, n the report's number). Returns how many
    /// were enqueued (not duplicates).
    private func requestReports(of owed: some Collection<GoogleObligationReducer.Obligation>, device: String,
                                now: Date) async throws -> Int {
        guard !owed.isEmpty else { return 0 }
        let process = try await projection.state(of: device, store: store)
        let deviceStream = try StreamID(device)
        let decisionStream = try StreamID("decision-" + device.dropFirst("device-".count))
        let decoder = LedgerJSON.makeDecoder()
        let decisions = try await store.readStream(decisionStream.rawValue, limit: 10_000)
            .filter { $0.type == AttributionDecided.eventType }
            .map { try decoder.decode(AttributionDecided.self, from: $0.data) }
        guard let latest = decisions.last else { return 0 }
        var sends: [SendRequested] = []
        for obligation in owed.sorted(by: { $0.adEventID < $1.adEventID }) {
            let decision: AttributionDecided
            let attributed: Bool
            if let trigger = process.triggers.first(where: { $0.eventID == obligation.causeEventID }) {
                guard let current = trigger.decisionID, let found = decisions.last(where: { $0.decisionID == current }) else {
                    continue  // not decided yet: the decision reports it
                }
                decision = found
                attributed = found.winner?.source == .google && found.winner?.adEventID == obligation.adEventID
            } else {
                decision = latest
                attributed = latest.winner?.source == .google && latest.winner?.campaignID == String(obligation.campaignID)
            }
            var key = "google:cross_network:\(decision.decisionID.uuidString.lowercased()):\(obligation.adEventID)"
            if !obligation.crossNetworkSends.isEmpty { key += ":\(obligation.crossNetworkSends.count + 1)" }
            let request = SendRequested(
                sendID: Outbox.sendID(forKey: key), provider: .google, kind: .crossNetwork, causeEventID: decision.decisionID,
                causeStreamID: decisionStream, deviceStreamID: deviceStream, idempotencyKey: key,
                parameters: ["ad_event_id": obligation.adEventID, "attributed": attributed ? "1" : "0"])
            try request.validate()
            sends.append(request)
        }
        guard !sends.isEmpty else { return 0 }
        return try await store.pool.withTransaction { [store, sends] connection in
            try sends.filter { try !Outbox.enqueue($0, store: store, now: now, on: connection).wasDuplicate }.count
        }
    }

    /// The devices with an open Google obligation that no report was requested for (from the
    /// `google_obligations` projection): the ones ``reportOpenObligations(device:now:)`` may act
    /// on. An obligation whose report failed for good stays open (still owed, for ops to see) but
    /// is not requested again, so its device is not read again on every pass.
    func devicesOwingGoogle() async throws -> [String] {
        try await store.pool.withConnection { [obligations] in
            try obligations.devicesWithOpenObligations(reportRequested: false, on: $0)
        }
    }
}
