import Foundation
import LedgerDomain
import LedgerFolds
import LedgerProviders
import LedgerStore
import Synchronization

/// Everything one try of a send is built and judged from. The worker gathers it from the log
/// just before the call, so it holds what the ledger knows *at send time* (Branch's
/// `randomized_bundle_token` from the previous open's answer, the answers to a device's earlier
/// Singular calls).
public struct SendContext: Sendable {
    /// The send's request (its `SendRequested`).
    public var send: SendRequested
    /// The send's stream (`send-<uuid>`).
    public var sendStreamID: String
    /// This try's number, from 1 (it names the try's events).
    public var attempt: Int
    /// This try's call among the send's calls to the provider, from 1: ``attempt`` less the
    /// earlier tries that made no call (a `RetryScheduled` with `called: false`: a request that
    /// changed while its send waited for a slot, a lease too short for the call). The providers'
    /// limits and back-offs count calls: Apple's "maximum of three attempts" is three calls.
    public var call: Int
    /// The event the request is built from (`FirstOpen`, `SessionStarted`, `InAppEventRecorded`,
    /// `RevenueRecorded`, `AdServicesTokenReceived`, `AttributionDecided`, …).
    public var cause: RecordedEvent
    /// The device's Branch identity as the log holds it now.
    public var branchIdentity: BranchIdentityReducer.State
    /// The device's SKAN state as of the cause (the Singular SKAdNetwork 4 implementation guide's
    /// snippet sends each event with the state of its moment): its history up to the cause, the
    /// answers to its earlier Singular calls and its registration.
    public var skan: SKANDeviceReducer.State
    /// For a Google cross-network send: the conversion send whose answer carried the `ad_event_id`
    /// (its `SendRequested`) and that send's cause event, from which the conversion request is
    /// rebuilt and the cross-network request derived.
    public var conversion: (send: SendRequested, cause: RecordedEvent)?
    /// The worker's clock at this try.
    public var now: Date
    /// A number in [0, 1) for back-off jitter (fixed in tests).
    public var jitter: Double
    /// The HTTP statuses of this send's earlier answers, oldest first, when the rules asked for
    /// them (``SendRules/needsEarlierAnswers(_:context:)``); `nil` otherwise.
    public var earlierAnswers: [Int]? = nil
    /// The device as its latest `FirstOpen` / `SessionStarted` before the cause described it (with
    /// the identifiers that launch lacks taken from earlier ones), for causes that do not carry it
    /// whole: `InAppEventRecorded` and `RevenueRecorded` may lack `ip`, `user_agent` and the
    /// device's identifiers ("the builders then use the last session's", docs/events.md), and
    /// `DeepLinkOpened` has no device at all. `nil` when the loader did not gather it; a request
    /// that needs it then fails to build (`device_context_missing`).
    public var lastSessionDevice: DeviceContext? = nil
    /// For a Branch open: the device's own user agent text, from the latest
    /// `DeviceUserAgentRecorded` of its history up to and including the cause. Branch's
    /// `user_agent` is "the user agent of the device" (Branch v1/open server-to-server guide), so
    /// the open carries exactly this; `nil` (none recorded, or erased) and it carries the app user
    /// agent written from the device's `UserAgentParts`.
    public var deviceUserAgent: String? = nil
    /// Cause events already decoded for this try (shared by the context's copies): the rules
    /// read the cause for the preflight, the request and the answer, and decoding it with
    /// `JSONDecoder` cost more than anything else the worker does per try.
    let decodedCauses = DecodedCauses()

    /// A context. `call` defaults to `attempt` (every earlier try called).
    public init(send: SendRequested, sendStreamID: String, attempt: Int, call: Int? = nil, cause: RecordedEvent,
                branchIdentity: BranchIdentityReducer.State, skan: SKANDeviceReducer.State,
                conversion: (send: SendRequested, cause: RecordedEvent)? = nil, now: Date, jitter: Double) {
        self.send = send
        self.sendStreamID = sendStreamID
        self.attempt = attempt
        self.call = call ?? attempt
        self.cause = cause
        self.branchIdentity = branchIdentity
        self.skan = skan
        self.conversion = conversion
        self.now = now
        self.jitter = jitter
    }
}

