import Foundation
import LedgerDomain
import LedgerFolds
import LedgerProviders
import LedgerStore

/// The four providers' documented rules for one send, built on the pure builders and classifiers of
/// `LedgerProviders` (provider-rules.md; issue 6, item 3):
///
/// | send | cause → request | answer |
/// |---|---|---|
/// | `google/conversion` | `FirstOpen` → `first_open`, `SessionStarted` → `session_start`, `InAppEventRecorded` → its `google_event_type` (else `custom`), `RevenueRecorded` → `in_app_purchase` (Google App Conversion Tracking API) | `GoogleResponseClassifier.classifyConversion` |
/// | `google/cross_network` | the conversion request rebuilt from `context.conversion`, plus `ad_event_id` and `attributed` | `classifyCrossNetwork` |
/// | `apple_adservices/token_lookup` | the token of `FirstOpen` / `AdServicesTokenReceived`; no call past its 24 h TTL (Apple AdServices attribution API) | `AdServicesClassifier` |
/// | `branch/open` | `FirstOpen` → `first_session` true; `SessionStarted`, `DeepLinkOpened` → false, with the device's `randomized_bundle_token` (Branch v1/open server-to-server guide) | `BranchClassifier` |
/// | `singular/conversion_value` | `n` = `__SESSION__` for opens, the event's name otherwise, with the device's SKAN state as of the cause (Singular SKAdNetwork 4 implementation guide) | `SingularClassifier` |
///
/// A provider without configuration is never called: its sends fail to build with
/// `provider_not_configured`. Nothing here reads a clock but `context.now`.
public struct ProviderSendRules: SendRules {
    /// Google: `dev_token` and `link_id` (``GoogleAppLink``) and the endpoint. `nil`: not configured.
    public var google: GoogleConversionRequestBuilder?
    /// Apple AdServices: where lookups go (``AdServicesEndpoint/production`` in production). `nil`:
    /// not configured.
    public var adServices: AdServicesEndpoint?
    /// Branch: key, secret, endpoint and this service's own public IPs. `nil`: not configured.
    public var branch: BranchConfiguration?
    /// Whether Branch opens use `server_to_server_identity` (Branch v1/open server-to-server
    /// guide): then every open after the first carries the device's `randomized_bundle_token`, and
    /// the custom user id's keyed hash goes as `identity` (``BranchConfiguration/identityKey``).
    public var branchServerToServerIdentity: Bool
    /// Singular: the SDK key and endpoint. `nil`: not configured.
    public var singular: SingularConfiguration?
    /// The Apple AdServices attribution API's timing (24 h TTL, 404 every 5 s at most 3 attempts,
    /// back-off after 5xx).
    public var adServicesPolicy: AdServicesRetryPolicy
    /// Back-off after Google network errors, 5xx, 408 and 429.
    public var googlePolicy: GoogleRetryPolicy
    /// Branch's SDKs' retries (5xx and timeouts 3 times) and the 429 back-off in minutes.
    public var branchPolicy: BranchRetryPolicy
    /// Singular's back-off.
    public var singularPolicy: SingularRetryPolicy
    /// How many times a Singular send waits for its device's SKAN registration to reach the log
    /// (``preflight(_:)``: after 5, 10, 20 … s, so 7 waits are about 10 minutes from its first
    /// try); then an unregistered device's send fails `not_registered`.
    public var singularRegistrationWaits: Int
    /// This service's own public IP addresses (`LEDGER_SERVER_PUBLIC_IPS`): a device address
    /// that is one of them is ours, not the device's, and is never sent as the device's.
    public var serverPublicIPs: Set<String> = []
    /// The app's webhook endpoints by name (docs/webhooks.md): where its `webhook/delivery` sends
    /// go. Empty: none; a delivery to an endpoint not here fails `webhook_endpoint_not_configured`.
    public var webhooks: [String: WebhookEndpoint] = [:]

