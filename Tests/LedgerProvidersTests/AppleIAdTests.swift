import Foundation
import LedgerProviders
import Testing

/// Apple Search Ads Attribution API: the legacy iAd `attributionDetails` dictionary and
/// `ADClientError`.
struct AppleIAdTests {
    /// The Apple Search Ads Attribution API announces "Sample Returned Data … the structure that
    /// you can expect to receive" but the document ends right after that heading. This is Apple's
    /// published sample structure (the `Version3.1` test payload), with values as strings as apps
    /// serialize the NSDictionary — the shape the provider-rules digest's facts beyond the
    /// providers' documents describe (`"true"`, `"2020-06-29T18:50:16Z"`).
    static let sample = #"""
        {
          "Version3.1": {
            "iad-attribution": "true",
            "iad-org-name": "OrgName",
            "iad-org-id": "1234567890",
            "iad-campaign-id": "1234567890",
            "iad-campaign-name": "CampaignName",
            "iad-purchase-date": "2020-06-29T18:50:16Z",
            "iad-conversion-date": "2020-06-29T18:50:16Z",
            "iad-conversion-type": "Download",
            "iad-click-date": "2020-06-29T18:50:16Z",
            "iad-adgroup-id": "1234567890",
            "iad-adgroup-name": "AdGroupName",
            "iad-country-or-region": "US",
            "iad-keyword": "Keyword",
            "iad-keyword-id": "12323222",
            "iad-keyword-matchtype": "Broad",
            "iad-creativeset-id": "1234567890",
            "iad-creativeset-name": "CreativeSetName",
            "iad-lineitem-id": "1234567890",
            "iad-lineitem-name": "LineName"
          }
        }
        """#

    @Test("Apple Search Ads Attribution API \"Returned Values\": the sample dictionary parses, version wrapper unwrapped, raw kept")
    func sampleParses() throws {
        let details = try IAdAttributionDetails.parse(Data(Self.sample.utf8))
        #expect(details.version == "Version3.1")
        #expect(details.rawJSON == Self.sample)
        #expect(details.attribution == true)
        let date = Date(timeIntervalSince1970: 1_593_456_616)  // 2020-06-29T18:50:16Z
        #expect(details.clickDate == date)
        #expect(details.conversionDate == date)
        #expect(details.purchaseDate == date)
        #expect(details.conversionType == "Download")
        #expect(details.keywordMatchType == "Broad")
        #expect(details.orgID == "1234567890")
        #expect(details.orgName == "OrgName")
        #expect(details.campaignID == "1234567890")
        #expect(details.campaignName == "CampaignName")
        #expect(details.adGroupID == "1234567890")
        #expect(details.adGroupName == "AdGroupName")
        #expect(details.keywordID == "12323222")
        #expect(details.keyword == "Keyword")
        #expect(details.creativeSetID == "1234567890")
        #expect(details.creativeSetName == "CreativeSetName")
        #expect(details.lineItemID == "1234567890")
        #expect(details.lineItemName == "LineName")
        #expect(details.countryOrRegion == "US")
        #expect(details.otherFields.isEmpty)
    }

    @Test("Apple Search Ads Attribution API: \"pass the entire data object to your server\" — unknown keys kept, native JSON types accepted, no wrapper needed")
    func unknownShape() throws {
        let text = #"{"iad-attribution": true, "iad-campaign-id": 542370539, "iad-conversion-type": "redownload", "iad-ad-id": 7, "iad-future": {"x": [1, "y"]}}"#
        let details = try IAdAttributionDetails.parse(Data(text.utf8))
        #expect(details.version == nil)
        #expect(details.attribution == true)
        #expect(details.campaignID == "542370539")
        #expect(details.conversionType == "Redownload")
        #expect(details.otherFields == ["iad-ad-id": "7", "iad-future": #"{"x":[1,"y"]}"#])
        #expect(details.clickDate == nil)
    }

    @Test("fact beyond the providers' documents: since 2023 answers are iad-attribution false; \"false\", false, 0 all read as false")
    func attributionFalse() throws {
        for value in [#""false""#, "false", "0", #""FALSE""#] {
            let details = try IAdAttributionDetails.parse(Data(#"{"Version4.0": {"iad-attribution": \#(value)}}"#.utf8))
            #expect(details.attribution == false)
            #expect(details.version == "Version4.0")
        }
    }

    @Test("stored under the iad- names; decoding re-reads the raw dictionary")
    func codable() throws {
        let details = try IAdAttributionDetails.parse(Data(Self.sample.utf8))
        let data = try JSONEncoder().encode(details)
        #expect(data.gaText.contains(#""iad-click-date":"2020-06-29T18:50:16Z""#))
        #expect(data.gaText.contains(#""iad-attribution":true"#))
        #expect(try JSONDecoder().decode(IAdAttributionDetails.self, from: data) == details)
    }

    @Test("unreadable known values and odd shapes are typed errors naming the key and rule")
    func malformed() {
        func parse(_ text: String) throws(ProviderError) -> IAdAttributionDetails { try IAdAttributionDetails.parse(Data(text.utf8)) }
        gaExpectError(field: "iad-click-date", rule: "iso8601") { try parse(#"{"iad-click-date": "29/06/2020"}"#) }
        gaExpectError(field: "iad-click-date", rule: "wrong_type") { try parse(#"{"iad-click-date": 1593456616}"#) }
        gaExpectError(field: "iad-attribution", rule: "boolean") { try parse(#"{"iad-attribution": "maybe"}"#) }
        gaExpectError(field: "iad-campaign-id", rule: "wrong_type") { try parse(#"{"iad-campaign-id": [1]}"#) }
        gaExpectError(field: "$", rule: "wrong_type") { try parse(#"["iad-attribution"]"#) }
        gaExpectError(field: "$", rule: "one_version_wrapper") { try parse(#"{"Version3.1": {}, "Version4.0": {}}"#) }
        gaExpectError(field: "$", rule: "not_json") { try parse(#"{"Version3.1" = {"iad-attribution" = true;};}"#) }  // NSDictionary description is not JSON
    }

    @Test("Apple Search Ads Attribution API error codes: 0 ADClientErrorUnknown → retry in a few seconds; 1 ADClientErrorLimitAdTracking → never any data")
    func clientErrors() throws {
        let now = Date(timeIntervalSince1970: 1_600_000_000)
        #expect(IAdClientError(code: 0) == .unknown)
        #expect(IAdClientError(code: 0).disposition(now: now) == .retry(notBefore: now.addingTimeInterval(5), rule: "iad_unknown_retry"))
        #expect(IAdClientError(code: 1) == .limitAdTracking)
        guard case .failed(let rule, _) = IAdClientError(code: 1).disposition(now: now) else {
            Issue.record("limit ad tracking is terminal")
            return
        }
        #expect(rule == "iad_limit_ad_tracking")
        #expect(IAdClientError(code: 42).disposition(now: now) == .retry(notBefore: now.addingTimeInterval(5), rule: "iad_other_error_retry"))
        #expect(try JSONDecoder().decode(IAdClientError.self, from: JSONEncoder().encode(IAdClientError.limitAdTracking)) == .limitAdTracking)
    }
}
