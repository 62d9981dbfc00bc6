import Foundation

/// The legacy iAd `attributionDetails` dictionary an app phones home (Apple Search Ads Attribution
/// API), kept whole and read into typed values.
///
/// Apple Search Ads Attribution API: "Since the data is returned as an NSDictionary object, pass
/// the entire data object to your server; your app will not need to be updated even if the data
/// structure returned by Search Ads changes." So the server accepts any object: the raw JSON is
/// kept verbatim (``rawJSON``), unknown keys are kept (``otherFields``), a version wrapper
/// (`{"Version3.1": {…}}`) is unwrapped, and values are read leniently — `true` or `"true"`,
/// `1234567890` or `"1234567890"` — because apps serialize the NSDictionary in different ways. A
/// known key whose value cannot be read at all (a click date that is no date) is an error.
///
/// Since February 2023 Apple answers `iad-attribution` false (or an error) to every request; an
/// iAd false never outweighs an AdServices true.
public struct IAdAttributionDetails: Sendable, Hashable, Codable {
    /// The document as received, wrapper included.
    public var rawJSON: String
    /// The version wrapper's key (`Version3.1`), if the dictionary had one.
    public var version: String?
    /// `iad-attribution`: "True if user clicked on a Search Ads impression within 30 days prior to
    /// app download."
    public var attribution: Bool?
    /// `iad-click-date`: "Date and time the user clicked on a corresponding ad".
    public var clickDate: Date?
    /// `iad-conversion-date`: when the user downloaded the app after tapping the ad.
    public var conversionDate: Date?
    /// `iad-purchase-date`.
    public var purchaseDate: Date?
    /// `iad-conversion-type`: `Download` or `Redownload` (a download after deleting the app, or on
    /// another device); matched case-insensitively, other values kept.
    public var conversionType: String?
    /// `iad-keyword-matchtype` (`Broad`, `Exact`, `Search Match`).
    public var keywordMatchType: String?
    /// `iad-org-id`.
    public var orgID: String?
    /// `iad-org-name`.
    public var orgName: String?
    /// `iad-campaign-id` (identifiers are kept as text: apps send them as strings or numbers).
    public var campaignID: String?
    /// `iad-campaign-name`.
    public var campaignName: String?
    /// `iad-adgroup-id`.
    public var adGroupID: String?
    /// `iad-adgroup-name`.
    public var adGroupName: String?
    /// `iad-keyword-id`.
    public var keywordID: String?
    /// `iad-keyword`.
    public var keyword: String?
    /// `iad-creativeset-id`.
    public var creativeSetID: String?
    /// `iad-creativeset-name`.
    public var creativeSetName: String?
    /// `iad-lineitem-id`.
    public var lineItemID: String?
    /// `iad-lineitem-name`.
    public var lineItemName: String?
    /// `iad-country-or-region`.
    public var countryOrRegion: String?
    /// Every other key of the (unwrapped) dictionary, with its value as JSON text.
    public var otherFields: [String: String]

    /// The keys read into typed properties.
    public static let knownKeys: Set<String> = Set(CodingKeys.allCases.map(\.rawValue)).subtracting(["attributionDetails", "version", "otherFields"])

    enum CodingKeys: String, CodingKey, CaseIterable {
        case rawJSON = "attributionDetails", version, otherFields
        case attribution = "iad-attribution", clickDate = "iad-click-date", conversionDate = "iad-conversion-date"
        case purchaseDate = "iad-purchase-date", conversionType = "iad-conversion-type"
        case keywordMatchType = "iad-keyword-matchtype", orgID = "iad-org-id", orgName = "iad-org-name"
        case campaignID = "iad-campaign-id", campaignName = "iad-campaign-name", adGroupID = "iad-adgroup-id"
        case adGroupName = "iad-adgroup-name", keywordID = "iad-keyword-id", keyword = "iad-keyword"
        case creativeSetID = "iad-creativeset-id", creativeSetName = "iad-creativeset-name"
        case lineItemID = "iad-lineitem-id", lineItemName = "iad-lineitem-name", countryOrRegion = "iad-country-or-region"
    }

    /// Reads a phoned-home dictionary.
    ///
    /// - Throws: `ProviderError` (`malformedResponse`): `not_json`/`too_deep`, `wrong_type` (not an
    ///   object), `one_version_wrapper` (several `Version…` wrappers), and for a known key
    ///   `boolean`, `iso8601` or `wrong_type`.
    public static func parse(_ body: Data) throws(ProviderError) -> IAdAttributionDetails {
        let root = try ProviderJSONObject(GoogleAppleJSON.parse(body, provider: .appleIAd), provider: .appleIAd)
        var details = root
        var version: String?
        if !root.members.contains(where: { $0.key.hasPrefix("iad-") }) {
            let wrappers = root.members.filter { member in
                if case .object = member.value { return member.key.hasPrefix("Version") }
                return false
            }
            guard wrappers.count <= 1 else {
                throw ProviderError(
                    .malformedResponse, provider: .appleIAd, field: "$", rule: "one_version_wrapper",
                    message: "The dictionary has several Version… wrappers: \(wrappers.map(\.key).joined(separator: ", ")).")
            }
            if let wrapper = wrappers.first {
                version = wrapper.key
                details = try ProviderJSONObject(wrapper.value, provider: .appleIAd, path: wrapper.key)
            }
        }
        let reader = IAdValueReader(object: details)
        var result = IAdAttributionDetails(rawJSON: String(decoding: body, as: UTF8.self), version: version)
        result.attribution = try reader.bool(.attribution)
        result.clickDate = try reader.date(.clickDate)
        result.conversionDate = try reader.date(.conversionDate)
        result.purchaseDate = try reader.date(.purchaseDate)
        result.conversionType = try reader.text(.conversionType).map { raw in
            ["Download", "Redownload"].first { $0.lowercased() == raw.lowercased() } ?? raw
        }
        result.keywordMatchType = try reader.text(.keywordMatchType)
        result.orgID = try reader.text(.orgID)
        result.orgName = try reader.text(.orgName)
        result.campaignID = try reader.text(.campaignID)
        result.campaignName = try reader.text(.campaignName)
        result.adGroupID = try reader.text(.adGroupID)
        result.adGroupName = try reader.text(.adGroupName)
        result.keywordID = try reader.text(.keywordID)
        result.keyword = try reader.text(.keyword)
        result.creativeSetID = try reader.text(.creativeSetID)
        result.creativeSetName = try reader.text(.creativeSetName)
        result.lineItemID = try reader.text(.lineItemID)
        result.lineItemName = try reader.text(.lineItemName)
        result.countryOrRegion = try reader.text(.countryOrRegion)
        for member in details.members where !knownKeys.contains(member.key) {
            result.otherFields[member.key] = member.value.serialized
        }
        return result
    }

