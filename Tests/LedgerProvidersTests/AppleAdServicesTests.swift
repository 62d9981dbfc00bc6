import Foundation
import LedgerProviders
import Testing

/// Apple AdServices attribution API: AdServices token, request and attribution payloads.
struct AppleAdServicesTests {
    static let sampleToken = AppleAdServicesSamples.printedToken.replacingOccurrences(of: " ", with: "")

    @Test("Apple AdServices attribution API: the token is \"a Base64 encoded string\" — empty, non-Base64 and the printed sample's wrapped space refused")
    func tokenChecks() throws {
        gaExpectError(field: "token", rule: "required") { try AdServicesToken("") }
        gaExpectError(field: "token", rule: "required") { try AdServicesToken(" \n") }
        gaExpectError(field: "token", rule: "base64") { try AdServicesToken(AppleAdServicesSamples.printedToken) }
        for bad in ["abcde", "ab=c", "a===", "====", "ab-_cd==", "abc!", "éabc"] {
            gaExpectError(field: "token", rule: "base64") { try AdServicesToken(bad) }
        }
        gaExpectError(field: "token", rule: "max_length") { try AdServicesToken(String(repeating: "A", count: 16_388)) }
        #expect(try AdServicesToken(Self.sampleToken).text == Self.sampleToken)
        #expect(try AdServicesToken("QUJD").text == "QUJD")
        #expect(try AdServicesToken("QUI=\n").text == "QUI=")
        #expect(try AdServicesToken("QQ==").text == "QQ==")
    }

    @Test("Apple AdServices attribution API: POST https://api-adservices.apple.com/api/v1/, Content-Type text/plain, the single token as body")
    func request() throws {
        let token = try AdServicesToken(Self.sampleToken)
        let request = AdServicesRequestBuilder.attributionRequest(token: token)
        #expect(request.provider == .appleAdServices)
        #expect(request.method == .post)
        #expect(request.urlString == "https://api-adservices.apple.com/api/v1/")
        #expect(request.query.isEmpty)
        #expect(request.headers == [Header("Content-Type", "text/plain")])
        #expect(request.body == Data(Self.sampleToken.utf8))
    }

