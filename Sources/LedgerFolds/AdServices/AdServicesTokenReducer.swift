import Foundation
import LedgerDomain
import LedgerProviders

/// Apple AdServices attribution tokens per device, and where each lookup stands (Apple AdServices
/// attribution API).
///
/// A token is known from `FirstOpen.adservices_token` or `AdServicesTokenReceived`; the same
/// token twice (the device caches it for about 5 minutes) is one token. Its expiry is 24 hours
/// after it was issued. The lookups requested for it (`SendRequested`, provider
/// `apple_adservices`) count attempts, keep Apple's last answer, and move its state:
/// `waiting` → `attributed` / `not_attributed` (200), `invalid` (400, terminal: the app must fetch
/// a new token), `expired` (a failure past the TTL), `gave_up` (any other terminal failure or a
/// cancellation). 404 and 500 leave it `waiting`, with the next retry time from `RetryScheduled`.
///
/// Whether a waiting token has expired by now depends on the clock, which a projection never
/// reads: ``TrackedToken/effectiveState(at:)`` and the `expires_at` column answer that for a time
/// the caller gives.
public struct AdServicesTokenReducer: DeviceStateReducer {
    /// Where a token stands.
    public enum TokenState: String, Codable, Sendable, Hashable, CaseIterable {
        /// No final answer yet.
        case waiting
        /// Apple answered 200 with `attribution: true`.
        case attributed
        /// Apple answered 200 with `attribution: false`.
        case notAttributed = "not_attributed"
        /// Apple answered 400: the token is invalid.
        case invalid
        /// The token passed its 24 h TTL unanswered.
        case expired
        /// The lookup ended otherwise (retries exhausted, cancelled).
        case gaveUp = "gave_up"
    }

    /// One token.
    public struct TrackedToken: Codable, Sendable, Equatable {
        /// The first 32 hex digits of the token's SHA-256: the token's key.
        public var digest: String
        /// When the device got it.
        public var issuedAt: Date
        /// 24 h after the earlier of `issuedAt` and when the ledger received the token
        /// (`AdServicesToken.expiresAt(receivedAt:)`).
        public var expiresAt: Date
        /// Lookups made: `SendAttempted`, less the tries that then made no call (a
        /// `RetryScheduled` with `called: false`, e.g. a lease too short for the call).
        public var attempts = 0
        /// Apple's last HTTP status.
        public var lastStatus: Int?
        /// When Apple last answered.
        public var lastAnswerAt: Date?
        /// The state.
        public var state = TokenState.waiting
        /// When the next lookup is due, if one is scheduled.
        public var nextRetryAt: Date?
        /// The lookups' send streams.
        public var sends: [String] = []
        /// Apple's record after a 200 (standard or detailed; a detailed record later enriches it).
        public var attribution: AdServicesAttribution?
        /// The rule of the terminal failure, if any.
        public var failureRule: String?

        /// The state at `now`: a token still waiting past its expiry is `expired`.
        public func effectiveState(at now: Date) -> TokenState {
            state == .waiting && now >= expiresAt ? .expired : state
        }
    }

    /// One device's tokens.
    public struct State: Codable, Sendable, Equatable {
        /// Tokens by digest.
        public var tokens: [String: TrackedToken] = [:]
        /// Which token each device event that carried one holds (event id → digest).
        public var tokenOfEvent: [String: String] = [:]
        /// Which token each lookup asks about (send stream → digest).
        public var tokenOfSend: [String: String] = [:]

        /// A device no event has touched.
        public init() {}
    }

    /// The reducer.
    public init() {}

    public let name = "adservices_tokens"
    /// 2: `attempts` counts lookups made (not tries that made no call). 3: an erasure replaces the
    /// token digests by `erased-<n>`. 4: `expiresAt` counts from the earlier of `issuedAt` and
    /// when the ledger received the token.
    public let version = 4
    public var deviceEventTypes: [String] { [FirstOpen.eventType, AdServicesTokenReceived.eventType, ErasureCompleted.eventType] }
    public var followedProviders: Set<SendProvider> { [.appleAdServices] }

    public func initialState() -> State { State() }

    static func digest(_ token: String) -> String {
        Digest.sha256Hex(token, length: 32)
    }

