import Foundation

/// The Apple AdServices attribution API's `conversionType`: "Values are Download, Redownload or
/// preorder" — the samples spell it `PreOrder`, the table `preorder`; known values are matched
/// case-insensitively and held in the samples' spelling. Unknown values are kept as sent.
public struct AdServicesConversionType: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    /// The value, in the samples' spelling when known.
    public let rawValue: String
    /// A first download.
    public static let download = AdServicesConversionType(rawValue: "Download")
    /// A download after deleting the app, or on another device.
    public static let redownload = AdServicesConversionType(rawValue: "Redownload")
    /// A pre-order (lookback 90 days after a click, 61 after a view).
    public static let preOrder = AdServicesConversionType(rawValue: "PreOrder")

    /// A value as received; known values are normalized whatever their case.
    public init(rawValue: String) {
        let known = ["Download", "Redownload", "PreOrder"]
        self.rawValue = known.first { $0.lowercased() == rawValue.lowercased() } ?? rawValue
    }

    /// The value.
    public var description: String { rawValue }
}

/// The Apple AdServices attribution API's `claimType`: `Click` (tap-through, 30-day window,
/// "prioritized over view-through") or `Impression` (view-through, within 24 hours of the view).
/// Matched case-insensitively.
public struct AdServicesClaimType: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    /// The value, in the samples' spelling when known.
    public let rawValue: String
    /// Tap-through: "the user tapped on an ad".
    public static let click = AdServicesClaimType(rawValue: "Click")
    /// View-through: the user "viewed an ad … but didn't tap on it".
    public static let impression = AdServicesClaimType(rawValue: "Impression")

    /// A value as received; known values are normalized whatever their case.
    public init(rawValue: String) {
        let known = ["Click", "Impression"]
        self.rawValue = known.first { $0.lowercased() == rawValue.lowercased() } ?? rawValue
    }

    /// The value.
    public var description: String { rawValue }
}

/// An AdServices attribution record (Apple AdServices attribution API, "Attribution payload"),
/// stored under Apple's field names.
///
/// Only `attribution` is required: the document's "Attribution payload descriptions" mark no other
/// field required, and the attribution rule needs nothing else (it uses `claimType`, the dates and
/// the campaign when present). Known to be absent at times: `keywordId` ("when you enable search
/// match, the API doesn't return keywordId"), `adId` (iOS 15.2 and later only), `clickDate` /
/// `impressionDate` ("only appears in the detailed … payload"), and `claimType` (payloads from
/// before view-through attribution lack it); an `attribution: true` payload without `orgId`,
/// `campaignId`, `adGroupId`, `conversionType` or `countryOrRegion` is accepted too, so that the
/// install is not lost. A field that is present must still have its type.
public struct AdServicesAttribution: Sendable, Hashable, Codable {
    /// "true … if a user clicks an Apple Search Ads impression up to 30 days before your app download"; false when no record matches.
    public var attribution: Bool
    /// The organization (account) that owns the campaign.
    public var orgId: Int64?
    /// The campaign.
    public var campaignId: Int64?
    /// The ad group.
    public var adGroupId: Int64?
    /// The keyword; absent with search match.
    public var keywordId: Int64?
    /// The ad (ad-to-ad-group assignment); iOS 15.2 and later only.
    public var adId: Int64?
    /// `Download`, `Redownload` or `PreOrder`.
    public var conversionType: AdServicesConversionType?
    /// `Click` or `Impression`.
    public var claimType: AdServicesClaimType?
    /// The campaign's country or region (`US`).
    public var countryOrRegion: String?
    /// When the user tapped the ad (detailed payloads, tap-through).
    public var clickDate: Date?
    /// When the user viewed the ad (detailed payloads, view-through).
    public var impressionDate: Date?

    enum CodingKeys: String, CodingKey {
        case attribution, orgId, campaignId, adGroupId, keywordId, adId, conversionType, claimType, countryOrRegion
        case clickDate, impressionDate
    }

    /// Which of the two record types Apple returned: "Detailed" needs the user's tracking
    /// authorization and carries `clickDate`/`impressionDate`. A detailed record that follows a
    /// standard one enriches the same install (it is not a second install).
    public enum PayloadKind: String, Sendable, Hashable, Codable {
        /// Without dates (no tracking authorization); with `clickDate` or `impressionDate`.
        case standard, detailed
    }

    /// `detailed` when a click or impression date is present.
    public var kind: PayloadKind { clickDate != nil || impressionDate != nil ? .detailed : .standard }