    @Test("endpoint override: loopback fake over http allowed, remote http refused")
    func endpoint() throws {
        let fake = try AdServicesEndpoint(scheme: "http", host: "localhost", port: 9000)
        let request = AdServicesRequestBuilder.attributionRequest(token: try AdServicesToken("QUJD"), endpoint: fake)
        #expect(request.urlString == "http://localhost:9000/api/v1/")
        gaExpectError(field: "scheme", rule: "https_only") { try AdServicesEndpoint(scheme: "http", host: "api-adservices.apple.com") }
        #expect(throws: (any Error).self) {
            try JSONDecoder().decode(AdServicesEndpoint.self, from: Data(#"{"scheme":"http","host":"example.com"}"#.utf8))
        }
    }

    @Test("Apple AdServices attribution API: all eight payload samples parse with the right values", arguments: AppleAdServicesSamples.all.indices)
    func payloadSamples(index: Int) throws {
        let sample = AppleAdServicesSamples.all[index]
        let payload = try AdServicesAttribution.parse(Data(sample.json.utf8))
        #expect(payload.attribution)
        #expect(payload.orgId == 40_669_820)
        #expect(payload.campaignId == 542_370_539)
        #expect(payload.adGroupId == 542_317_095)
        #expect(payload.keywordId == 87_675_432)
        #expect(payload.adId == 542_317_136)
        #expect(payload.countryOrRegion == "US")
        #expect(payload.claimType == sample.claim)
        #expect(payload.conversionType == sample.conversion)
        #expect(payload.kind == (sample.detailed ? .detailed : .standard))
        // "clickDate … only appears in the detailed attribution response payload"; likewise impressionDate.
        let year2024 = sample.conversion == .download
        let expected = Date(timeIntervalSince1970: year2024 ? 1_728_407_820 : 1_586_366_220)  // …-10-08/04-08T17:17Z
        #expect(payload.clickDate == (sample.detailed && sample.claim == .click ? expected : nil))
        #expect(payload.impressionDate == (sample.detailed && sample.claim == .impression ? expected : nil))
        // Stored under Apple's names, dates as ISO-8601 text; round-trips.
        let data = try JSONEncoder().encode(payload)
        #expect(data.gaText.contains(#""campaignId":542370539"#))
        if sample.detailed { #expect(data.gaText.contains(year2024 ? "2024-10-08T17:17:00Z" : "2020-04-08T17:17:00Z")) }
        #expect(try JSONDecoder().decode(AdServicesAttribution.self, from: data) == payload)
    }

    @Test("Apple AdServices attribution API: 200 with attribution=false is an acknowledged non-match")
    func notAttributed() throws {
        let payload = try AdServicesAttribution.parse(Data(#"{"attribution":false}"#.utf8))
        #expect(payload == AdServicesAttribution(attribution: false))
        #expect(payload.kind == .standard)
    }

    @Test("Apple AdServices attribution API: keywordId absent with search match, adId absent before iOS 15.2; conversionType \"preorder\" spelling")
    func optionalFields() throws {
        let text = #"""
            {"attribution": true, "orgId": 40669820, "campaignId": 542370539, "conversionType": "preorder",
             "claimType": "Click", "adGroupId": 542317095, "countryOrRegion": "US"}
            """#
        let payload = try AdServicesAttribution.parse(Data(text.utf8))
        #expect(payload.keywordId == nil)
        #expect(payload.adId == nil)
        #expect(payload.conversionType == .preOrder)
        let redownload = try AdServicesAttribution.parse(Data(AppleAdServicesSamples.standardClick.replacingOccurrences(of: "Download", with: "Redownload").utf8))
        #expect(redownload.conversionType == .redownload)
        let legacy = try AdServicesAttribution.parse(Data(AppleAdServicesSamples.detailedClick.replacingOccurrences(of: #""claimType": "Click","#, with: "").utf8))
        #expect(legacy.claimType == nil)
        #expect(legacy.kind == .detailed)
        let seconds = try AdServicesAttribution.parse(Data(AppleAdServicesSamples.detailedClick.replacingOccurrences(of: "17:17Z", with: "17:17:30.5+02:00").utf8))
        #expect(seconds.clickDate == Date(timeIntervalSince1970: 1_728_407_820 + 30.5 - 7_200))
    }

    // Apple AdServices attribution API, "Attribution payload descriptions": no field but
    // `attribution` is marked required; a payload without the others still attributes.
    @Test func anAttributedPayloadNeedsOnlyItsAttributionField() throws {
        let sparse = try AdServicesAttribution.parse(Data(#"{"attribution":true}"#.utf8))
        #expect(sparse == AdServicesAttribution(attribution: true))
        let base = AppleAdServicesSamples.detailedClick
        let withoutOrg = try AdServicesAttribution.parse(Data(base.replacingOccurrences(of: #""orgId": 40669820,"#, with: "").utf8))
        #expect(withoutOrg.orgId == nil && withoutOrg.campaignId == 542370539)
        let withoutCountry = try AdServicesAttribution.parse(
            Data(base.replacingOccurrences(of: #""countryOrRegion": "US","#, with: "").replacingOccurrences(of: #""conversionType": "Download","#, with: "").utf8))
        #expect(withoutCountry.countryOrRegion == nil && withoutCountry.conversionType == nil && withoutCountry.clickDate != nil)
    }

    @Test("malformed payloads are typed errors naming the field and rule")
    func malformedPayloads() {
        func parse(_ text: String) throws(ProviderError) -> AdServicesAttribution { try AdServicesAttribution.parse(Data(text.utf8)) }
        let base = AppleAdServicesSamples.detailedClick
        gaExpectError(field: "attribution", rule: "missing") { try parse("{}") }
        gaExpectError(field: "attribution", rule: "wrong_type") { try parse(#"{"attribution":"true"}"#) }
        gaExpectError(field: "orgId", rule: "wrong_type") { try parse(base.replacingOccurrences(of: "40669820", with: #""40669820""#)) }
        gaExpectError(field: "orgId", rule: "integer") { try parse(base.replacingOccurrences(of: "40669820", with: "40669820.5")) }
        gaExpectError(field: "orgId", rule: "integer_out_of_range") { try parse(base.replacingOccurrences(of: "40669820", with: "99999999999999999999999")) }
        gaExpectError(field: "clickDate", rule: "iso8601") { try parse(base.replacingOccurrences(of: "2024-10-08T17:17Z", with: "yesterday")) }
        gaExpectError(field: "clickDate", rule: "iso8601") { try parse(base.replacingOccurrences(of: "2024-10-08T17:17Z", with: "2024-10-08T17:17")) }
        gaExpectError(field: "clickDate", rule: "iso8601") { try parse(base.replacingOccurrences(of: "2024-10-08T17:17Z", with: "2024-02-30T17:17Z")) }
        gaExpectError(field: "$", rule: "not_json") { try parse(String(AppleAdServicesSamples.standardPreOrderImpression.dropLast(2))) }
        gaExpectError(field: "$", rule: "too_deep") { try parse(String(repeating: #"{"a":"#, count: 10_000)) }
    }
}