    /// The rules, given each configured provider's configuration; the policies default to the
    /// providers' files' defaults.
    public init(
        google: GoogleConversionRequestBuilder? = nil, adServices: AdServicesEndpoint? = nil,
        branch: BranchConfiguration? = nil, branchServerToServerIdentity: Bool = true,
        singular: SingularConfiguration? = nil,
        adServicesPolicy: AdServicesRetryPolicy = AdServicesRetryPolicy(),
        googlePolicy: GoogleRetryPolicy = GoogleRetryPolicy(),
        branchPolicy: BranchRetryPolicy = .default, singularPolicy: SingularRetryPolicy = .default,
        singularRegistrationWaits: Int = 7
    ) {
        self.google = google
        self.adServices = adServices
        self.branch = branch
        self.branchServerToServerIdentity = branchServerToServerIdentity
        self.singular = singular
        self.adServicesPolicy = adServicesPolicy
        self.googlePolicy = googlePolicy
        self.branchPolicy = branchPolicy
        self.singularPolicy = singularPolicy
        self.singularRegistrationWaits = singularRegistrationWaits
    }

    // MARK: - SendRules

    /// Google's `dev_token`, Branch's key and secret, Singular's SDK key, the webhooks' signing
    /// secrets: the values the worker redacts from everything it stores.
    public var configuredSecrets: [String] {
        [google?.link.devToken, branch?.branchKey, branch?.branchSecret, branch?.identityKey, singular?.sdkKey].compactMap { $0 }
            + webhooks.values.flatMap(\.secrets)
    }

    /// Decides before the request is built, without a call:
    /// - Apple AdServices: a token past its 24 h TTL at `context.now` is `adservices_token_expired`
    ///   (Apple AdServices attribution API: past the TTL Apple can only answer 404). The 24 h
    ///   count from the earlier of the token's `issued_at` and when the ledger recorded its fact
    ///   (`AdServicesToken.lifetimeStart(receivedAt:)`): a device clock running ahead cannot
    ///   stretch them.
    /// - Singular: a device whose SKAN registration is not in the log yet waits for it. The
    ///   Singular SKAdNetwork 4 implementation guide's snippet registers on the first launch before
    ///   it sends the session, but the app records the registration as a fact of its own
    ///   (`SKANRegistered`), which may reach the ledger after the first open's send is claimed.
    ///   That send (the one caused by `FirstOpen`) is retried without a call
    ///   (`singular_skan_not_registered_yet`, after 5, 10, 20 … s) up to
    ///   ``singularRegistrationWaits`` times, counted from its first try (so a worker that was
    ///   behind still waits); then the build refuses it (`not_registered`). The device's later
    ///   Singular calls wait behind it in its lane, and do not wait themselves: a device still
    ///   unregistered by then fails them at once, so it cannot hold its lane for long.
    ///
    /// Everything else: `nil`.
    public func preflight(_ context: SendContext) -> SendDisposition? {
        switch (context.send.provider, context.send.kind) {
        case (.appleAdServices, .tokenLookup):
            guard let token = try? Self.adServicesToken(of: context.decodedCauses.cause(context.cause)) else { return nil }
            return AdServicesClassifier.preflight(
                tokenIssuedAt: token.lifetimeStart(receivedAt: context.cause.recordedAt), now: context.now, policy: adServicesPolicy)
        case (.singular, .conversionValue):
            // A call needs the registration, so an unregistered device's send has made none: its
            // earlier tries were all waits (or tries that missed their call otherwise).
            let waits = context.attempt - 1
            guard context.cause.type == FirstOpen.eventType, !context.skan.skan.isRegistered,
                waits < singularRegistrationWaits
            else { return nil }
            return .retry(notBefore: context.now.addingTimeInterval(Backoff.exponential(attempt: waits + 1, base: 5)),
                          rule: "singular_skan_not_registered_yet")
        default:
            return nil
        }
    }

    public func buildRequest(_ context: SendContext) throws(DispatchError) -> ProviderRequest {
        switch (context.send.provider, context.send.kind) {
        case (.google, .conversion):
            return try googleConversionRequest(send: context.send, cause: context.cause, context: context)
        case (.google, .crossNetwork):
            return try googleCrossNetworkRequest(context)
        case (.appleAdServices, .tokenLookup):
            return try adServicesRequest(context)
        case (.branch, .open):
            return try branchOpenRequest(context)
        case (.singular, .conversionValue):
            return try singularRequest(context)
        case (.webhook, .delivery):
            return try webhookRequest(context)
        default:
            throw .unbuildable(rule: "kind_not_offered",
                detail: "\(context.send.provider.rawValue) has no \(context.send.kind.rawValue) call")
        }
    }

