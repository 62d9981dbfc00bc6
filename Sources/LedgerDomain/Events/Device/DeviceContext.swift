import Foundation

/// What the provider request builders need to know about the device at the moment of an event:
/// identifiers, tracking consent, network address, user agent, versions. Carried by every device
/// event that can cause a send (`FirstOpen`, `SessionStarted`, `InAppEventRecorded`,
/// `RevenueRecorded`), because the IP, the consent and the versions change between events.
///
/// JSON key `device` in those events. Personal: every identifier, `ip`, `user_agent`,
/// `custom_user_id` (see ``personalFields``).
public struct DeviceContext: Codable, Sendable, Hashable {
    /// iOS or Android: decides which identifiers may be present.
    public var platform: Platform
    /// iOS advertising identifier (UUID). Present only when ATT is authorized; may be the all-zero
    /// UUID, which Google accepts as "no IDFA". Personal.
    public var idfa: String?
    /// iOS identifier for vendor (UUID): Branch's `hardware_id` when there is no IDFA, Singular's
    /// `idfv`. Personal.
    public var idfv: String?
    /// Google advertising id (UUID): Google's `rdid` and Branch's `google_advertising_id` on
    /// Android. Personal.
    public var gaid: String?
    /// Android's ANDROID_ID (hex): Branch's `hardware_id` on Android. Personal.
    public var androidID: String?
    /// Open Anonymous Device Identifier (Huawei and other Android devices without Google services).
    /// Personal.
    public var oaid: String?
    /// Whether the user limits ad tracking (Google `lat`; Branch omits `ad_tracking_enabled` when
    /// true). On iOS 14+ true unless ATT is authorized.
    public var limitAdTracking: Bool
    /// The App Tracking Transparency status (iOS 14+ only).
    public var attStatus: ATTStatus?
    /// The device's public IPv4 or IPv6 address, as the app's backend saw it: Google's
    /// `X-Forwarded-For`, Branch's `X-IP-Override`. Required by `FirstOpen` and `SessionStarted`.
    /// Personal.
    public var ip: String?
    /// The parts of the app user agent Google wants (`name version (os; locale; device; build;
    /// Proxy)`); Branch gets the text written from them unless the device recorded its own
    /// (``DeviceUserAgentRecorded``). Required by `FirstOpen` and `SessionStarted`. Personal.
    public var userAgent: UserAgentParts?
    /// The OS version, e.g. `17.4.1` (Google `os_version`, Branch `os_version`, Singular `v`).
    public var osVersion: String
    /// The app's version, e.g. `3.2.0` (Google `app_version`, Branch `app_version`, Singular `app_v`).
    public var appVersion: String
    /// The version of an attribution SDK in the app, if any (Google's `sdk_version`; it falls back
    /// to `app_version` without one).
    public var sdkVersion: String?
    /// The bundle id / package name, e.g. `com.example.game` (Singular `i`).
    public var bundleID: String
    /// The app's own id for its user, if it has one (Branch `identity`). Personal.
    public var customUserID: String?

    /// Paths of the personal fields, relative to this object.
    public static let personalFields = ["idfa", "idfv", "gaid", "android_id", "oaid", "ip", "user_agent", "custom_user_id"]

    /// Creates a device context.
    public init(
        platform: Platform, idfa: String? = nil, idfv: String? = nil, gaid: String? = nil, androidID: String? = nil,
        oaid: String? = nil, limitAdTracking: Bool, attStatus: ATTStatus? = nil, ip: String?, userAgent: UserAgentParts?,
        osVersion: String, appVersion: String, sdkVersion: String? = nil, bundleID: String, customUserID: String? = nil
    ) {
        self.platform = platform
        self.idfa = idfa
        self.idfv = idfv
        self.gaid = gaid
        self.androidID = androidID
        self.oaid = oaid
        self.limitAdTracking = limitAdTracking
        self.attStatus = attStatus
        self.ip = ip
        self.userAgent = userAgent
        self.osVersion = osVersion
        self.appVersion = appVersion
        self.sdkVersion = sdkVersion
        self.bundleID = bundleID
        self.customUserID = customUserID
    }

