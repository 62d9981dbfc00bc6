import Foundation
import LedgerDomain
import LedgerProviders

/// Google's cross-network obligations per device (Google App Conversion Tracking API): when Google answers a conversion
/// request affirmatively, the consumer MUST send a cross-network attribution request for each
/// `ad_event_id` after deciding the last click (`attributed` 1 for the winner, else 0).
///
/// An obligation opens with each ad event of a 200 answer with `attributed: true` to a
/// `conversion` send (an answer with `attributed: false` obliges nothing, whatever ad events it
/// lists: ``GoogleConversionResponse/claimedAdEvents``) and holds what
/// the cross-network request needs (the conversion send and its cause, the ad event). It is
/// `requested` once a `cross_network` send for its `ad_event_id` is requested, and `closed` when
/// such a send got Google's 200. A cross-network send that fails for good puts it back to `open`
/// (it is still owed); a later one that succeeds closes it.
public struct GoogleObligationReducer: DeviceStateReducer {
    /// Where an obligation stands.
    public enum ObligationState: String, Codable, Sendable, Hashable {
        /// Owed, no cross-network send pending.
        case open
        /// A cross-network send is pending.
        case requested
        /// Google answered 200 to a cross-network send.
        case closed
    }

    /// One obligation: an `ad_event_id` Google reported.
    public struct Obligation: Codable, Sendable, Equatable {
        /// Google's `ad_event_id`.
        public var adEventID: String
        /// The conversion send whose answer carried it (the request to derive from).
        public var conversionSendStreamID: String
        /// The conversion's cause (the `FirstOpen`, `SessionStarted`, … it was built from).
        public var causeEventID: UUID
        /// The ad event's `timestamp` (the interaction time, for last click).
        public var adEventAt: Date
        /// `campaign_type`.
        public var campaignType: String
        /// `campaign_id`.
        public var campaignID: Int64
        /// `network_type`.
        public var networkType: String
        /// When Google's answer was recorded.
        public var openedAt: Date
        /// The state.
        public var state = ObligationState.open
        /// The cross-network sends requested for it.
        public var crossNetworkSends: [String] = []
        /// The `attributed` value of the last cross-network send requested.
        public var attributed: String?
        /// Rules of cross-network sends that failed for good.
        public var failures: [String] = []
        /// When Google's 200 closed it.
        public var closedAt: Date?
    }

    /// One device's obligations.
    public struct State: Codable, Sendable, Equatable {
        /// Obligations by `ad_event_id`.
        public var obligations: [String: Obligation] = [:]
        /// Which obligation each cross-network send is for (send stream → `ad_event_id`).
        public var obligationOfSend: [String: String] = [:]
        /// Affirmative conversion answers seen.
        public var affirmativeAnswers = 0

        /// A device no event has touched.
        public init() {}
    }

    /// The reducer.
    public init() {}

    public let name = "google_obligations"
    /// 2: an answer with `attributed: false` opens no obligation.
    public let version = 2
    public var deviceEventTypes: [String] { [] }
    public var followedProviders: Set<SendProvider> { [.google] }

    public func initialState() -> State { State() }

    public func apply(_ event: DeviceEvent, to state: inout State) throws {
        guard let request = event.send else { return }
        let stream = event.record.streamID
        switch (event.type, request.kind) {
        case (SendRequested.eventType, .crossNetwork):
            guard let adEventID = request.parameters?["ad_event_id"], var obligation = state.obligations[adEventID] else { return }
            state.obligationOfSend[stream] = adEventID
            obligation.crossNetworkSends.append(stream)
            obligation.attributed = request.parameters?["attributed"]
            if obligation.state == .open { obligation.state = .requested }
            state.obligations[adEventID] = obligation
        case (ResponseReceived.eventType, .conversion):
            let response = try event.decode(ResponseReceived.self)
            guard response.status == 200, let body = response.body?.bytes,
                let answer = try? GoogleConversionResponse.parse(body), !answer.claimedAdEvents.isEmpty else { return }
            state.affirmativeAnswers += 1
            for adEvent in answer.claimedAdEvents where state.obligations[adEvent.adEventID] == nil {
                state.obligations[adEvent.adEventID] = Obligation(
                    adEventID: adEvent.adEventID, conversionSendStreamID: stream, causeEventID: request.causeEventID,
                    adEventAt: Date(timeIntervalSince1970: Double(adEvent.timestamp.microsecondsSince1970) / 1_000_000),
                    campaignType: adEvent.campaignType, campaignID: adEvent.campaignID, networkType: adEvent.networkType,
                    openedAt: event.occurredAt)
            }
        case (ResponseReceived.eventType, .crossNetwork):
            let response = try event.decode(ResponseReceived.self)
            guard response.status == 200, let adEventID = state.obligationOfSend[stream] else { return }
            state.obligations[adEventID]?.state = .closed
            state.obligations[adEventID]?.closedAt = event.occurredAt
        case (SendFailed.eventType, .crossNetwork), (SendCancelled.eventType, .crossNetwork):
            guard let adEventID = state.obligationOfSend[stream], var obligation = state.obligations[adEventID] else { return }
            if event.type == SendFailed.eventType { obligation.failures.append(try event.decode(SendFailed.self).rule) }
            if obligation.state == .requested { obligation.state = .open }
            state.obligations[adEventID] = obligation
        default:
            break
        }
    }
}
