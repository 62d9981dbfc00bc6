import Foundation
import LedgerProviders
import Testing

/// Apple AdServices attribution API, "Attribution payload": the eight samples, copied verbatim
/// (trailing spaces included).
///
/// As printed, the last sample's closing `}` falls outside its code block (after the closing
/// fence); it is joined back here, which makes the sample valid JSON.
enum AppleAdServicesSamples {
    // "A detailed payload for tap-through attribution resembles the following:"
    static let detailedClick = #"""
        {
          "attribution": true,
          "orgId": 40669820,
          "campaignId": 542370539,
          "conversionType": "Download",
          "clickDate": "2024-10-08T17:17Z",
          "claimType": "Click",
          "adGroupId": 542317095,
          "countryOrRegion": "US",
          "keywordId": 87675432,
          "adId": 542317136
        }
        """#

    // "A standard payload for tap-through attribution resembles the following:"
    static let standardClick = #"""
        {
          "attribution": true,
          "orgId": 40669820,
          "campaignId": 542370539,
          "conversionType": "Download",
          "claimType": "Click",
          "adGroupId": 542317095,
          "countryOrRegion": "US",
          "keywordId": 87675432,
          "adId": 542317136
        }
        """#

    // "A detailed payload for view-through attribution resembles the following:"
    static let detailedImpression = #"""
        {  
            "attribution": true,  
            "orgId": 40669820,  
            "campaignId": 542370539,  
            "conversionType": "Download",  
            "impressionDate": "2024-10-08T17:17Z",  
            "claimType": "Impression",  
            "adGroupId": 542317095,  
            "countryOrRegion": "US",  
            "keywordId": 87675432,  
            "adId": 542317136  
        }
        """#

    // "A standard payload for view-through attribution resembles the following:"
    static let standardImpression = #"""
        {  
            "attribution": true,  
            "orgId": 40669820,  
            "campaignId": 542370539,  
            "conversionType": "Download",  
            "claimType": "Impression",  
            "adGroupId": 542317095,  
            "countryOrRegion": "US",  
            "keywordId": 87675432,  
            "adId": 542317136  
        }
        """#

    // "A detailed payload for pre-order attribution on tap-throughs resembles the following:"
    static let detailedPreOrderClick = #"""
        {  
            "attribution": true,  
            "orgId": 40669820,  
            "campaignId": 542370539,  
            "conversionType": "PreOrder",  
            "clickDate": "2020-04-08T17:17Z",  
            "claimType": "Click",  
            "adGroupId": 542317095,  
            "countryOrRegion": "US",  
            "keywordId": 87675432,  
            "adId": 542317136  
        }
        """#

    // "A standard payload for pre-order attribution on tap-throughs resembles the following:"
    static let standardPreOrderClick = #"""
        {  
            "attribution": true,  
            "orgId": 40669820,  
            "campaignId": 542370539,  
            "conversionType": "PreOrder",  
            "claimType": "Click",  
            "adGroupId": 542317095,  
            "countryOrRegion": "US",  
            "keywordId": 87675432,  
            "adId": 542317136  
        }
        """#

    // "A detailed payload for pre-order attribution on view-throughs resembles the following:"
    static let detailedPreOrderImpression = #"""
        {  
            "attribution": true,  
            "orgId": 40669820,  
            "campaignId": 542370539,  
            "conversionType": "PreOrder",  
            "impressionDate": "2020-04-08T17:17Z",  
            "claimType": "Impression",  
            "adGroupId": 542317095,  
            "countryOrRegion": "US",  
            "keywordId": 87675432,  
            "adId": 542317136  
        }
        """#

    // "A standard payload for pre-order attribution on view-throughs resembles the following:"
    static let standardPreOrderImpression = #"""
        {  
            "attribution": true,  
            "orgId": 40669820,  
            "campaignId": 542370539,  
            "conversionType": "PreOrder",  
            "claimType": "Impression",  
            "adGroupId": 542317095,  
            "countryOrRegion": "US",  
            "keywordId": 87675432,  
            "adId": 542317136

        }
        """#

    /// All eight, with whether each is detailed, its claim type and conversion type.
    static let all: [(name: String, json: String, detailed: Bool, claim: AdServicesClaimType, conversion: AdServicesConversionType)] = [
        ("detailedClick", detailedClick, true, .click, .download),
        ("standardClick", standardClick, false, .click, .download),
        ("detailedImpression", detailedImpression, true, .impression, .download),
        ("standardImpression", standardImpression, false, .impression, .download),
        ("detailedPreOrderClick", detailedPreOrderClick, true, .click, .preOrder),
        ("standardPreOrderClick", standardPreOrderClick, false, .click, .preOrder),
        ("detailedPreOrderImpression", detailedPreOrderImpression, true, .impression, .preOrder),
        ("standardPreOrderImpression", standardPreOrderImpression, false, .impression, .preOrder),
    ]

    /// The Apple AdServices attribution API's sample token exactly as printed (with the space that
    /// line wrapping left in it).
    static let printedToken = "G9i5hC8lQJeG0fmS+MFyc11/025oJEjtpZ+rs4AUkDEJh52fT8RrjwIR/ h+2J0pXz4MRdmtcemL8WTTHfNN"
}