    /// Whether limit-ad-tracking applies to this device: its `limit_ad_tracking` flag is set, or
    /// its App Tracking Transparency status is `denied` or `restricted` (the user, or the
    /// device's management, refused tracking). The one rule for every provider's flag: the Google
    /// App Conversion Tracking API's `lat` is `1`, and the Branch v1/open server-to-server guide's
    /// `ad_tracking_enabled` is omitted, exactly when this is true. (`not_determined` leaves the
    /// decision to the flag.)
    public var limitsAdTracking: Bool {
        limitAdTracking || attStatus == .denied || attStatus == .restricted
    }

    enum CodingKeys: String, CodingKey {
        case platform, idfa, idfv, gaid
        case androidID = "android_id"
        case oaid
        case limitAdTracking = "limit_ad_tracking"
        case attStatus = "att_status"
        case ip
        case userAgent = "user_agent"
        case osVersion = "os_version"
        case appVersion = "app_version"
        case sdkVersion = "sdk_version"
        case bundleID = "bundle_id"
        case customUserID = "custom_user_id"
    }

    /// Checks identifiers against the platform, formats and lengths; `requireNetwork` makes `ip`
    /// and `user_agent` required (opens need them; a purchase reported by a backend may not have
    /// them, and the request builder then uses the last session's).
    func validate(at path: String, requireNetwork: Bool) throws(RuleViolation) {
        func field(_ key: CodingKeys) -> String { FieldPath.join(path, key.stringValue) }
        try Check.uuidText(idfa, field(.idfa))
        try Check.uuidText(idfv, field(.idfv))
        try Check.uuidText(gaid, field(.gaid))
        try Check.text(androidID, field(.androidID), max: 64)
        try Check.text(oaid, field(.oaid), max: 128)
        try Check.only(on: .ios, actual: platform, isSet: idfa != nil, field(.idfa))
        try Check.only(on: .ios, actual: platform, isSet: idfv != nil, field(.idfv))
        try Check.only(on: .ios, actual: platform, isSet: attStatus != nil, field(.attStatus))
        try Check.only(on: .android, actual: platform, isSet: gaid != nil, field(.gaid))
        try Check.only(on: .android, actual: platform, isSet: androidID != nil, field(.androidID))
        try Check.only(on: .android, actual: platform, isSet: oaid != nil, field(.oaid))
        if requireNetwork {
            _ = try Check.required(ip, field(.ip))
            _ = try Check.required(userAgent, field(.userAgent))
        }
        try Check.ipAddress(ip, field(.ip))
        try userAgent?.validate(at: field(.userAgent))
        try Check.text(osVersion, field(.osVersion), max: 64)
        try Check.text(appVersion, field(.appVersion), max: 64)
        try Check.text(sdkVersion, field(.sdkVersion), max: 64)
        try Check.text(bundleID, field(.bundleID))
        try Check.text(customUserID, field(.customUserID))
    }
}

/// The parts of Google's app user agent, `name version (os_and_version; locale; device; build;
/// Proxy)`, e.g. `AdMob/7.10.1 (iOS 10.0.2; en_US; iPhone9,1; Build/13D15; Proxy)`. Kept as parts
/// so each provider can render its own form. Personal as a whole (a fingerprint).
public struct UserAgentParts: Codable, Sendable, Hashable {
    /// The name at the start of the user agent (the app's, or its SDK's), e.g. `AdMob`.
    public var appName: String
    /// The version after the name, e.g. `7.10.1`.
    public var appVersion: String
    /// The OS name, e.g. `iOS`, `Android`.
    public var osName: String
    /// The OS version, e.g. `10.0.2`.
    public var osVersion: String
    /// The locale, e.g. `en_US`: a two-letter language and a two-letter country, in any form
    /// ``AppUserAgentLocale/googleForm(_:)`` can write as `ll_CC` (`en-US`, `zh_Hans_CN`).
    public var locale: String
    /// The hardware model, e.g. `iPhone9,1`, `Pixel 8`.
    public var deviceModel: String
    /// The OS build id without the `Build/` prefix, e.g. `13D15`. Optional in Swift for
    /// decoding; refused at append when absent (the app User-Agent cannot be built without it).
    public var build: String?

