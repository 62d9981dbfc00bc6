import Foundation
import LedgerProviders
import Testing

/// Google App Conversion Tracking API, "Conversion Tracking Response".
struct GoogleResponseTests {
    func parse(_ text: String) throws(ProviderError) -> GoogleConversionResponse {
        try GoogleConversionResponse.parse(Data(text.utf8))
    }

    @Test("Google App Conversion Tracking API sample: \"when the request contained errors\" → errors [INVALID_CURRENCY_CODE], not attributed")
    func errorSample() throws {
        let answer = try parse(GoogleResponseSamples.errorSample)
        #expect(answer.adEvents.isEmpty)
        #expect(answer.errors == [GoogleErrorCode("INVALID_CURRENCY_CODE")])
        #expect(answer.errors.first?.known == .invalidCurrencyCode)
        #expect(answer.attributed == false)
    }

    @Test("Google App Conversion Tracking API sample: negative response → no events, no errors, attributed false")
    func negativeSample() throws {
        #expect(try parse(GoogleResponseSamples.negativeSample) == GoogleConversionResponse(attributed: false))
    }

    @Test("Google App Conversion Tracking API sample: UAC → every field read, nulls kept as nil (no ad_group_id/creative_id for UAC)")
    func uacSample() throws {
        let answer = try parse(GoogleResponseSamples.uacSample)
        #expect(answer.attributed)
        let event = try #require(answer.adEvents.first)
        #expect(answer.adEvents.count == 1)
        #expect(event.adEventID == "Q2owS0VRancwZHk0QlJDdXVMX2U1TQ")
        #expect(event.conversionMetric == "conversion")
        #expect(event.interactionType == nil)
        #expect(event.campaignType == "UAC")
        #expect(event.knownCampaignType == .uac)
        #expect(event.campaignID == 123_456_789)
        #expect(event.campaignName == "My App Campaign")
        #expect(event.adType == "ClickToDownload")
        #expect(event.externalCustomerID == 123_456_789)
        #expect(event.location == 21144)
        #expect(event.networkType == "Search")
        #expect(event.knownNetworkType == .search)
        #expect(event.networkSubtype == "GoogleSearch")
        #expect(event.videoID == nil)
        #expect(event.keyword == nil)
        #expect(event.matchType == nil)
        #expect(event.placement == nil)
        #expect(event.adGroupID == nil)
        #expect(event.creativeID == nil)
        // "in seconds with up to microseconds precision", read exactly (no Double rounding).
        #expect(event.timestamp == (try GoogleTimestamp(text: "1432681913.123456")))
        #expect(event.timestamp.microsecondsSince1970 == 1_432_681_913_123_456)
        #expect(answer.lastClick == event)
    }

    @Test("Google App Conversion Tracking API sample: Search → keyword \"+space +birds\", match_type b, ad group and creative")
    func searchSample() throws {
        let event = try #require(try parse(GoogleResponseSamples.searchSample).adEvents.first)
        #expect(event.campaignType == "Search")
        #expect(event.keyword == "+space +birds")
        #expect(event.matchType == "b")
        #expect(event.placement == nil)
        #expect(event.videoID == nil)
        #expect(event.adGroupID == 123_456_789)
        #expect(event.creativeID == 123_456_789)
    }

    @Test("Google App Conversion Tracking API sample: Display → network Display / mGDN with a placement")
    func displaySample() throws {
        let event = try #require(try parse(GoogleResponseSamples.displaySample).adEvents.first)
        #expect(event.knownCampaignType == .display)
        #expect(event.knownNetworkType == .display)
        #expect(event.networkSubtype == "mGDN")
        #expect(event.placement == "mobile-app::2-343200656")
        #expect(event.keyword == nil)
    }

    @Test("Google App Conversion Tracking API sample: YouTube → campaign_type Video, network YouTube / YouTubeVideos with a video_id")
    func youTubeSample() throws {
        let event = try #require(try parse(GoogleResponseSamples.youTubeSample).adEvents.first)
        #expect(event.knownCampaignType == .video)
        #expect(event.knownNetworkType == .youTube)
        #expect(event.networkSubtype == "YouTubeVideos")
        #expect(event.videoID == "dQw4w9WgXcQ")
    }

    @Test("parsed answers round-trip through Codable under Google's field names, nulls included")
    func codable() throws {
        let answer = try parse(GoogleResponseSamples.uacSample)
        let data = try JSONEncoder().encode(answer)
        let text = data.gaText
        #expect(text.contains(#""ad_event_id":"Q2owS0VRancwZHk0QlJDdXVMX2U1TQ""#))
        #expect(text.contains(#""interaction_type":null"#))
        #expect(text.contains(#""timestamp":1432681913.123456"#))
        #expect(try JSONDecoder().decode(GoogleConversionResponse.self, from: data) == answer)
    }

