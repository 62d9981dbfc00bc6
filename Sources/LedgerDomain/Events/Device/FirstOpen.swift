import Foundation

/// The first launch of an app on a device: the install. Everything the providers need to attribute
/// it is here, because `first_open` to Google, the AdServices lookup, Branch's first-session
/// `v1/open` and Singular's `__SESSION__` are all requested from this one event.
///
/// Stream: `device-<app>/<device>`. `occurred_at` is the device's time of the launch.
public struct FirstOpen: LedgerEvent {
    /// The stored type name (see ``LedgerEvent/eventType``).
    public static let eventType = "FirstOpen"
    /// The version of this JSON shape.
    public static let schemaVersion = 1
    /// What the event is about.
    public static let category = EventCategory.device
    /// The category of the streams it is appended to.
    public static let streamCategory = StreamCategory.device
    /// The fields the privacy layer encrypts per device (see ``LedgerEvent/personalFields``).
    public static let personalFields =
        FieldPath.prefixed("device", DeviceContext.personalFields) + FieldPath.prefixed("deep_link", DeepLink.personalFields)
        + FieldPath.prefixed("install_referrer", InstallReferrer.personalFields)

    /// The app that was installed (the same as in the stream id and the metadata; kept in the
    /// data so an install is self-describing for auditors).
    public var appID: AppID
    /// The device as it was at the launch: identifiers, consent, IP, user agent, versions.
    public var device: DeviceContext
    /// The link that opened the app on its first launch, if any (deferred or direct deep link).
    public var deepLink: DeepLink?
    /// The AdServices attribution token fetched at the first launch (iOS 14.3+), if any.
    public var adServicesToken: AdServicesToken?
    /// The Play install referrer (Android only), if the app read it.
    public var installReferrer: InstallReferrer?

    /// Creates the event.
    public init(
        appID: AppID, device: DeviceContext, deepLink: DeepLink? = nil, adServicesToken: AdServicesToken? = nil,
        installReferrer: InstallReferrer? = nil
    ) {
        self.appID = appID
        self.device = device
        self.deepLink = deepLink
        self.adServicesToken = adServicesToken
        self.installReferrer = installReferrer
    }

    enum CodingKeys: String, CodingKey {
        case appID = "app_id"
        case device
        case deepLink = "deep_link"
        case adServicesToken = "adservices_token"
        case installReferrer = "install_referrer"
    }

    /// Device rules (IP and user agent required); an AdServices token only on iOS; an install
    /// referrer only on Android.
    public func validate() throws(RuleViolation) {
        try device.validate(at: "device", requireNetwork: true)
        try deepLink?.validate(at: "deep_link")
        try Check.only(on: .ios, actual: device.platform, isSet: adServicesToken != nil, "adservices_token")
        try adServicesToken?.validate(at: "adservices_token")
        try Check.only(on: .android, actual: device.platform, isSet: installReferrer != nil, "install_referrer")
        try installReferrer?.validate(at: "install_referrer")
    }
}

/// An Apple AdServices attribution token (`AAAttribution.attributionToken()`): Base64 text that
/// Apple's API turns into the install's Search Ads attribution within its 24-hour lifetime.
/// Not marked personal: it names no device or person, and expires after a day.
public struct AdServicesToken: Codable, Sendable, Hashable {
    /// The token, exactly as the app got it.
    public var token: String
    /// When the app obtained it (device time): the token is useless 24 hours later, so the
    /// lookup's retries stop then.
    public var issuedAt: Date

    /// Creates a token.
    public init(token: String, issuedAt: Date) {
        self.token = token
        self.issuedAt = issuedAt
    }

    enum CodingKeys: String, CodingKey {
        case token
        case issuedAt = "issued_at"
    }

    /// How long Apple honours a token.
    public static let lifetime: TimeInterval = 24 * 60 * 60

    /// When the token's 24 hours are counted from: the earlier of ``issuedAt`` (the device's
    /// clock) and `receivedAt`, when the ledger recorded the fact that carried the token (the
    /// ledger's clock). A token cannot have been made after the ledger received it, so a device
    /// clock running ahead cannot keep a dead token alive; a clock running behind only shortens
    /// the lifetime, and a lookup then is merely not made.
    public func lifetimeStart(receivedAt: Date) -> Date { min(issuedAt, receivedAt) }

    /// When the token is dead: ``lifetime`` after ``lifetimeStart(receivedAt:)``.
    public func expiresAt(receivedAt: Date) -> Date { lifetimeStart(receivedAt: receivedAt).addingTimeInterval(Self.lifetime) }

    func validate(at path: String) throws(RuleViolation) {
        let field = FieldPath.join(path, "token")
        try Check.text(token, field, max: Check.longText)
        // Apple AdServices attribution API: "a Base64 encoded string". A token that is not one
        // would only earn a 400 from Apple at send time (and the request builder refuses it first);
        // refuse it here instead.
        guard Self.isBase64(token) else {
            throw RuleViolation(
                field: field, rule: "base64",
                message: "The attribution token is Base64 text (Apple AdServices attribution API): A-Z a-z 0-9 + /, '=' padding only at the end, "
                    + "and a length some bytes can have.")
        }
    }

    /// Standard Base64, as the Apple AdServices attribution API's tokens are: alphabet characters,
    /// then at most two `=`; padded text is a multiple of 4 long, and no Base64 text is 4n+1 long.
    /// Unpadded text is accepted (the Apple AdServices attribution API's printed sample is). The
    /// Apple request builder checks with it too.
    public static func isBase64(_ text: String) -> Bool {
        var count = 0
        var padding = 0
        for byte in text.utf8 {
            count += 1
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"):
                guard padding == 0 else { return false }
            case UInt8(ascii: "="):
                padding += 1
            default:
                return false
            }
        }
        guard padding <= 2, count > padding else { return false }
        return padding > 0 ? count % 4 == 0 : count % 4 != 1
    }
}

/// A later launch of the app (not the first). Causes Branch `v1/open` (first_session=false),
/// Singular `__SESSION__`, and Google `session_start` when a session re-attributes.
///
/// Stream: `device-<app>/<device>`.
public struct SessionStarted: LedgerEvent {
    /// The stored type name (see ``LedgerEvent/eventType``).
    public static let eventType = "SessionStarted"
    /// The version of this JSON shape.
    public static let schemaVersion = 1
    /// What the event is about.
    public static let category = EventCategory.device
    /// The category of the streams it is appended to.
    public static let streamCategory = StreamCategory.device
    /// The fields the privacy layer encrypts per device (see ``LedgerEvent/personalFields``).
    public static let personalFields =
        FieldPath.prefixed("device", DeviceContext.personalFields) + FieldPath.prefixed("deep_link", DeepLink.personalFields)

    /// The device as it was at this launch.
    public var device: DeviceContext
    /// The link that opened the app this time, if any: a session from an ad click may re-attribute.
    public var deepLink: DeepLink?

    /// Creates the event.
    public init(device: DeviceContext, deepLink: DeepLink? = nil) {
        self.device = device
        self.deepLink = deepLink
    }

    enum CodingKeys: String, CodingKey {
        case device
        case deepLink = "deep_link"
    }

    /// Device rules (IP and user agent required) and deep link rules.
    public func validate() throws(RuleViolation) {
        try device.validate(at: "device", requireNetwork: true)
        try deepLink?.validate(at: "deep_link")
    }
}