    public func classify(_ answer: SendAnswer, context: SendContext) -> SendDisposition {
        // A request the transport could not send as built never will be: no provider's retry helps.
        if case .failure(let error) = answer, error.code == .invalidRequest {
            return .failed(rule: "transport_invalid_request", detail: error.detail)
        }
        switch context.send.provider {
        case .google:
            if context.send.kind == .crossNetwork {
                return GoogleResponseClassifier.classifyCrossNetwork(
                    answer.providerResponse, attempt: context.call, now: context.now, jitter: context.jitter,
                    policy: googlePolicy)
            }
            return GoogleResponseClassifier.classifyConversion(
                answer.providerResponse, attempt: context.call, now: context.now, jitter: context.jitter,
                policy: googlePolicy)
        case .appleAdServices:
            let token: LedgerDomain.AdServicesToken
            do {
                token = try Self.adServicesToken(of: context.decodedCauses.cause(context.cause))
            } catch {
                return .failed(rule: error.rule, detail: error.detail)
            }
            return AdServicesClassifier.classify(
                answer.providerResponse, tokenIssuedAt: token.lifetimeStart(receivedAt: context.cause.recordedAt), attempt: context.call,
                notFoundBefore: context.earlierAnswers?.filter { $0 == 404 }.count, now: context.now, policy: adServicesPolicy)
        case .branch:
            let branchAnswer: BranchClassifier.Answer
            switch answer {
            case .response(let response): branchAnswer = .response(response.response)
            case .failure(let error) where error.code == .timeout: branchAnswer = .timedOut
            case .failure(let error): branchAnswer = .transportFailed(detail: error.description)
            }
            return BranchClassifier.classify(
                branchAnswer, attempt: context.call, rateLimitedBefore: context.earlierAnswers?.filter { $0 == 429 }.count,
                now: context.now, policy: branchPolicy)
        case .singular:
            let singularAnswer: SingularClassifier.Answer
            switch answer {
            case .response(let response): singularAnswer = .response(response.response)
            case .failure(let error) where error.code == .timeout: singularAnswer = .timedOut
            case .failure(let error): singularAnswer = .transportFailed(detail: error.description)
            }
            return SingularClassifier.classify(
                singularAnswer, attempt: context.call, now: context.now, policy: singularPolicy)
        case .webhook:
            return classifyWebhook(answer, context: context)
        }
    }

    /// Apple AdServices counts its "maximum of three attempts" among the answers that were 404s
    /// (Apple AdServices attribution API): a 404 after earlier calls answered otherwise (a 500)
    /// needs those answers. Branch counts its 429s apart from server errors and timeouts
    /// (``BranchClassifier``): any answer but a success after earlier calls needs them.
    public func needsEarlierAnswers(_ answer: SendAnswer, context: SendContext) -> Bool {
        guard context.call > 1 else { return false }
        switch context.send.provider {
        case .appleAdServices:
            return answer.providerResponse?.status == 404
        case .branch:
            return !(200...299).contains(answer.providerResponse?.status ?? 0)
        case .google, .singular, .webhook:
            return false
        }
    }

    // MARK: - Shared

    static func notConfigured(_ provider: SendProvider) -> DispatchError {
        .unbuildable(rule: "provider_not_configured", detail: "\(provider.rawValue) is not configured: its sends are never called")
    }

    static func notSupported(_ cause: SendCause, _ send: SendRequested) -> DispatchError {
        .unbuildable(rule: "cause_not_supported",
            detail: "a \(send.provider.rawValue)/\(send.kind.rawValue) send is not built from \(cause.typeName)")
    }

    /// Runs a provider builder, turning its `ProviderError` into a ``DispatchError`` with the
    /// builder's rule (`required_after_first_open`, `uuid`, `public_address`, …).
    static func building<T>(_ body: () throws(ProviderError) -> T) throws(DispatchError) -> T {
        do {
            return try body()
        } catch {
            throw .unbuildable(rule: error.rule, detail: error.description)
        }
    }

    /// The AdServices token a lookup is about: `FirstOpen.adservices_token` or `AdServicesTokenReceived`.
    static func adServicesToken(of cause: SendCause) throws(DispatchError) -> LedgerDomain.AdServicesToken {
        switch cause {
        case .firstOpen(let open):
            guard let token = open.adServicesToken else {
                throw .unbuildable(rule: "adservices_token_missing", detail: "the FirstOpen carries no adservices_token")
            }
            return token
        case .adServicesToken(let received):
            return received.token
        default:
            throw .unbuildable(rule: "cause_not_supported", detail: "an apple_adservices/token_lookup send is not built from \(cause.typeName)")
        }
    }

