import Foundation
import LedgerDomain
import Testing

@testable import LedgerFolds

/// Touches from the providers' own example answers.
@Suite struct TouchExtractionTests {
    /// Google App Conversion Tracking API: "An example of an affirmative conversion tracking
    /// response for a Universal App Campaign"; the ad event's `timestamp` is the touch time ("use
    /// it for last-click").
    @Test func googleAffirmativeUACExampleGivesOneClickAtItsTimestamp() throws {
        let body = Data("""
            {"ad_events": [{"ad_event_id": "Q2owS0VRancwZHk0QlJDdXVMX2U1TQ", "conversion_metric": "conversion",
              "interaction_type": null, "campaign_type": "UAC", "campaign_id": 123456789, "campaign_name": "My App Campaign",
              "ad_type": "ClickToDownload", "external_customer_id": 123456789, "location": 21144, "network_type": "Search",
              "network_subtype": "GoogleSearch", "video_id": null, "keyword": null, "match_type": null, "placement": null,
              "ad_group_id": null, "creative_id": null, "timestamp": 1432681913.123456}],
             "errors": [], "attributed": true}
            """.utf8)
        let touches = TouchExtraction.google(body, position: 7)
        #expect(touches.count == 1)
        let touch = try #require(touches.first).touch
        #expect(touch.source == .google && touch.interaction == .click)
        #expect(abs(touch.time.timeIntervalSince1970 - 1432681913.123456) < 0.000_001)
        #expect(touch.adEventID == "Q2owS0VRancwZHk0QlJDdXVMX2U1TQ")
        #expect(touch.campaignID == "123456789")
        #expect(touches.first?.position == 7)
    }

    /// Google App Conversion Tracking API: a non-affirmative answer (`ad_events` empty) offers
    /// nothing.
    @Test func googleNegativeAnswerOffersNothing() {
        #expect(TouchExtraction.google(Data(#"{"ad_events": [], "errors": [], "attributed": false}"#.utf8), position: 1).isEmpty)
    }

    /// The Apple AdServices attribution API's detailed tap-through payload: a click at `clickDate`.
    @Test func appleDetailedPayloadIsAClickAtClickDate() throws {
        let body = Data("""
            {"attribution": true, "orgId": 40669820, "campaignId": 542370539, "conversionType": "Download",
             "clickDate": "2024-10-08T17:17Z", "claimType": "Click", "adGroupId": 542317095, "countryOrRegion": "US",
             "keywordId": 87675432, "adId": 542317136}
            """.utf8)
        let candidate = try #require(TouchExtraction.appleAdServices(body, position: 3).first)
        #expect(candidate.touch.interaction == .click)
        #expect(candidate.touch.time == ISO8601DateFormatter().date(from: "2024-10-08T17:17:00Z"))
        #expect(candidate.touch.campaignID == "542370539" && candidate.touch.keywordID == "87675432")
        #expect(!candidate.isPreOrder)
    }

    /// The Apple AdServices attribution API's standard payload has no date: the touch is undated
    /// (placed by the rule).
    @Test func appleStandardPayloadIsUndated() throws {
        let body = Data("""
            {"attribution": true, "orgId": 40669820, "campaignId": 542370539, "conversionType": "Download",
             "claimType": "Click", "adGroupId": 542317095, "countryOrRegion": "US", "keywordId": 87675432, "adId": 542317136}
            """.utf8)
        let candidate = try #require(TouchExtraction.appleAdServices(body, position: 3).first)
        #expect(candidate.undated)
        #expect(candidate.touch.interaction == .click)
    }

    /// `attribution=false` ("acknowledged, no match") offers nothing; an Impression claim is a view.
    @Test func appleFalseOffersNothingAndImpressionsAreViews() throws {
        #expect(TouchExtraction.appleAdServices(Data(#"{"attribution": false}"#.utf8), position: 1).isEmpty)
        let view = Data("""
            {"attribution": true, "orgId": 1, "campaignId": 2, "conversionType": "PreOrder", "claimType": "Impression",
             "impressionDate": "2024-10-08T17:17Z", "adGroupId": 3, "countryOrRegion": "US", "adId": 4}
            """.utf8)
        let candidate = try #require(TouchExtraction.appleAdServices(view, position: 1).first)
        #expect(candidate.touch.interaction == .view)
        #expect(candidate.isPreOrder)
    }

    /// The Branch v1/open server-to-server guide's example answer: `+clicked_branch_link` true at
    /// `+click_timestamp`.
    @Test func branchClickedLinkExampleIsAClick() throws {
        let data = #"{"+click_timestamp": 1503684563, "+clicked_branch_link": true, "+is_first_session": false, "~campaign": "new launch", "~channel": "facebook"}"#
        let body = try JSONSerialization.data(withJSONObject: [
            "randomized_device_token": "823600311503935224", "link": "https://example.app.link/X7OsnWv9TF",
            "session_id": "429691081177874743", "data": data,
        ])
        let candidate = try #require(TouchExtraction.branch(body, position: 9).first)
        #expect(candidate.touch.source == .branch)
        #expect(candidate.touch.time == Date(timeIntervalSince1970: 1503684563))
        #expect(candidate.touch.campaignName == "new launch")
        let notClicked = try JSONSerialization.data(withJSONObject: [
            "session_id": "1", "data": #"{"+clicked_branch_link":false,"+is_first_session":false}"#,
        ])
        #expect(TouchExtraction.branch(notClicked, position: 9).isEmpty)
    }

    /// Apple Search Ads Attribution API plus the field facts: iAd dictionaries arrive wrapped, with
    /// string values; a true `iad-attribution` with a click date is a tap; a false one offers
    /// nothing.
    @Test func iAdWrappedDictionary() throws {
        let details: JSONValue = .object(["Version3.1": .object([
            "iad-attribution": .string("true"), "iad-click-date": .string("2020-06-29T18:50:16Z"),
            "iad-campaign-id": .string("1234567890"), "iad-campaign-name": .string("CampaignName"),
        ])])
        let candidate = try #require(TouchExtraction.iAd(details, position: 4).first)
        #expect(candidate.touch.source == .appleIAd)
        #expect(candidate.touch.time == ISO8601DateFormatter().date(from: "2020-06-29T18:50:16Z"))
        let declined: JSONValue = .object(["Version3.1": .object(["iad-attribution": .string("false")])])
        #expect(TouchExtraction.iAd(declined, position: 4).isEmpty)
    }
}
