import Crypto
import Foundation
import LedgerDomain
import LedgerFolds
import LedgerProviders
import LedgerStore

/// Apple AdServices (Apple AdServices attribution API).
extension ProviderSendRules {
    /// `POST /api/v1/` with the token alone as a `text/plain` body.
    func adServicesRequest(_ context: SendContext) throws(DispatchError) -> ProviderRequest {
        guard let endpoint = adServices else { throw Self.notConfigured(.appleAdServices) }
        let token = try Self.adServicesToken(of: context.decodedCauses.cause(context.cause))
        let checked = try Self.building { () throws(ProviderError) in try LedgerProviders.AdServicesToken(token.token) }
        return AdServicesRequestBuilder.attributionRequest(token: checked, endpoint: endpoint)
    }
}

/// Branch server-to-server `v1/open` (Branch v1/open server-to-server guide).
extension ProviderSendRules {
    /// The open for `FirstOpen` (`first_session` true), `SessionStarted` or `DeepLinkOpened`
    /// (`first_session` false, with the `randomized_bundle_token` the log holds now).
    func branchOpenRequest(_ context: SendContext) throws(DispatchError) -> ProviderRequest {
        guard let configuration = branch else { throw Self.notConfigured(.branch) }
        let decoded = try context.decodedCauses.cause(context.cause)
        let device = try Self.device(of: decoded, context: context)
        let firstSession: Bool
        var deepLink: DeepLink?
        var referrer: InstallReferrer?
        var attributionToken: String?
        switch decoded {
        case .firstOpen(let open):
            firstSession = true
            deepLink = open.deepLink
            referrer = open.installReferrer
            // apple_attribution_token: "iOS; within its 24 h TTL", counted as the Apple lookup
            // counts it (from the earlier of issued_at and when the ledger received the token).
            if let token = open.adServicesToken,
                AdServicesClassifier.isTokenLive(issuedAt: token.lifetimeStart(receivedAt: context.cause.recordedAt),
                                                 now: context.now, policy: adServicesPolicy)
            {
                attributionToken = token.token
            }
        case .sessionStarted(let session):
            firstSession = false
            deepLink = session.deepLink
        case .deepLink(let opened):
            firstSession = false
            deepLink = opened.link
        default:
            throw Self.notSupported(decoded, context.send)
        }
        let parts = try Self.requireUserAgent(device)
        var request = BranchOpenRequest(
            os: device.platform == .ios ? .iOS : .android, osVersion: device.osVersion, appVersion: device.appVersion,
            userAgent: context.deviceUserAgent ?? Self.branchUserAgent(parts), devicePublicIP: try Self.requireIP(device))
        request.idfa = device.idfa
        request.idfv = device.idfv
        request.androidID = device.androidID
        request.googleAdvertisingID = device.gaid
        if let oaid = device.oaid { request.advertisingIDs["oaid"] = oaid }
        request.limitAdTracking = device.limitsAdTracking
        request.model = parts.deviceModel
        request.linkIdentifier = deepLink?.linkClickID ?? referrer?.linkClickID
        if let url = deepLink?.url, Self.isWebURL(url) {
            switch device.platform {
            case .ios: request.universalLinkURL = url
            case .android: request.androidAppLinkURL = url
            }
        }
        switch device.platform {
        case .ios:
            request.gbraid = deepLink?.gbraid
            request.appleAttributionToken = attributionToken
        case .android:
            // Android first session only: the Play install referrer's facts.
            request.installReferrerExtras = referrer?.referrerURL
            request.googleSearchInstallReferrer = referrer?.googleSearchInstallReferrer
            request.clickedReferrerTimestamp = referrer?.clickedAt.map { Int64($0.timeIntervalSince1970.rounded(.down)) }
            request.installBeginTimestamp = referrer?.installBeganAt.map { Int64($0.timeIntervalSince1970.rounded(.down)) }
            request.referrerGclid = referrer?.gclid
        }
        request.firstSession = firstSession
        if branchServerToServerIdentity {
            request.serverToServerIdentity = true
            // "After the first request, this property must be hardcoded with the
            // randomized_bundle_token received in the first network response", in "all v1/open
            // requests moving forward for that device" (Branch v1/open server-to-server guide): a
            // reinstall's first session too, which Branch then marks as a reinstall of that
            // identity. Without one after the first open (it failed) the builder refuses:
            // `required_after_first_open`.
            request.randomizedBundleToken = context.branchIdentity.randomizedBundleToken
            request.identity = Self.branchIdentity(of: device.customUserID, key: configuration.identityKey)
        }
        return try Self.building { () throws(ProviderError) in try request.build(with: configuration) }
    }