    /// The device a cause describes, completed from the device's launches before it
    /// (``SendContext/lastSessionDevice``) when the cause lacks them: the last session's `ip` and
    /// `user_agent` (docs/events.md, DeviceContext: "the builders then use the last session's"),
    /// and the identifiers a backend reporting a purchase or an event may not know
    /// (``LedgerDomain/DeviceContext/completeIdentifiers(from:)``): Singular needs the `idfv`,
    /// Google's `rdid` the advertising id.
    static func device(of cause: SendCause, context: SendContext) throws(DispatchError) -> DeviceContext {
        var device: DeviceContext
        switch cause {
        case .firstOpen(let event): device = event.device
        case .sessionStarted(let event): device = event.device
        case .inAppEvent(let event): device = event.device
        case .revenue(let event): device = event.device
        case .deepLink, .adServicesToken, .decision:
            guard let last = context.lastSessionDevice else {
                throw .unbuildable(rule: "device_context_missing",
                    detail: "\(cause.typeName) carries no device and no last session's device was given")
            }
            return last
        }
        if let last = context.lastSessionDevice {
            if device.ip == nil { device.ip = last.ip }
            if device.userAgent == nil { device.userAgent = last.userAgent }
            device.completeIdentifiers(from: last)
        }
        return device
    }

    static func requireIP(_ device: DeviceContext) throws(DispatchError) -> String {
        guard let ip = device.ip else {
            throw .unbuildable(rule: "device_ip_missing", detail: "device.ip is needed and neither the cause nor the last session has it")
        }
        return ip
    }

    static func requireUserAgent(_ device: DeviceContext) throws(DispatchError) -> UserAgentParts {
        guard let parts = device.userAgent else {
            throw .unbuildable(rule: "device_user_agent_missing",
                detail: "device.user_agent is needed and neither the cause nor the last session has it")
        }
        return parts
    }

    /// The all-zero UUID Google's `rdid` takes without an advertising id (provider-rules.md, facts
    /// beyond the providers' documents).
    static let zeroUUID = "00000000-0000-0000-0000-000000000000"
}

/// The cause event of a send, decoded.
enum SendCause: Sendable {
    case firstOpen(FirstOpen)
    case sessionStarted(SessionStarted)
    case inAppEvent(InAppEventRecorded)
    case revenue(RevenueRecorded)
    case adServicesToken(AdServicesTokenReceived)
    case deepLink(DeepLinkOpened)
    case decision(AttributionDecided)

    /// Decodes `event.data` with the ledger's decoder by `event.type`.
    init(_ event: RecordedEvent) throws(DispatchError) {
        func decode<T: LedgerEvent>(_ type: T.Type) throws(DispatchError) -> T {
            do {
                return try LedgerJSON.makeDecoder().decode(T.self, from: event.data)
            } catch {
                throw .unbuildable(rule: "cause_unreadable", detail: "the cause \(event.type) \(event.id) does not decode")
            }
        }
        switch event.type {
        case FirstOpen.eventType: self = .firstOpen(try decode(FirstOpen.self))
        case SessionStarted.eventType: self = .sessionStarted(try decode(SessionStarted.self))
        case InAppEventRecorded.eventType: self = .inAppEvent(try decode(InAppEventRecorded.self))
        case RevenueRecorded.eventType: self = .revenue(try decode(RevenueRecorded.self))
        case AdServicesTokenReceived.eventType: self = .adServicesToken(try decode(AdServicesTokenReceived.self))
        case DeepLinkOpened.eventType: self = .deepLink(try decode(DeepLinkOpened.self))
        case AttributionDecided.eventType: self = .decision(try decode(AttributionDecided.self))
        default:
            throw .unbuildable(rule: "cause_not_supported", detail: "no send is built from a \(event.type) event")
        }
    }

    var typeName: String {
        switch self {
        case .firstOpen: FirstOpen.eventType
        case .sessionStarted: SessionStarted.eventType
        case .inAppEvent: InAppEventRecorded.eventType
        case .revenue: RevenueRecorded.eventType
        case .adServicesToken: AdServicesTokenReceived.eventType
        case .deepLink: DeepLinkOpened.eventType
        case .decision: AttributionDecided.eventType
        }
    }
}

extension SendAnswer {
    /// The answer as the Google and Apple classifiers take it: `nil` when there was none.
    var providerResponse: ProviderResponse? {
        switch self {
        case .response(let response): response.response
        case .failure: nil
        }
    }
}
