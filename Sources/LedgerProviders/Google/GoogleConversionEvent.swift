import Foundation

/// The Google App Conversion Tracking API's `app_event_type`: "This field is an enumeration, and
/// will only accept the following values". `first_open` "should always be sent for attributing
/// installs", `session_start` "for reattributing sessions"; `in_app_purchase` for native store
/// purchases, `ecommerce_purchase` for all others.
public enum GoogleAppEventType: String, Sendable, Hashable, Codable, CaseIterable {
    /// An install: "should always be sent for attributing installs".
    case firstOpen = "first_open"
    /// A session: "should always be sent for reattributing sessions".
    case sessionStart = "session_start"
    /// A purchase "made through the native app store".
    case inAppPurchase = "in_app_purchase"
    /// A list of items was viewed.
    case viewItemList = "view_item_list"
    /// An item was viewed.
    case viewItem = "view_item"
    /// Search results were viewed.
    case viewSearchResults = "view_search_results"
    /// An item was added to the cart.
    case addToCart = "add_to_cart"
    /// "all other purchases".
    case ecommercePurchase = "ecommerce_purchase"
    /// A custom event, named by `app_event_name`.
    case custom

    /// The event type named by `text` (exactly as the enumeration spells it).
    ///
    /// - Throws: `ProviderError` on `app_event_type` with rule `enumeration`: "will only accept the
    ///   following values".
    public init(validating text: String) throws(ProviderError) {
        guard let type = GoogleAppEventType(rawValue: text) else {
            throw ProviderError(
                .invalidRequest, provider: .google, field: "app_event_type", rule: "enumeration",
                message: "app_event_type must be one of \(Self.allCases.map(\.rawValue).joined(separator: ", ")) (Google App Conversion Tracking API).")
        }
        self = type
    }
}

/// The device's platform, which decides `id_type`: the Google App Conversion Tracking API supports
/// `advertisingid` (Android) and `idfa` (iOS).
public enum GoogleDevicePlatform: String, Sendable, Hashable, Codable, CaseIterable {
    /// Android: `id_type=advertisingid`.
    case android
    /// iOS: `id_type=idfa`.
    case iOS = "ios"

    /// The platform named by `text` (`android`, `ios`, any case).
    ///
    /// - Throws: `ProviderError` on `id_type` with rule `android_or_ios`: the Google App Conversion
    ///   Tracking API supports only `advertisingid` (Android) and `idfa` (iOS) "to begin with".
    public init(validating text: String) throws(ProviderError) {
        guard let platform = GoogleDevicePlatform(rawValue: text.lowercased()) else {
            throw ProviderError(
                .invalidRequest, provider: .google, field: "id_type", rule: "android_or_ios",
                message: "id_type is defined for Android (advertisingid) and iOS (idfa) only (Google App Conversion Tracking API).")
        }
        self = platform
    }

    /// The `id_type` query value for this platform.
    public var idType: String {
        switch self {
        case .android: "advertisingid"
        case .iOS: "idfa"
        }
    }
}

/// The API consumer's credentials for one app: the Google App Conversion Tracking API's `dev_token`
/// ("The unique, static developer token issued to the API consumer") and `link_id` ("binding the
/// developer token … to a specific app").
///
/// Deliberately not `Codable`: the developer token is a credential, kept apart from the stored
/// ``GoogleConversionEvent`` and marked sensitive in every request (`.query("dev_token")`).
public struct GoogleAppLink: Sendable, Hashable {
    /// `dev_token`: a credential, never stored or logged.
    public var devToken: String
    /// `link_id` (`31FF8D67E5BB5DD5029DCC2734C2F884`).
    public var linkID: String

    /// Credentials from configuration; checked when a request is built.
    public init(devToken: String, linkID: String) {
        self.devToken = devToken
        self.linkID = linkID
    }
}

extension GoogleAppLink: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// A description without the developer token, so printing the credentials cannot leak it.
    public var description: String {
        "GoogleAppLink(dev_token: \(ProviderRequest.redactedMarker), link_id: \(linkID))"
    }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// Reflection (`dump`, test failure output) hides the developer token too.
    public var customMirror: Mirror {
        Mirror(self, children: ["dev_token": ProviderRequest.redactedMarker, "link_id": linkID], displayStyle: .struct)
    }
}