    private init(rawJSON: String, version: String?) {
        self.rawJSON = rawJSON
        self.version = version
        self.otherFields = [:]
    }

    /// Stores the raw dictionary and the typed values (dates as ISO-8601 text) under the `iad-`
    /// names; decoding re-reads the raw dictionary, the single source of truth.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(rawJSON, forKey: .rawJSON)
        try container.encodeIfPresent(version, forKey: .version)
        try container.encode(otherFields, forKey: .otherFields)
        try container.encodeIfPresent(attribution, forKey: .attribution)
        try container.encodeIfPresent(clickDate.map(AppleISO8601.format), forKey: .clickDate)
        try container.encodeIfPresent(conversionDate.map(AppleISO8601.format), forKey: .conversionDate)
        try container.encodeIfPresent(purchaseDate.map(AppleISO8601.format), forKey: .purchaseDate)
        let texts: [(CodingKeys, String?)] = [
            (.conversionType, conversionType), (.keywordMatchType, keywordMatchType), (.orgID, orgID), (.orgName, orgName),
            (.campaignID, campaignID), (.campaignName, campaignName), (.adGroupID, adGroupID), (.adGroupName, adGroupName),
            (.keywordID, keywordID), (.keyword, keyword), (.creativeSetID, creativeSetID), (.creativeSetName, creativeSetName),
            (.lineItemID, lineItemID), (.lineItemName, lineItemName), (.countryOrRegion, countryOrRegion),
        ]
        for (key, value) in texts { try container.encodeIfPresent(value, forKey: key) }
    }

    /// Decodes by re-reading the stored raw dictionary.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let raw = try container.decode(String.self, forKey: .rawJSON)
        do {
            self = try Self.parse(Data(raw.utf8))
        } catch {
            throw DecodingError.dataCorruptedError(forKey: .rawJSON, in: container, debugDescription: error.message)
        }
    }
}

/// Lenient reading of iAd values, which arrive as JSON types or as their string forms.
private struct IAdValueReader {
    let object: ProviderJSONObject

    func failure(_ key: IAdAttributionDetails.CodingKeys, _ rule: String, _ message: String) -> ProviderError {
        ProviderError(.malformedResponse, provider: .appleIAd, field: key.rawValue, rule: rule, message: message + " (Apple Search Ads Attribution API)")
    }

    /// `true`/`false`, `"true"`/`"false"` (any case), `1`/`0`, `"1"`/`"0"`.
    func bool(_ key: IAdAttributionDetails.CodingKeys) throws(ProviderError) -> Bool? {
        guard let value = object.optional(key.rawValue) else { return nil }
        switch value {
        case .bool(let flag): return flag
        case .number("1"), .string("1"): return true
        case .number("0"), .string("0"): return false
        case .string(let text) where text.lowercased() == "true": return true
        case .string(let text) where text.lowercased() == "false": return false
        default: throw failure(key, "boolean", "\(key.rawValue) must be true or false.")
        }
    }

    /// An ISO-8601 date-time string; an empty string reads as absent.
    func date(_ key: IAdAttributionDetails.CodingKeys) throws(ProviderError) -> Date? {
        guard let value = object.optional(key.rawValue) else { return nil }
        guard case .string(let text) = value else {
            throw failure(key, "wrong_type", "\(key.rawValue) must be a date-time string, found \(value.typeName).")
        }
        if text.isEmpty { return nil }
        guard let date = AppleISO8601.parse(text) else {
            throw failure(key, "iso8601", "\(key.rawValue) must be an ISO-8601 date-time such as 2020-06-29T18:50:16Z.")
        }
        return date
    }

    /// A string, or a number's or boolean's text (identifiers arrive both ways).
    func text(_ key: IAdAttributionDetails.CodingKeys) throws(ProviderError) -> String? {
        guard let value = object.optional(key.rawValue) else { return nil }
        switch value {
        case .string(let text): return text
        case .number(let text): return text
        case .bool(let flag): return flag ? "true" : "false"
        default: throw failure(key, "wrong_type", "\(key.rawValue) must be a string or a number, found \(value.typeName).")
        }
    }
}
