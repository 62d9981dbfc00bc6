import Foundation
import LedgerDomain
import LedgerProviders

/// Branch identity per device (Branch v1/open server-to-server guide): the `randomized_bundle_token` Branch issued, which every
/// later `v1/open` for the device must carry, and whether an open is in flight.
///
/// The first token Branch returned wins; a different one in a later answer is recorded as an
/// anomaly and never overwrites it. `randomized_device_token` and the custom `identity` are kept
/// too. An open is in flight from its `SendRequested` until its terminal event (`SendSucceeded`,
/// `SendFailed`, `SendCancelled`): the worker sends a device's opens one at a time, each with the
/// token known when it goes out.
public struct BranchIdentityReducer: DeviceStateReducer {
    /// A token that disagreed with the one kept.
    public struct TokenAnomaly: Codable, Sendable, Equatable {
        /// The token Branch answered with.
        public var token: String
        /// The send whose answer carried it.
        public var sendStreamID: String
        /// The answer's position in the log.
        public var position: Int64
    }

    /// One device's Branch identity.
    public struct State: Codable, Sendable, Equatable {
        /// The first `randomized_bundle_token` Branch returned.
        public var randomizedBundleToken: String?
        /// The send whose answer carried it.
        public var tokenSendStreamID: String?
        /// The latest `randomized_device_token`.
        public var randomizedDeviceToken: String?
        /// The custom `identity` Branch reported.
        public var identity: String?
        /// Later answers with a different bundle token.
        public var anomalies: [TokenAnomaly] = []
        /// Opens requested, in order, not yet terminal.
        public var openSendsInFlight: [String] = []
        /// Opens requested in all.
        public var opensRequested = 0
        /// Opens Branch answered with 200.
        public var opensAnswered = 0
        /// Whether the last answer said a Branch link was clicked (`+clicked_branch_link`).
        public var lastClickedBranchLink: Bool?

        /// A device no event has touched.
        public init() {}
    }

    /// The reducer.
    public init() {}

    public let name = "branch_identity"
    public let version = 1
    public var deviceEventTypes: [String] { [] }
    public var followedProviders: Set<SendProvider> { [.branch] }

    public func initialState() -> State { State() }

    public func apply(_ event: DeviceEvent, to state: inout State) throws {
        let stream = event.record.streamID
        switch event.type {
        case SendRequested.eventType:
            guard event.send?.kind == .open else { return }
            state.opensRequested += 1
            state.openSendsInFlight.append(stream)
        case ResponseReceived.eventType:
            let response = try event.decode(ResponseReceived.self)
            guard response.status == 200, let body = response.body?.bytes,
                let answer = try? BranchOpenResponse.parse(body) else { return }
            state.opensAnswered += 1
            if let token = answer.randomizedBundleToken, !token.isEmpty {
                if let kept = state.randomizedBundleToken {
                    if kept != token {
                        state.anomalies.append(TokenAnomaly(token: token, sendStreamID: stream, position: event.record.position))
                    }
                } else {
                    state.randomizedBundleToken = token
                    state.tokenSendStreamID = stream
                }
            }
            if let deviceToken = answer.randomizedDeviceToken, !deviceToken.isEmpty { state.randomizedDeviceToken = deviceToken }
            if let identity = answer.identity, !identity.isEmpty { state.identity = identity }
            if let clicked = answer.data?.clickedBranchLink { state.lastClickedBranchLink = clicked }
        case SendSucceeded.eventType, SendFailed.eventType, SendCancelled.eventType:
            state.openSendsInFlight.removeAll { $0 == stream }
        default:
            break
        }
    }
}
