import Foundation
import LedgerDomain

/// The attribution process of each device: for every trigger (a first open, or a session that may
/// re-attribute), the sends it is waiting for, the touches the answers offered, and the decision
/// once made — with the answers that arrived after it, flagged as late.
///
/// A projection like the others (rebuildable, "as of" by replay): the decider reads its rows to
/// find triggers that are ready or overdue, then decides from a fresh replay of the device.
///
/// - A send belongs to the trigger that caused it; an Apple token lookup caused by a separate
///   `AdServicesTokenReceived` belongs to the device's latest install; `IAdAttributionDetailsReceived`
///   likewise.
/// - A session is a re-attribution trigger only when there is something to decide: it carries a
///   deep link, or an answer to its sends offered a touch. Otherwise it is `not_needed`.
public struct AttributionProcessReducer: DeviceStateReducer {
    /// One awaited send of a trigger.
    public struct AwaitedSend: Codable, Sendable, Equatable {
        /// The send's stream.
        public var stream: String
        /// Its provider.
        public var provider: SendProvider
        /// The terminal event type once finished (`SendSucceeded`, `SendFailed`, `SendCancelled`).
        public var terminal: String?
    }

    /// An answer recorded after the trigger's decision.
    public struct LateAnswer: Codable, Sendable, Equatable {
        /// The provider.
        public var provider: SendProvider?
        /// The event type (`ResponseReceived`, `IAdAttributionDetailsReceived`).
        public var type: String
        /// Its log position.
        public var position: Int64
        /// Whether it offered a touch the decision did not see.
        public var offeredTouch: Bool
    }

    /// One trigger and its process.
    public struct Trigger: Codable, Sendable, Equatable {
        /// The trigger event.
        public var eventID: UUID
        /// Install or re-attribution.
        public var kind: AttributionTrigger
        /// Its log position.
        public var position: Int64
        /// The device's time of the trigger (the rule's reference time).
        public var occurredAt: Date
        /// The ledger's time it was recorded (the deadline runs from here).
        public var recordedAt: Date
        /// Whether it carried a deep link.
        public var hasDeepLink: Bool
        /// The sends it waits for.
        public var sends: [AwaitedSend] = []
        /// The touches offered so far.
        public var candidates: [TouchCandidate] = []
        /// The positions of every input read (the trigger, answers, iAd details).
        public var inputPositions: [Int64] = []
        /// Whether iAd details arrived for it.
        public var iAdReceived = false
        /// The current decision's id.
        public var decisionID: UUID?
        /// When the current decision was recorded.
        public var decidedAt: Date?
        /// The rule version of the current decision.
        public var ruleVersion: String?
        /// Decisions made about it, oldest first (a redo appends one).
        public var decisions: [UUID] = []
        /// Answers after the decision.
        public var lateAnswers: [LateAnswer] = []

        /// True when every awaited send finished.
        public var allSendsFinished: Bool { sends.allSatisfy { $0.terminal != nil } }
        /// Whether a decision is needed at all (see the type's documentation).
        public var needsDecision: Bool { kind == .install || hasDeepLink || !candidates.isEmpty }
        /// `decided`, `waiting` or `not_needed`.
        public var state: String { decisionID != nil ? "decided" : needsDecision ? "waiting" : "not_needed" }
    }

    /// One device's process.
    public struct State: Codable, Sendable, Equatable {
        /// The app, from the first open (or metadata), for per-app settings.
        public var appID: String?
        /// Triggers in log order.
        public var triggers: [Trigger] = []
        /// Which trigger each awaited send belongs to (send stream → trigger index).
        public var triggerOfSend: [String: Int] = [:]
        /// AdServices token issue times by the event that carried the token.
        public var tokenIssuedAt: [UUID: Date] = [:]

        /// A device no event has touched.
        public init() {}
    }

    /// The reducer.
    public init() {}

    public let name = "attribution_process"
    /// 2: an iAd `ADClientErrorUnknown` does not end the wait for iAd details. 3: a Google answer
    /// with `attributed: false` offers no candidate.
    public let version = 3
    public var deviceEventTypes: [String] {
        [FirstOpen.eventType, SessionStarted.eventType, AdServicesTokenReceived.eventType,
         IAdAttributionDetailsReceived.eventType, AttributionDecided.eventType]
    }
    public var followedProviders: Set<SendProvider> { [.google, .appleAdServices, .branch] }

    public func initialState() -> State { State() }