    public func apply(_ event: DeviceEvent, to state: inout State) throws {
        let eventKey = event.record.id.uuidString.lowercased()
        switch event.type {
        case FirstOpen.eventType:
            if let token = try event.decode(FirstOpen.self).adServicesToken {
                track(token, eventKey, receivedAt: event.record.recordedAt, &state)
            }
        case AdServicesTokenReceived.eventType:
            track(try event.decode(AdServicesTokenReceived.self).token, eventKey, receivedAt: event.record.recordedAt, &state)
        case ErasureCompleted.eventType:
            Self.forgetDigests(&state)
        case SendRequested.eventType:
            guard let request = event.send, let digest = state.tokenOfEvent[request.causeEventID.uuidString.lowercased()]
            else { return }
            state.tokenOfSend[event.record.streamID] = digest
            state.tokens[digest]?.sends.append(event.record.streamID)
            state.tokens[digest]?.nextRetryAt = request.notBefore
        default:
            guard let digest = state.tokenOfSend[event.record.streamID], var token = state.tokens[digest] else { return }
            try applySendEvent(event, to: &token)
            state.tokens[digest] = token
        }
    }

    /// Replaces every token digest by `erased-<n>` (in digest order), keeping each token's state and
    /// sends: the SHA-256 of a token is derived from a personal value and must not outlive the
    /// device's erasure.
    static func forgetDigests(_ state: inout State) {
        var renamed: [String: String] = [:]
        for (index, digest) in state.tokens.keys.sorted().enumerated() where !digest.hasPrefix("erased-") {
            renamed[digest] = "erased-\(index + 1)"
        }
        guard !renamed.isEmpty else { return }
        var tokens: [String: TrackedToken] = [:]
        for (digest, token) in state.tokens {
            var token = token
            token.digest = renamed[digest] ?? digest
            tokens[token.digest] = token
        }
        state.tokens = tokens
        state.tokenOfEvent = state.tokenOfEvent.mapValues { renamed[$0] ?? $0 }
        state.tokenOfSend = state.tokenOfSend.mapValues { renamed[$0] ?? $0 }
    }

    func track(_ token: LedgerDomain.AdServicesToken, _ eventKey: String, receivedAt: Date, _ state: inout State) {
        let digest = Self.digest(token.token)
        state.tokenOfEvent[eventKey] = digest
        if state.tokens[digest] == nil {
            state.tokens[digest] = TrackedToken(digest: digest, issuedAt: token.issuedAt,
                                                expiresAt: token.expiresAt(receivedAt: receivedAt))
        }
    }

    func applySendEvent(_ event: DeviceEvent, to token: inout TrackedToken) throws {
        switch event.type {
        case SendAttempted.eventType:
            token.attempts += 1
            token.nextRetryAt = nil
        case ResponseReceived.eventType:
            let response = try event.decode(ResponseReceived.self)
            token.lastStatus = response.status
            token.lastAnswerAt = event.occurredAt
            switch response.status {
            case 200:
                guard let body = response.body?.bytes, let record = try? AdServicesAttribution.parse(body) else { return }
                // A detailed record after a standard one enriches the same install.
                token.attribution = record
                token.state = record.attribution ? .attributed : .notAttributed
            case 400:
                token.state = .invalid
            default:
                break  // 404: too soon (retry every 5 s, 3 times); 500: retry later. Still waiting.
            }
        case RetryScheduled.eventType:
            let retry = try event.decode(RetryScheduled.self)
            token.nextRetryAt = retry.notBefore
            // For a lookup such a retry always follows its try's `SendAttempted` (the preflight
            // only ever fails a lookup).
            if retry.called == false { token.attempts = max(0, token.attempts - 1) }
        case SendFailed.eventType:
            let failure = try event.decode(SendFailed.self)
            token.failureRule = failure.rule
            token.nextRetryAt = nil
            if token.state == .waiting {
                token.state = failure.rule.contains("expired") || event.occurredAt >= token.expiresAt ? .expired : .gaveUp
            }
        case SendCancelled.eventType:
            token.nextRetryAt = nil
            if token.state == .waiting { token.state = .gaveUp }
        default:
            break
        }
    }
}
