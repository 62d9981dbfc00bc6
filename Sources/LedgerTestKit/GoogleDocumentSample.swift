import LedgerProviders

/// The sample values of the Google App Conversion Tracking API's document (its `dev_token`,
/// `link_id`, user agent and event), for the request builder's tests and the transport's
/// exchanges with the fake Google alike.
public enum GoogleDocumentSample {
    /// The document's `dev_token` and `link_id`.
    public static let link = GoogleAppLink(devToken: "Z_eErE4DkvcKjDM1OVE4c4", linkID: "31FF8D67E5BB5DD5029DCC2734C2F884")
    /// The document's user agent, in its parts.
    public static let userAgent = GoogleAppUserAgent(
        name: "MyAnalyticsCompany", version: "1.0.0", osAndVersion: "iOS 10.0.2", locale: "en_US", device: "iPhone9,1",
        build: "Build/13D15")

    /// The document's event of `type`; `sdk_version` is given explicitly (`1.9.5r6`).
    /// - Throws: never for these values (the timestamp's text is the document's).
    public static func event(
        _ type: GoogleAppEventType, name: String? = nil, rdid: String = "0F7AB11F-DA50-498E-B225-21AC1977A85D",
        value: String? = nil, currency: String? = nil, gclid: String? = nil, eventData: GoogleEventData = GoogleEventData()
    ) throws -> GoogleConversionEvent {
        GoogleConversionEvent(
            appEventType: type, appEventName: name, rdid: rdid, platform: .iOS, limitAdTracking: false, appVersion: "1.2.4",
            osVersion: "9.3.2", sdkVersion: "1.9.5r6", timestamp: try GoogleTimestamp(text: "1432681913.123456"), value: value,
            currencyCode: currency, gclid: gclid, userAgent: userAgent, deviceIP: "216.58.194.174", eventData: eventData)
    }
}
