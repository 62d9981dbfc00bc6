import Foundation

/// A link that opened the app, with the click identifiers found in it. Google wants `gclid` (or
/// `gbraid` on iOS without IDFA); Branch wants `link_identifier` (`link_click_id`) and the
/// universal or app link URL.
///
/// Everything here is personal: the URL may carry any query the advertiser put there, and click
/// identifiers single out one person's ad click.
public struct DeepLink: Codable, Sendable, Hashable {
    /// The full URL that opened the app (universal link, app link or custom scheme). Required at
    /// append time. Personal.
    public var url: String?
    /// Google click id from the link's query. Personal.
    public var gclid: String?
    /// Google's iOS app-campaign click id (case-sensitive), used when there is no IDFA. Personal.
    public var gbraid: String?
    /// Google's iOS web-to-app click id. Personal.
    public var wbraid: String?
    /// Branch's click id (`link_click_id`), sent as `link_identifier`. Personal.
    public var linkClickID: String?

    /// Paths of the personal fields, relative to this object.
    public static let personalFields = ["url", "gclid", "gbraid", "wbraid", "link_click_id"]

    /// Creates deep link information.
    public init(url: String?, gclid: String? = nil, gbraid: String? = nil, wbraid: String? = nil, linkClickID: String? = nil) {
        self.url = url
        self.gclid = gclid
        self.gbraid = gbraid
        self.wbraid = wbraid
        self.linkClickID = linkClickID
    }

    enum CodingKeys: String, CodingKey {
        case url, gclid, gbraid, wbraid
        case linkClickID = "link_click_id"
    }

    func validate(at path: String) throws(RuleViolation) {
        func field(_ key: CodingKeys) -> String { FieldPath.join(path, key.stringValue) }
        try Check.url(Check.required(url, field(.url)), field(.url))
        try Check.text(gclid, field(.gclid), max: 512)
        try Check.text(gbraid, field(.gbraid), max: 512)
        try Check.text(wbraid, field(.wbraid), max: 512)
        try Check.text(linkClickID, field(.linkClickID), max: 512)
    }
}

/// What the Google Play Install Referrer library told an Android app on its first open. Branch
/// wants it in the first session (`install_referrer_extras`, `google_search_install_referrer`,
/// `clicked_referrer_ts`, `install_begin_ts`); its gclid serves Google when the user opted out.
public struct InstallReferrer: Codable, Sendable, Hashable {
    /// The full referrer text, e.g. `utm_source=…&utm_medium=…&gclid=…`. Personal.
    public var referrerURL: String?
    /// The gclid found in the referrer (`referrer_gclid`, `market_referrer_gclid`). Personal.
    public var gclid: String?
    /// Branch's `link_click_id` found in the referrer. Personal.
    public var linkClickID: String?
    /// The `google_search_install_referrer` value found in the referrer. Personal.
    public var googleSearchInstallReferrer: String?
    /// When the referring link was clicked (the library's click timestamp).
    public var clickedAt: Date?
    /// When the install began (the library's install-begin timestamp).
    public var installBeganAt: Date?

    /// Paths of the personal fields, relative to this object.
    public static let personalFields = ["referrer_url", "gclid", "link_click_id", "google_search_install_referrer"]

    /// Creates install referrer information.
    public init(
        referrerURL: String?, gclid: String? = nil, linkClickID: String? = nil, googleSearchInstallReferrer: String? = nil,
        clickedAt: Date? = nil, installBeganAt: Date? = nil
    ) {
        self.referrerURL = referrerURL
        self.gclid = gclid
        self.linkClickID = linkClickID
        self.googleSearchInstallReferrer = googleSearchInstallReferrer
        self.clickedAt = clickedAt
        self.installBeganAt = installBeganAt
    }

    enum CodingKeys: String, CodingKey {
        case referrerURL = "referrer_url"
        case gclid
        case linkClickID = "link_click_id"
        case googleSearchInstallReferrer = "google_search_install_referrer"
        case clickedAt = "clicked_at"
        case installBeganAt = "install_began_at"
    }

    func validate(at path: String) throws(RuleViolation) {
        func field(_ key: CodingKeys) -> String { FieldPath.join(path, key.stringValue) }
        try Check.text(referrerURL, field(.referrerURL), max: Check.longText)
        try Check.text(gclid, field(.gclid), max: 512)
        try Check.text(linkClickID, field(.linkClickID), max: 512)
        try Check.text(googleSearchInstallReferrer, field(.googleSearchInstallReferrer), max: 512)
    }
}
