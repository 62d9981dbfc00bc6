import Foundation

/// One of the Google App Conversion Tracking API's ad event objects ("the core objects of app
/// attribution"), every field kept, nulls included, stored under Google's own names.
///
/// "Always present" fields are required; the others are `nil` when absent or `null`: the Google App
/// Conversion Tracking API gives `network_subtype` only "when campaign_type is UAC and network_type
/// is Display" as null, `video_id`, `keyword`, `match_type`, `placement`, `ad_group_id`,
/// `creative_id` only for some campaign and network types, and `interaction_type` "will always be
/// null". String enumerations are kept as text (with typed views) so that a new value from Google
/// never fails a parse.
public struct GoogleAdEvent: Sendable, Hashable, Codable {
    /// "A unique identifier for ad events. It is reused in the cross-network attribution request."
    public var adEventID: String
    /// "The conversion metric used for attribution" (`conversion`).
    public var conversionMetric: String
    /// When the ad event occurred; the value to use for last-click attribution.
    public var timestamp: GoogleTimestamp
    /// `UAC`, `Search`, `Display` or `Video`.
    public var campaignType: String
    /// The numeric campaign ID ("guaranteed unique").
    public var campaignID: Int64
    /// The advertiser-defined campaign name ("not guaranteed unique").
    public var campaignName: String
    /// `ClickToDownload`, `AppDeepLink`, `AppDeepLinkContinue` or `Unknown`.
    public var adType: String
    /// The advertiser that owns the campaign (tells AdWords accounts apart).
    public var externalCustomerID: Int64
    /// An AdWords location ID.
    public var location: Int64
    /// `Search`, `Display` or `YouTube`.
    public var networkType: String
    /// `GoogleSearch`, `SearchPartners`, `mGDN`, `AdMob`, `YouTubeVideos`, `YouTubeSearch`, `VideoPartners`.
    public var networkSubtype: String?
    /// The YouTube video ID, only when network_type is YouTube and campaign_type is not UAC.
    public var videoID: String?
    /// The search keyword (`+food +delivery`), only for Search outside UAC.
    public var keyword: String?
    /// `e`, `p` or `b` (Exact, Phrase, Broad).
    public var matchType: String?
    /// The placement (`mobileapp::1-343200656`), only for Display outside UAC.
    public var placement: String?
    /// The ad group ID, only when campaign_type is not UAC.
    public var adGroupID: Int64?
    /// The creative ID, only when campaign_type is not UAC.
    public var creativeID: Int64?
    /// Always null per the document; kept in case it is not.
    public var interactionType: String?

    enum CodingKeys: String, CodingKey {
        case adEventID = "ad_event_id"
        case conversionMetric = "conversion_metric"
        case timestamp
        case campaignType = "campaign_type"
        case campaignID = "campaign_id"
        case campaignName = "campaign_name"
        case adType = "ad_type"
        case externalCustomerID = "external_customer_id"
        case location
        case networkType = "network_type"
        case networkSubtype = "network_subtype"
        case videoID = "video_id"
        case keyword
        case matchType = "match_type"
        case placement
        case adGroupID = "ad_group_id"
        case creativeID = "creative_id"
        case interactionType = "interaction_type"
    }

    /// Reads one `ad_events[i]` object.
    init(_ object: ProviderJSONObject) throws(ProviderError) {
        adEventID = try object.requiredString("ad_event_id")
        conversionMetric = try object.requiredString("conversion_metric")
        let stamp = try object.required("timestamp")
        guard case .number(let text) = stamp else {
            throw object.wrongType("timestamp", expected: "number", found: stamp)
        }
        guard let parsed = GoogleTimestamp(jsonNumber: text), parsed.microsecondsSince1970 >= 0 else {
            throw ProviderError(
                .malformedResponse, provider: .google, field: object.fieldPath("timestamp"), rule: "unix_seconds",
                message: "\(object.fieldPath("timestamp")) is not a Unix timestamp in seconds: \(text.prefix(40)).")
        }
        timestamp = parsed
        campaignType = try object.requiredString("campaign_type")
        campaignID = try object.requiredInt64("campaign_id")
        campaignName = try object.requiredString("campaign_name")
        adType = try object.requiredString("ad_type")
        externalCustomerID = try object.requiredInt64("external_customer_id")
        location = try object.requiredInt64("location")
        networkType = try object.requiredString("network_type")
        networkSubtype = try object.optionalString("network_subtype")
        videoID = try object.optionalString("video_id")
        keyword = try object.optionalString("keyword")
        matchType = try object.optionalString("match_type")
        placement = try object.optionalString("placement")
        adGroupID = try object.optionalInt64("ad_group_id")
        creativeID = try object.optionalInt64("creative_id")
        interactionType = try object.optionalString("interaction_type")
    }

    /// Stores every field, `null` included, so the stored form lists what Google sent.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(adEventID, forKey: .adEventID)
        try container.encode(conversionMetric, forKey: .conversionMetric)
        try container.encode(timestamp, forKey: .timestamp)
        try container.encode(campaignType, forKey: .campaignType)
        try container.encode(campaignID, forKey: .campaignID)
        try container.encode(campaignName, forKey: .campaignName)
        try container.encode(adType, forKey: .adType)
        try container.encode(externalCustomerID, forKey: .externalCustomerID)
        try container.encode(location, forKey: .location)
        try container.encode(networkType, forKey: .networkType)
        try container.encode(networkSubtype, forKey: .networkSubtype)
        try container.encode(videoID, forKey: .videoID)
        try container.encode(keyword, forKey: .keyword)
        try container.encode(matchType, forKey: .matchType)
        try container.encode(placement, forKey: .placement)
        try container.encode(adGroupID, forKey: .adGroupID)
        try container.encode(creativeID, forKey: .creativeID)
        try container.encode(interactionType, forKey: .interactionType)
    }

    /// The campaign type, when it is one the document names.
    public var knownCampaignType: GoogleCampaignType? { GoogleCampaignType(rawValue: campaignType) }
    /// The network type, when it is one the document names.
    public var knownNetworkType: GoogleNetworkType? { GoogleNetworkType(rawValue: networkType) }
}

/// The Google App Conversion Tracking API's `campaign_type` values. "UAC is an abbreviation for
/// Universal App Campaign."
public enum GoogleCampaignType: String, Sendable, Hashable, Codable, CaseIterable {
    /// Universal App Campaign, Search, Display, Video.
    case uac = "UAC", search = "Search", display = "Display", video = "Video"
}

/// The Google App Conversion Tracking API's `network_type` values.
public enum GoogleNetworkType: String, Sendable, Hashable, Codable, CaseIterable {
    /// The Search network, the Display network, YouTube.
    case search = "Search", display = "Display", youTube = "YouTube"
}