    /// A record from its fields (for tests and stored values).
    public init(
        attribution: Bool, orgId: Int64? = nil, campaignId: Int64? = nil, adGroupId: Int64? = nil, keywordId: Int64? = nil,
        adId: Int64? = nil, conversionType: AdServicesConversionType? = nil, claimType: AdServicesClaimType? = nil,
        countryOrRegion: String? = nil, clickDate: Date? = nil, impressionDate: Date? = nil
    ) {
        self.attribution = attribution
        self.orgId = orgId
        self.campaignId = campaignId
        self.adGroupId = adGroupId
        self.keywordId = keywordId
        self.adId = adId
        self.conversionType = conversionType
        self.claimType = claimType
        self.countryOrRegion = countryOrRegion
        self.clickDate = clickDate
        self.impressionDate = impressionDate
    }

    /// Parses a 200 answer's body.
    ///
    /// - Throws: `ProviderError` (`malformedResponse`) naming the field and rule: `not_json`,
    ///   `too_deep`, `missing` (`attribution` only), `wrong_type`, `integer`,
    ///   `integer_out_of_range`, `iso8601`.
    public static func parse(_ body: Data) throws(ProviderError) -> AdServicesAttribution {
        let object = try ProviderJSONObject(GoogleAppleJSON.parse(body, provider: .appleAdServices), provider: .appleAdServices)
        let attribution = try object.requiredBool("attribution")
        func number(_ key: String) throws(ProviderError) -> Int64? { try object.optionalInt64(key) }
        func date(_ key: String) throws(ProviderError) -> Date? {
            guard let text = try object.optionalString(key) else { return nil }
            guard let date = AppleISO8601.parse(text) else {
                throw ProviderError(
                    .malformedResponse, provider: .appleAdServices, field: key, rule: "iso8601",
                    message: "\(key) is not an ISO-8601 date-time such as 2024-10-08T17:17Z: \(text.prefix(40)).")
            }
            return date
        }
        let conversion = try object.optionalString("conversionType")
        let country = try object.optionalString("countryOrRegion")
        return AdServicesAttribution(
            attribution: attribution, orgId: try number("orgId"), campaignId: try number("campaignId"),
            adGroupId: try number("adGroupId"), keywordId: try object.optionalInt64("keywordId"),
            adId: try object.optionalInt64("adId"), conversionType: conversion.map(AdServicesConversionType.init(rawValue:)),
            claimType: try object.optionalString("claimType").map(AdServicesClaimType.init(rawValue:)),
            countryOrRegion: country, clickDate: try date("clickDate"), impressionDate: try date("impressionDate"))
    }

    /// Dates are stored as ISO-8601 text (`2024-10-08T17:17:00Z`) whatever the encoder's date strategy.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(attribution, forKey: .attribution)
        try container.encodeIfPresent(orgId, forKey: .orgId)
        try container.encodeIfPresent(campaignId, forKey: .campaignId)
        try container.encodeIfPresent(adGroupId, forKey: .adGroupId)
        try container.encodeIfPresent(keywordId, forKey: .keywordId)
        try container.encodeIfPresent(adId, forKey: .adId)
        try container.encodeIfPresent(conversionType, forKey: .conversionType)
        try container.encodeIfPresent(claimType, forKey: .claimType)
        try container.encodeIfPresent(countryOrRegion, forKey: .countryOrRegion)
        try container.encodeIfPresent(clickDate.map(AppleISO8601.format), forKey: .clickDate)
        try container.encodeIfPresent(impressionDate.map(AppleISO8601.format), forKey: .impressionDate)
    }

    /// Decodes the stored form (dates as ISO-8601 text).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func date(_ key: CodingKeys) throws -> Date? {
            guard let text = try container.decodeIfPresent(String.self, forKey: key) else { return nil }
            guard let date = AppleISO8601.parse(text) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "Not ISO-8601: \(text)")
            }
            return date
        }
        self.init(
            attribution: try container.decode(Bool.self, forKey: .attribution),
            orgId: try container.decodeIfPresent(Int64.self, forKey: .orgId),
            campaignId: try container.decodeIfPresent(Int64.self, forKey: .campaignId),
            adGroupId: try container.decodeIfPresent(Int64.self, forKey: .adGroupId),
            keywordId: try container.decodeIfPresent(Int64.self, forKey: .keywordId),
            adId: try container.decodeIfPresent(Int64.self, forKey: .adId),
            conversionType: try container.decodeIfPresent(AdServicesConversionType.self, forKey: .conversionType),
            claimType: try container.decodeIfPresent(AdServicesClaimType.self, forKey: .claimType),
            countryOrRegion: try container.decodeIfPresent(String.self, forKey: .countryOrRegion),
            clickDate: try date(.clickDate), impressionDate: try date(.impressionDate))
    }
}