    @Test("fact beyond the providers' documents: error codes match case-insensitively; unknown codes kept as-is")
    func errorCodes() throws {
        let answer = try parse(#"{"ad_events":[],"errors":["timestamp_invalid","TIMESTAMP_INVALID","Some_New_Code"],"attributed":false}"#)
        #expect(answer.errors.map(\.raw) == ["timestamp_invalid", "TIMESTAMP_INVALID", "Some_New_Code"])
        #expect(answer.errors[0].matches(.timestampInvalid))
        #expect(answer.errors[0] == answer.errors[1])
        #expect(answer.errors[2].known == nil)
        #expect(answer.errors[2].canonical == "SOME_NEW_CODE")
        // The document's own example spelling.
        #expect(GoogleErrorCode("invalid_timestamp").known == .invalidTimestamp)
    }

    @Test("tolerant: unknown keys ignored, absent arrays read as empty; last click is the latest timestamp")
    func tolerance() throws {
        let answer = try parse(#"{"attributed":false,"new_field":{"x":[1,2]}}"#)
        #expect(answer == GoogleConversionResponse(attributed: false))
        let two = try parse(
            GoogleResponseSamples.searchSample.replacingOccurrences(
                of: #""ad_events": [{"#,
                with: #""ad_events": [{"ad_event_id":"late","conversion_metric":"conversion","timestamp":1432681999,"campaign_type":"UAC","campaign_id":1,"campaign_name":"n","ad_type":"Unknown","external_customer_id":2,"location":3,"network_type":"Display","extra":true}, {"#))
        #expect(two.adEvents.count == 2)
        #expect(two.lastClick?.adEventID == "late")
        #expect(two.adEvents[0].networkSubtype == nil)
    }

    @Test("malformed answers are typed errors naming the JSON path and the rule")
    func malformed() {
        gaExpectError(field: "$", rule: "not_json") { try parse("") }
        gaExpectError(field: "$", rule: "not_json") { try parse(#"{"attributed": tru}"#) }
        gaExpectError(field: "$", rule: "wrong_type") { try parse("[]") }
        gaExpectError(field: "attributed", rule: "missing") { try parse(#"{"ad_events":[],"errors":[]}"#) }
        gaExpectError(field: "attributed", rule: "wrong_type") { try parse(#"{"attributed":"true"}"#) }
        gaExpectError(field: "errors[0]", rule: "wrong_type") { try parse(#"{"errors":[1],"attributed":false}"#) }
        gaExpectError(field: "ad_events", rule: "wrong_type") { try parse(#"{"ad_events":{},"attributed":false}"#) }
        gaExpectError(field: "ad_events[0]", rule: "wrong_type") { try parse(#"{"ad_events":[1],"attributed":true}"#) }
        gaExpectError(field: "ad_events[0].ad_event_id", rule: "missing") { try parse(#"{"ad_events":[{}],"attributed":true}"#) }
        let base = GoogleResponseSamples.uacSample
        gaExpectError(field: "ad_events[0].campaign_id", rule: "integer_out_of_range") {
            try parse(base.replacingOccurrences(of: #""campaign_id": 123456789"#, with: #""campaign_id": 99999999999999999999999"#))
        }
        gaExpectError(field: "ad_events[0].campaign_id", rule: "integer") {
            try parse(base.replacingOccurrences(of: #""campaign_id": 123456789"#, with: #""campaign_id": 1e400"#))
        }
        gaExpectError(field: "ad_events[0].timestamp", rule: "unix_seconds") {
            try parse(base.replacingOccurrences(of: #""timestamp": 1432681913.123456"#, with: #""timestamp": 1e400"#))
        }
        gaExpectError(field: "ad_events[0].timestamp", rule: "wrong_type") {
            try parse(base.replacingOccurrences(of: #""timestamp": 1432681913.123456"#, with: #""timestamp": "1432681913""#))
        }
        gaExpectError(field: "$", rule: "too_deep") { try parse(String(repeating: "[", count: 10_000)) }
    }

    @Test("timestamps in answers: an exponent is resolved exactly, extra decimals round to the microsecond")
    func lenientTimestamps() throws {
        let base = GoogleResponseSamples.uacSample
        let exponent = try parse(base.replacingOccurrences(of: "1432681913.123456", with: "1.432681913123456E9"))
        #expect(exponent.adEvents[0].timestamp.text == "1432681913.123456")
        let long = try parse(base.replacingOccurrences(of: "1432681913.123456", with: "1432681913.1234567"))
        #expect(long.adEvents[0].timestamp.text == "1432681913.123457")
    }
}
