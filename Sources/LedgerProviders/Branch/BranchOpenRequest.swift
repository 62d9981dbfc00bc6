/// The facts of one app session that Branch's server-to-server `v1/open` needs (Branch v1/open
/// server-to-server guide, "POST body parameters"). ``build(with:)`` checks them against the
/// document's rules and makes the `POST https://api2.branch.io/v1/open` request.
///
/// Derived fields are never set by hand, so their rules hold by construction:
/// `hardware_id` (iOS: IDFA, else IDFV; Android: ANDROID_ID; omitted when none), `hardware_id_type`
/// (iOS only, only with `hardware_id`), `is_hardware_id_real` (false exactly when `hardware_id` is
/// omitted), `ad_tracking_enabled` (omitted when ad tracking is limited), `os_version` (`NA` when
/// unknown) and `server_to_server` (always `true`).
///
/// Sequencing obligation: with `server_to_server_identity`, the first answer carries a
/// `randomized_bundle_token` that "must be hardcoded" into every later request for that device, so
/// a device's next open must wait for the previous open's answer. The builder enforces what it can
/// see: an open with `first_session` false and `server_to_server_identity` but no
/// `randomized_bundle_token` is refused (`required_after_first_open`).
public struct BranchOpenRequest: Sendable, Hashable {
    /// `os`: "Only accepts Android or iOS".
    public enum OperatingSystem: String, Sendable, Hashable, Codable, CaseIterable {
        /// `iOS`.
        case iOS = "iOS"
        /// `Android`.
        case android = "Android"

        /// Reads the `os` text, accepting exactly `iOS` or `Android` (Branch v1/open
        /// server-to-server guide: "Only accepts Android or iOS"); anything else (`ios`, `iPadOS`,
        /// `Windows`) is refused.
        public init(validating text: String) throws(ProviderError) {
            guard let value = OperatingSystem(rawValue: text) else {
                throw ProviderError(
                    .invalidRequest, provider: .branch, field: "os", rule: "ios_or_android",
                    message: "os only accepts Android or iOS (Branch v1/open server-to-server guide), got '\(text)'.")
            }
            self = value
        }
    }

    /// `os`.
    public var os: OperatingSystem
    /// `os_version`: e.g. `23` or `9.1.2`. `nil` sends the document's preferred default `NA`; a
    /// blank text is refused ("This cannot be blank").
    public var osVersion: String?
    /// `app_version` (required), e.g. `1.12.4`.
    public var appVersion: String
    /// `user_agent` (required): the device's user agent.
    public var userAgent: String
    /// The device's public IP, sent as the `X-IP-Override` header (required; the device's, never
    /// this server's).
    public var devicePublicIP: String

    /// iOS: the IDFA, when the app may read it. An all-zero IDFA counts as unavailable.
    public var idfa: String?
    /// iOS: the IDFV; sent as `ios_vendor_id`, and as `hardware_id` when there is no IDFA.
    public var idfv: String?
    /// Android: the ANDROID_ID, sent as `hardware_id`.
    public var androidID: String?
    /// Android: `google_advertising_id`. An all-zero GAID counts as unavailable.
    public var googleAdvertisingID: String?
    /// Android: `advertising_ids`, e.g. `["oaid": "…"]`; omitted when empty.
    public var advertisingIDs: [String: String]
    /// `true` when Limit Ad Tracking applies: then `ad_tracking_enabled` is omitted.
    public var limitAdTracking: Bool

    /// `local_ip`: the device's LAN address, if known.
    public var localIP: String?
    /// `screen_height`, in pixels.
    public var screenHeight: Int?
    /// `screen_width`, in pixels.
    public var screenWidth: Int?
    /// `model`, e.g. `iPhone` or `SM-G960U1` (in both of the document's examples).
    public var model: String?
    /// `facebook_app_link_checked`.
    public var facebookAppLinkChecked: Bool?

    /// `link_identifier`: the `link_click_id` of the URI that opened the app.
    public var linkIdentifier: String?
    /// `universal_link_url`: the web URL that opened the app.
    public var universalLinkURL: String?
    /// `android_app_link_url`: the web URL that opened the app.
    public var androidAppLinkURL: String?
    /// `local_url` (NativeLink): a Branch URL found on the clipboard on the very first open.
    public var localURL: String?

    /// Android, first session only: `install_referrer_extras` (the full Play install referrer).
    public var installReferrerExtras: String?
    /// Android, first session only: `google_search_install_referrer`.
    public var googleSearchInstallReferrer: String?
    /// Android, first session only: `clicked_referrer_ts`, Unix seconds.
    public var clickedReferrerTimestamp: Int64?
    /// Android, first session only: `install_begin_ts`, Unix seconds.
    public var installBeginTimestamp: Int64?
    /// Android only: `referrer_gclid`, the gclid of the Play install referrer.
    public var referrerGclid: String?

    /// iOS only: `apple_attribution_token` (AdServices, 24 h TTL: send it within a day).
    public var appleAttributionToken: String?
    /// iOS only, first session only, deprecated: `search_ad_encoded`.
    public var searchAdEncoded: String?
    /// iOS only: `gbraid` from the referring URL.
    public var gbraid: String?

    /// `first_session`: `true` makes Branch count an INSTALL or REINSTALL, `false` an OPEN; `nil`
    /// omits it.
    public var firstSession: Bool?
    /// `server_to_server_identity`: sent (as `true`) only when the feature is used; the document
    /// says "Do not set this property in the request, if this feature will not be used."
    public var serverToServerIdentity: Bool
    /// `randomized_bundle_token`: the value from this device's first answer, once known. Needs
    /// ``serverToServerIdentity``.
    public var randomizedBundleToken: String?
    /// `identity`: an encrypted custom user id, never personal data. Needs
    /// ``serverToServerIdentity``.
    public var identity: String?
    /// `tracking_disabled`.
    public var trackingDisabled: Bool?
    /// `disable_ad_network_callouts`.
    public var disableAdNetworkCallouts: Bool?
    /// `custom_param_1`.
    public var customParam1: String?
    /// `custom_param_2`.
    public var customParam2: String?
    /// `custom_param_3`.
    public var customParam3: String?

    /// Creates a request with the always-required facts; set the rest as properties.
    public init(
        os: OperatingSystem, osVersion: String? = nil, appVersion: String, userAgent: String,
        devicePublicIP: String
    ) {
        self.os = os
        self.osVersion = osVersion
        self.appVersion = appVersion
        self.userAgent = userAgent
        self.devicePublicIP = devicePublicIP
        self.advertisingIDs = [:]
        self.limitAdTracking = false
        self.serverToServerIdentity = false
    }

    /// The path of the open endpoint.
    public static let path = "/v1/open"
}