    /// Branch's `identity` for the app's user id: "You should never use personal user information
    /// here, and all values should be encrypted before being passed to Branch" (Branch v1/open
    /// server-to-server guide). The HMAC-SHA256 of the id under the app's identity key, in
    /// lowercase hex: the same user gets the same identity on every open and device, and without
    /// the key the id cannot be guessed back from it (a plain hash of an e-mail address could).
    /// `nil` without a key or an id: the id itself is never sent.
    static func branchIdentity(of customUserID: String?, key: String?) -> String? {
        guard let customUserID, let key, !key.isEmpty else { return nil }
        let code = HMAC<SHA256>.authenticationCode(for: Data(customUserID.utf8), using: SymmetricKey(data: Data(key.utf8)))
        return code.map { String(format: "%02x", $0) }.joined()
    }

    /// The device's app user agent for Branch's `user_agent` ("the user agent of the device",
    /// Branch v1/open server-to-server guide) when the device recorded no text of its own
    /// (``SendContext/deviceUserAgent``), written from the parts the device reported and nothing
    /// else: `App/1.2.3 (iOS 17.1; en_US; iPhone15,2; Build/21B74)`. A web view's `Mozilla/5.0 …`
    /// text has engine versions the parts lack, so that form is never made up (docs/events.md,
    /// UserAgentParts).
    static func branchUserAgent(_ parts: UserAgentParts) -> String {
        let build = parts.build.map { "; Build/\($0)" } ?? ""
        return "\(parts.appName)/\(parts.appVersion) (\(parts.osName) \(parts.osVersion); \(parts.locale); "
            + "\(parts.deviceModel)\(build))"
    }

    /// An absolute `http(s)` URL: what `universal_link_url` / `android_app_link_url` take (a
    /// custom-scheme deep link is not one).
    static func isWebURL(_ text: String) -> Bool {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host, !host.isEmpty
        else { return false }
        return true
    }
}

/// Singular SKAdNetwork 4 conversion value (Singular SKAdNetwork 4 implementation guide).
extension ProviderSendRules {
    /// Singular's name of an in-app purchase revenue event (its SDKs' `__iap__`).
    public static let singularIAPEventName = "__iap__"
    /// Singular's name of an ad-monetization revenue event.
    public static let singularAdMonetizationEventName = "__ADMON_USER_LEVEL_REVENUE__"

    /// `GET /api/v2/conversion_value` with the device and its SKAN state as of the cause
    /// (``SendContext/skan``): a call the worker makes late carries nothing that happened after
    /// its event.
    func singularRequest(_ context: SendContext) throws(DispatchError) -> ProviderRequest {
        guard let configuration = singular else { throw Self.notConfigured(.singular) }
        let decoded = try context.decodedCauses.cause(context.cause)
        let device = try Self.device(of: decoded, context: context)
        var event: SingularConversionValueRequest.Event
        switch decoded {
        case .firstOpen, .sessionStarted:
            event = .session
        case .inAppEvent(let recorded):
            event = .named(recorded.name)
        case .revenue(let revenue):
            event = .named(revenue.kind == .iap ? Self.singularIAPEventName : Self.singularAdMonetizationEventName)
        default:
            throw Self.notSupported(decoded, context.send)
        }
        if let name = context.send.parameters?["n"] {
            event = name == SingularConversionValueRequest.sessionEventName ? .session : .named(name)
        }
        guard device.platform == .ios else {
            throw .unbuildable(rule: "singular_ios_only", detail: "SKAdNetwork conversion values are for iOS devices (p=iOS)")
        }
        guard let idfv = device.idfv else {
            throw .unbuildable(rule: "device_idfv_missing", detail: "Singular's conversion value API needs the device's idfv")
        }
        let request = SingularConversionValueRequest(
            osVersion: device.osVersion, bundleID: device.bundleID, appVersion: device.appVersion, event: event,
            idfa: device.idfa, idfv: idfv, state: context.skan.skan)
        return try Self.building { () throws(ProviderError) in try request.build(with: configuration, at: context.now) }
    }
}