    /// Creates user agent parts.
    public init(
        appName: String, appVersion: String, osName: String, osVersion: String, locale: String, deviceModel: String,
        build: String? = nil
    ) {
        self.appName = appName
        self.appVersion = appVersion
        self.osName = osName
        self.osVersion = osVersion
        self.locale = locale
        self.deviceModel = deviceModel
        self.build = build
    }

    enum CodingKeys: String, CodingKey {
        case appName = "app_name"
        case appVersion = "app_version"
        case osName = "os_name"
        case osVersion = "os_version"
        case locale
        case deviceModel = "device_model"
        case build
    }

    func validate(at path: String) throws(RuleViolation) {
        func field(_ key: CodingKeys) -> String { FieldPath.join(path, key.stringValue) }
        try Check.text(appName, field(.appName), max: 128)
        try Check.text(appVersion, field(.appVersion), max: 64)
        try Check.text(osName, field(.osName), max: 64)
        try Check.text(osVersion, field(.osVersion), max: 64)
        try Check.text(locale, field(.locale), max: 35)
        try Check.text(deviceModel, field(.deviceModel), max: 128)
        try Check.text(build, field(.build), max: 128)
        // The parts are written into `name/version (os version; locale; model; Build/build)`
        // (the Google App Conversion Tracking API's app User-Agent; Branch's `user_agent` has the
        // same form): a part holding one of the characters that structure it would be refused by
        // the provider's request builder at send time, long after the event was accepted.
        try Self.userAgentToken(appName, field(.appName), spaces: false)
        try Self.userAgentToken(appVersion, field(.appVersion), spaces: false)
        try Self.userAgentToken(osName, field(.osName), spaces: true)
        try Self.userAgentToken(osVersion, field(.osVersion), spaces: true)
        try Self.userAgentToken(locale, field(.locale), spaces: false)
        try Self.userAgentToken(deviceModel, field(.deviceModel), spaces: true)
        // One rule with the Google User-Agent builder: a locale it cannot write as `ll_CC` is
        // refused now, not when the conversion is sent.
        guard AppUserAgentLocale.googleForm(locale) != nil else {
            throw RuleViolation(field: field(.locale), rule: AppUserAgentLocale.rule, message: AppUserAgentLocale.message)
        }
        // The Google App Conversion Tracking API's User-Agent ends with "Build/" and the OS build
        // number: a user agent without it could never be sent.
        guard let build else {
            throw RuleViolation(field: field(.build), rule: RuleViolation.requiredRule,
                                message: "build, the OS build id (e.g. 13D15), is part of the app user agent (Google App Conversion Tracking API).")
        }
        if build.hasPrefix("Build/") {
            throw RuleViolation(field: field(.build), rule: "build_without_prefix",
                                message: "build is the OS build id alone, e.g. 13D15: the user agent adds \"Build/\" itself (Google App Conversion Tracking API).")
        }
        try Self.userAgentToken(build, field(.build), spaces: false)
    }

    /// Printable ASCII without `(`, `)`, `;` — nor ` ` and `/` where `spaces` is false (a name,
    /// a version, a locale, a build: the Google App Conversion Tracking API's "User-Agent
    /// components").
    private static func userAgentToken(_ value: String, _ field: String, spaces: Bool) throws(RuleViolation) {
        let forbidden: Set<Unicode.Scalar> = spaces ? ["(", ")", ";"] : ["(", ")", ";", " ", "/"]
        let allowed = value.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F && !forbidden.contains($0) }
        guard allowed else {
            throw RuleViolation(
                field: field, rule: "user_agent_token",
                message: "A user agent part is printable ASCII without '(' ')' ';'\(spaces ? "" : " ' ' '/'") (Google App Conversion Tracking API).")
        }
    }
}

/// Apple's App Tracking Transparency authorization status.
public enum ATTStatus: String, LedgerEnum {
    /// The user has not been asked yet.
    case notDetermined = "not_determined"
    /// Tracking is restricted (parental controls, MDM); the user cannot allow it.
    case restricted
    /// The user refused tracking: no IDFA.
    case denied
    /// The user allowed tracking: IDFA available, AdServices can answer the detailed payload.
    case authorized
}