    public func apply(_ event: DeviceEvent, to state: inout State) throws {
        if let request = event.send {
            applySend(event, request: request, to: &state)
            return
        }
        let record = event.record
        switch event.type {
        case FirstOpen.eventType:
            let open = try event.decode(FirstOpen.self)
            state.appID = state.appID ?? open.appID.rawValue
            if let token = open.adServicesToken { state.tokenIssuedAt[record.id] = token.issuedAt }
            state.triggers.append(Trigger(
                eventID: record.id, kind: .install, position: record.position, occurredAt: record.occurredAt,
                recordedAt: record.recordedAt, hasDeepLink: open.deepLink != nil, inputPositions: [record.position]))
        case SessionStarted.eventType:
            let session = try event.decode(SessionStarted.self)
            state.triggers.append(Trigger(
                eventID: record.id, kind: .reattribution, position: record.position, occurredAt: record.occurredAt,
                recordedAt: record.recordedAt, hasDeepLink: session.deepLink != nil, inputPositions: [record.position]))
        case AdServicesTokenReceived.eventType:
            let received = try event.decode(AdServicesTokenReceived.self)
            state.tokenIssuedAt[record.id] = received.token.issuedAt
        case IAdAttributionDetailsReceived.eventType:
            let received = try event.decode(IAdAttributionDetailsReceived.self)
            guard let index = state.triggers.lastIndex(where: { $0.kind == .install }) else { return }
            let touches = TouchExtraction.iAd(received.details, position: record.position)
            if state.triggers[index].decisionID != nil {
                state.triggers[index].lateAnswers.append(LateAnswer(
                    provider: nil, type: event.type, position: record.position, offeredTouch: !touches.isEmpty))
            } else if received.errorCode == IAdAttributionDetailsReceived.errorUnknown {
                // Apple Search Ads Attribution API: "If you receive ADClientErrorUnknown, wait a
                // few seconds and try again": the app's next answer is the one to wait for (the
                // deadline still bounds the wait). A dictionary or any other error
                // (LimitAdTracking: no data will ever come) ends it.
                state.triggers[index].inputPositions.append(record.position)
            } else {
                state.triggers[index].iAdReceived = true
                state.triggers[index].candidates += touches
                state.triggers[index].inputPositions.append(record.position)
            }
        case AttributionDecided.eventType:
            let decision = try event.decode(AttributionDecided.self)
            guard let index = state.triggers.firstIndex(where: { $0.eventID == decision.triggerEventID }) else { return }
            state.triggers[index].decisionID = decision.decisionID
            state.triggers[index].decidedAt = record.recordedAt
            state.triggers[index].ruleVersion = decision.ruleVersion
            state.triggers[index].decisions.append(decision.decisionID)
        default:
            break
        }
    }

    func applySend(_ event: DeviceEvent, request: SendRequested, to state: inout State) {
        let stream = event.record.streamID
        if event.type == SendRequested.eventType {
            guard [.conversion, .tokenLookup, .open].contains(request.kind) else { return }
            let owner: Int?
            if let index = state.triggers.lastIndex(where: { $0.eventID == request.causeEventID }) {
                owner = index
            } else if request.kind == .tokenLookup, state.tokenIssuedAt[request.causeEventID] != nil {
                owner = state.triggers.lastIndex { $0.kind == .install }
            } else {
                owner = nil
            }
            guard let owner else { return }
            state.triggerOfSend[stream] = owner
            if state.triggers[owner].decisionID == nil {
                state.triggers[owner].sends.append(AwaitedSend(stream: stream, provider: request.provider))
            }
            return
        }
        guard let owner = state.triggerOfSend[stream] else { return }
        let decided = state.triggers[owner].decisionID != nil
        switch event.type {
        case ResponseReceived.eventType:
            guard let response = try? event.decode(ResponseReceived.self), response.status == 200,
                let body = response.body?.bytes
            else { return }
            let position = event.record.position
            let touches: [TouchCandidate] = switch request.provider {
            case .google: TouchExtraction.google(body, position: position)
            case .appleAdServices: TouchExtraction.appleAdServices(body, position: position)
            case .branch: TouchExtraction.branch(body, position: position)
            case .singular, .webhook: []
            }
            if decided {
                state.triggers[owner].lateAnswers.append(LateAnswer(
                    provider: request.provider, type: event.type, position: position, offeredTouch: !touches.isEmpty))
            } else {
                state.triggers[owner].candidates += touches
                state.triggers[owner].inputPositions.append(position)
            }
        case SendSucceeded.eventType, SendFailed.eventType, SendCancelled.eventType:
            if let index = state.triggers[owner].sends.firstIndex(where: { $0.stream == stream }) {
                state.triggers[owner].sends[index].terminal = event.type
            }
        default:
            break
        }
    }
}