/// How a try came out, as the transport saw it.
public enum SendAnswer: Sendable {
    /// The provider answered (any status).
    case response(TransportResponse)
    /// No HTTP answer.
    case failure(DispatchError)
}

/// Each provider's documented rules for one send: what to do before the call, the request to
/// make, and what an answer means. Pure: no I/O, no clock but `context.now`.
public protocol SendRules: Sendable {
    /// Before any call: `nil` to make the call, or the disposition to record without calling
    /// (Apple AdServices: a token past its 24 h TTL is expired; Singular: a device whose SKAN
    /// registration is not in the log yet waits for it). A retry decided here is a try that made
    /// no call.
    func preflight(_ context: SendContext) -> SendDisposition?

    /// The request for this try, credentials included (the worker stores only its `redacted()`
    /// form).
    /// - Throws: ``DispatchError`` when the request cannot be built (a terminal failure).
    func buildRequest(_ context: SendContext) throws(DispatchError) -> ProviderRequest

    /// What the answer means: succeeded, retry (when and by which rule), or failed for good.
    func classify(_ answer: SendAnswer, context: SendContext) -> SendDisposition

    /// Whether ``classify(_:context:)`` needs the send's earlier answers
    /// (``SendContext/earlierAnswers``) to judge `answer`: the worker then reads them from the
    /// send's stream first. Rarely true, so most answers cost no read.
    func needsEarlierAnswers(_ answer: SendAnswer, context: SendContext) -> Bool

    /// Every credential value these rules put into requests (API keys, secrets, tokens). A
    /// provider's answer is stored as received and may echo the request; the worker replaces
    /// each of these values in stored answers, details and requests, so that no credential
    /// reaches the immutable log.
    var configuredSecrets: [String] { get }

    /// What becomes of a send after a try whose outcome is unknown (its worker ended, or its lease
    /// ran out, after its `SendAttempted`): retried, or parked for an operator. The worker's
    /// rescue (``SendQueue/rescue(now:store:policy:on:)``) follows it.
    var unknownOutcomePolicy: UnknownOutcomePolicy { get }
}

extension SendRules {
    /// No earlier answers needed.
    public func needsEarlierAnswers(_ answer: SendAnswer, context: SendContext) -> Bool { false }

    /// No credentials.
    public var configuredSecrets: [String] { [] }

    /// The providers' documents' policy (``UnknownOutcomePolicy/documented``): Singular parked,
    /// the others retried.
    public var unknownOutcomePolicy: UnknownOutcomePolicy { .documented }
}

/// Decoded cause events, by event id, for one try (see ``SendContext``).
final class DecodedCauses: Sendable {
    private let decoded = Mutex<[UUID: SendCause]>([:])
    private let apps = Mutex<[UUID: String?]>([:])

    /// The app `event` was recorded for, once per try: its metadata's `app_id`, else the app of
    /// its per-app stream id (`device-<app>/<device>`, `decision-<app>/<device>`); nil when
    /// neither names one.
    func app(of event: RecordedEvent) -> String? {
        if let known = apps.withLock({ $0[event.id] }) { return known }
        struct AppOnly: Decodable { var app_id: String? }
        let made = (try? JSONDecoder().decode(AppOnly.self, from: event.metadata))?.app_id
            ?? (try? StreamID(event.streamID))?.tenant?.app.rawValue
        apps.withLock { $0[event.id] = made }
        return made
    }

    /// `event` decoded as a cause, once per try.
    func cause(_ event: RecordedEvent) throws(DispatchError) -> SendCause {
        if let known = decoded.withLock({ $0[event.id] }) { return known }
        let made = try SendCause(event)
        decoded.withLock { $0[event.id] = made }
        return made
    }
}