/// One app event to report to Google, everything the Google App Conversion Tracking API's
/// conversion request needs except the credentials. Stored by the ledger (hence `Codable`, with
/// Google's parameter names) so that the cross-network request, "identical to the original
/// conversion tracking request", can be rebuilt from it later.
public struct GoogleConversionEvent: Sendable, Hashable, Codable {
    /// `app_event_type`.
    public var appEventType: GoogleAppEventType
    /// `app_event_name`: required iff `appEventType` is `.custom`; 1–64 Unicode characters; not a
    /// reserved `app_event_type` value.
    public var appEventName: String?
    /// `rdid`: "A valid UUID string representing the raw device ID". iOS without IDFA sends the
    /// all-zero UUID (with `gbraid`), which is accepted.
    public var rdid: String
    /// Decides `id_type`.
    public var platform: GoogleDevicePlatform
    /// `lat`: whether the user limits ad tracking (sent as `1`/`0`).
    public var limitAdTracking: Bool
    /// `app_version` (`CFBundleShortVersionString` / `versionName`).
    public var appVersion: String
    /// `os_version`.
    public var osVersion: String
    /// `sdk_version`; `nil` sends `app_version` ("If the app does not use an SDK, please pass the
    /// same value as app_version").
    public var sdkVersion: String?
    /// `timestamp`: when the event occurred.
    public var timestamp: GoogleTimestamp
    /// `value`: the event's monetary value as text, `-?digits.digits`; `nil` or blank sends none.
    /// Use ``GoogleConversionEvent/valueText(_:)`` to write a `Decimal` with two decimals.
    public var value: String?
    /// `currency_code`: ISO 4217, required iff `value` is given and not blank.
    public var currencyCode: String?
    /// `gclid` from a deep link that opened the app.
    public var gclid: String?
    /// `gbraid` from a deep link (iOS without IDFA); case-sensitive, sent as is.
    public var gbraid: String?
    /// The `User-Agent` header.
    public var userAgent: GoogleAppUserAgent
    /// The `X-Forwarded-For` header: the device's public IPv4 or IPv6 address.
    public var deviceIP: String
    /// The optional `app_event_data` body.
    public var eventData: GoogleEventData

    enum CodingKeys: String, CodingKey {
        case appEventType = "app_event_type"
        case appEventName = "app_event_name"
        case rdid
        case platform
        case limitAdTracking = "lat"
        case appVersion = "app_version"
        case osVersion = "os_version"
        case sdkVersion = "sdk_version"
        case timestamp
        case value
        case currencyCode = "currency_code"
        case gclid
        case gbraid
        case userAgent = "user_agent"
        case deviceIP = "x_forwarded_for"
        case eventData = "app_event_data"
    }

    /// An event; nothing is checked until a request is built (``GoogleConversionRequestBuilder/validate(_:)``).
    public init(
        appEventType: GoogleAppEventType, appEventName: String? = nil, rdid: String, platform: GoogleDevicePlatform,
        limitAdTracking: Bool, appVersion: String, osVersion: String, sdkVersion: String? = nil,
        timestamp: GoogleTimestamp, value: String? = nil, currencyCode: String? = nil, gclid: String? = nil,
        gbraid: String? = nil, userAgent: GoogleAppUserAgent, deviceIP: String, eventData: GoogleEventData = GoogleEventData()
    ) {
        self.appEventType = appEventType
        self.appEventName = appEventName
        self.rdid = rdid
        self.platform = platform
        self.limitAdTracking = limitAdTracking
        self.appVersion = appVersion
        self.osVersion = osVersion
        self.sdkVersion = sdkVersion
        self.timestamp = timestamp
        self.value = value
        self.currencyCode = currencyCode
        self.gclid = gclid
        self.gbraid = gbraid
        self.userAgent = userAgent
        self.deviceIP = deviceIP
        self.eventData = eventData
    }

    /// A monetary amount as the `value` parameter wants it: "a machine-readable floating point
    /// value using a decimal point" — two decimals, no exponent, no grouping (`1.99`).
    public static func valueText(_ amount: Decimal) throws(ProviderError) -> String {
        do {
            return try GoogleEventData.moneyText(amount, path: "value")
        } catch {
            throw ProviderError(.invalidRequest, provider: .google, field: "value", rule: "decimal_point_no_exponent_no_grouping", message: error.message)
        }
    }

    /// Whether `value` is present and not blank (which is when `currency_code` becomes required).
    public var hasValue: Bool {
        guard let value else { return false }
        return !value.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
    }
}
