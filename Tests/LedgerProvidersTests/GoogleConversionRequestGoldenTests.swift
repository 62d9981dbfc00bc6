import Foundation
import LedgerProviders
import LedgerTestKit
import Testing

/// The Google App Conversion Tracking API's sample requests, copied verbatim, reproduced exactly.
struct GoogleConversionRequestGoldenTests {
    // Google App Conversion Tracking API, "Sample Request": "a valid conversion tracking request
    // with a non-custom event type and revenue information"
    static let purchaseSample = """
        POST /pagead/conversion/app/1.0
               ?dev_token=Z_eErE4DkvcKjDM1OVE4c4
               &link_id=31FF8D67E5BB5DD5029DCC2734C2F884
               &app_event_type=in_app_purchase
               &rdid=0F7AB11F-DA50-498E-B225-21AC1977A85D
               &id_type=idfa
               &lat=0
               &app_version=1.2.4
               &os_version=9.3.2
               &sdk_version=1.9.5r6
               &timestamp=1432681913.123456
               &value=1.99
               &currency_code=USD
        Host: www.googleadservices.com
        User-Agent: MyAnalyticsCompany/1.0.0 (iOS 10.0.2; en_US; iPhone9,1; Build/13D15; Proxy)
        X-Forwarded-For: 216.58.194.174
        Content-Type: application/json; charset=utf-8
        {"app_event_data":{"item_id":["Crayons","Markers"]}}
        """

    // Google App Conversion Tracking API: "An example of a valid session start request"
    static let sessionStartSample = """
        POST /pagead/conversion/app/1.0
               ?dev_token=Z_eErE4DkvcKjDM1OVE4c4
               &link_id=31FF8D67E5BB5DD5029DCC2734C2F884
               &app_event_type=session_start
               &rdid=0F7AB11F-DA50-498E-B225-21AC1977A85D
               &id_type=idfa
               &lat=0
               &app_version=1.2.4
               &os_version=9.3.2
               &sdk_version=1.9.5r6
               &timestamp=1432681913.123456
        Host: www.googleadservices.com
        User-Agent: MyAnalyticsCompany/1.0.0 (iOS 10.0.2; en_US; iPhone9,1; Build/13D15; Proxy)
        X-Forwarded-For: 216.58.194.174
        Content-Type: application/json; charset=utf-8
        """

    // Google App Conversion Tracking API: "a valid session start reattribution request for a
    // session which began from the deep link example://product/123?gclid=Cj0KEQjw0dy4BRCuuL_e5M"
    static let reattributionSample = """
        POST /pagead/conversion/app/1.0
               ?dev_token=Z_eErE4DkvcKjDM1OVE4c4
               &link_id=31FF8D67E5BB5DD5029DCC2734C2F884
               &app_event_type=session_start
               &rdid=0F7AB11F-DA50-498E-B225-21AC1977A85D
               &id_type=idfa
               &lat=0
               &app_version=1.2.4
               &os_version=9.3.2
               &sdk_version=1.9.5r6
               &timestamp=1432681913.123456
               &gclid=Cj0KEQjw0dy4BRCuuL_e5M
        Host: www.googleadservices.com
        User-Agent: MyAnalyticsCompany/1.0.0 (iOS 10.0.2; en_US; iPhone9,1; Build/13D15; Proxy)
        X-Forwarded-For: 216.58.194.174
        Content-Type: application/json; charset=utf-8
        """

    // Google App Conversion Tracking API, "Cross-network Attribution Request": "An example of a
    // valid cross-network attribution request"
    static let crossNetworkSample = """
        POST /pagead/conversion/app/1.0/cross_network
               ?dev_token=Z_eErE4DkvcKjDM1OVE4c4
               &link_id=31FF8D67E5BB5DD5029DCC2734C2F884
               &app_event_type=custom
               &app_event_name=level_achieved
               &rdid=0F7AB11F-DA50-498E-B225-21AC1977A85D
               &id_type=idfa
               &lat=0
               &app_version=1.2.4
               &os_version=9.3.2
               &sdk_version=1.9.5r6
               &timestamp=1432681913.123456
               &value=1.99
               &currency_code=USD
               &ad_event_id=Q2owS0VRancwZHk0QlJDdXVMX2U1TQ
               &attributed=1
        Host: www.googleadservices.com
        User-Agent: MyAnalyticsCompany/1.0.0 (iOS 10.0.2; en_US; iPhone9,1; Build/13D15; Proxy)
        X-Forwarded-For: 216.58.194.174
        Content-Type: application/json; charset=utf-8
        """

    /// Method, path, host, every query parameter in order, the three headers and the body.
    func expectMatches(_ request: ProviderRequest, _ sampleText: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let sample = GASampleRequest(sampleText)
        #expect(request.method.rawValue == sample.method, sourceLocation: sourceLocation)
        #expect(request.path == sample.path, sourceLocation: sourceLocation)
        #expect(request.scheme == "https", sourceLocation: sourceLocation)
        #expect(request.host == sample.headers.first { $0.name == "Host" }?.value, sourceLocation: sourceLocation)
        #expect(request.port == nil, sourceLocation: sourceLocation)
        #expect(request.query == sample.query, sourceLocation: sourceLocation)
        #expect(request.encodedQuery == sample.encodedQuery, sourceLocation: sourceLocation)
        #expect(
            request.urlString == "https://www.googleadservices.com\(sample.path)?\(sample.encodedQuery)",
            sourceLocation: sourceLocation)
        for name in ["User-Agent", "X-Forwarded-For", "Content-Type"] {
            let expected = sample.headers.first { $0.name == name }?.value
            #expect(expected != nil, sourceLocation: sourceLocation)
            #expect(request.headerValue(name) == expected, "\(name)", sourceLocation: sourceLocation)
        }
        #expect(request.body?.gaText == sample.body, sourceLocation: sourceLocation)
        // Google App Conversion Tracking API: "if the request body is empty … explicitly set the
        // Content-Length: 0 header"
        #expect(request.headerValue("Content-Length") == (sample.body == nil ? "0" : nil), sourceLocation: sourceLocation)
    }

    @Test("Google App Conversion Tracking API \"Sample Request\": in_app_purchase with value, currency and app_event_data body, exactly")
    func purchaseSample() throws {
        let event = try GASamples.event(
            .inAppPurchase, value: "1.99", currency: "USD",
            eventData: GoogleEventData(["item_id": .array([.string("Crayons"), .string("Markers")])]))
        let request = try GASamples.builder.conversionRequest(for: event)
        expectMatches(request, Self.purchaseSample)
        #expect(request.body == Data(#"{"app_event_data":{"item_id":["Crayons","Markers"]}}"#.utf8))
        #expect(request.headers.map(\.name) == ["User-Agent", "X-Forwarded-For", "Content-Type"])
    }

    @Test("Google App Conversion Tracking API: session_start sample, no body, Content-Length: 0")
    func sessionStartSample() throws {
        let request = try GASamples.builder.conversionRequest(for: GASamples.event(.sessionStart))
        expectMatches(request, Self.sessionStartSample)
        #expect(request.body == nil)
        #expect(request.headers.map(\.name) == ["User-Agent", "X-Forwarded-For", "Content-Type", "Content-Length"])
    }

    @Test("Google App Conversion Tracking API: session_start reattribution sample carries the deep link's gclid")
    func reattributionSample() throws {
        let event = try GASamples.event(.sessionStart, gclid: "Cj0KEQjw0dy4BRCuuL_e5M")
        expectMatches(try GASamples.builder.conversionRequest(for: event), Self.reattributionSample)
    }

    @Test("Google App Conversion Tracking API, \"Cross-network Attribution Request\": identical request on /cross_network plus ad_event_id and attributed")
    func crossNetworkSample() throws {
        let event = try GASamples.event(.custom, name: "level_achieved", value: "1.99", currency: "USD")
        let request = try GASamples.builder.crossNetworkRequest(
            for: event, adEventID: "Q2owS0VRancwZHk0QlJDdXVMX2U1TQ", attributed: true)
        expectMatches(request, Self.crossNetworkSample)

        // Derived from the built original: the same request, new path, two more parameters.
        let original = try GASamples.builder.conversionRequest(for: event)
        let derived = try GoogleConversionRequestBuilder.crossNetworkRequest(
            derivedFrom: original, adEventID: "Q2owS0VRancwZHk0QlJDdXVMX2U1TQ", attributed: true)
        #expect(derived == request)
        #expect(Array(derived.query.dropLast(2)) == original.query)
        #expect(derived.headers == original.headers)
    }

    @Test("Google App Conversion Tracking API: attributed is 0 when Google did not get the credit")
    func crossNetworkNotAttributed() throws {
        let request = try GASamples.builder.crossNetworkRequest(
            for: GASamples.event(.firstOpen), adEventID: "Q2owS0VRancwZHk0QlJDdXVMX2U1TQ", attributed: false)
        #expect(request.queryValue("attributed") == "0")
        #expect(request.path == "/pagead/conversion/app/1.0/cross_network")
    }

    @Test("dev_token is a credential: absent from redacted(), its urlString, headers and body")
    func redaction() throws {
        let event = try GASamples.event(
            .inAppPurchase, value: "1.99", currency: "USD", eventData: GoogleEventData(["note": .string("x")]))
        for request in [
            try GASamples.builder.conversionRequest(for: event),
            try GASamples.builder.crossNetworkRequest(for: event, adEventID: "abc", attributed: true),
        ] {
            #expect(request.sensitiveFields == [.query("dev_token")])
            #expect(request.urlString.contains("Z_eErE4DkvcKjDM1OVE4c4"))
            let stored = request.redacted()
            #expect(!stored.urlString.contains("Z_eErE4DkvcKjDM1OVE4c4"))
            #expect(stored.queryValue("dev_token") == ProviderRequest.redactedMarker)
            let storedBody = stored.body?.gaText ?? ""
            #expect(!storedBody.contains("Z_eErE4DkvcKjDM1OVE4c4"))
            #expect(!stored.headers.contains { $0.value.contains("Z_eErE4DkvcKjDM1OVE4c4") })
            let encoded = try JSONEncoder().encode(stored).gaText
            #expect(!encoded.contains("Z_eErE4DkvcKjDM1OVE4c4"))
        }
    }

    @Test("percent-encoding: a custom event name with a space and a case-sensitive gbraid are sent encoded")
    func percentEncoding() throws {
        var event = try GASamples.event(.custom, name: "Level Achieved")
        event.gbraid = "0AAAAAoO+/Ab_cD"
        let request = try GASamples.builder.conversionRequest(for: event)
        #expect(request.urlString.contains("&app_event_name=Level%20Achieved&"))
        #expect(request.urlString.hasSuffix("&gbraid=0AAAAAoO%2B%2FAb_cD"))
        #expect(request.queryValue("gbraid") == "0AAAAAoO+/Ab_cD")
    }

    @Test("Fact beyond the providers' documents: iOS without IDFA sends the all-zero rdid with gbraid")
    func zeroRDIDWithGbraid() throws {
        var event = try GASamples.event(.firstOpen)
        event.rdid = "00000000-0000-0000-0000-000000000000"
        event.limitAdTracking = true
        event.gbraid = "0AAAAAoOabc"
        let request = try GASamples.builder.conversionRequest(for: event)
        #expect(request.queryValue("rdid") == "00000000-0000-0000-0000-000000000000")
        #expect(request.queryValue("lat") == "1")
        #expect(request.query.suffix(1) == [QueryItem("gbraid", "0AAAAAoOabc")])
    }

    @Test("Google App Conversion Tracking API: id_type is advertisingid on Android; sdk_version defaults to app_version when no SDK")
    func androidAndSDKVersion() throws {
        var event = try GASamples.event(.firstOpen)
        event.platform = .android
        event.sdkVersion = nil
        event.rdid = "f10e1de2-e237-4f50-b6aa-843c45cc63d6"
        let request = try GASamples.builder.conversionRequest(for: event)
        #expect(request.queryValue("id_type") == "advertisingid")
        #expect(request.queryValue("sdk_version") == "1.2.4")
        #expect(request.queryValue("rdid") == "f10e1de2-e237-4f50-b6aa-843c45cc63d6")
    }

    @Test("config override: a loopback fake over http, with a port")
    func loopbackEndpoint() throws {
        let builder = GoogleConversionRequestBuilder(
            link: GASamples.link, endpoint: try GoogleEndpoint(scheme: "http", host: "127.0.0.1", port: 8080))
        let request = try builder.conversionRequest(for: GASamples.event(.firstOpen))
        #expect(request.urlString.hasPrefix("http://127.0.0.1:8080/pagead/conversion/app/1.0?dev_token="))
        let ipv6 = try GoogleEndpoint(scheme: "http", host: "::1", port: 9)
        #expect(ipv6.host == "[::1]")
        #expect(try GoogleEndpoint(scheme: "https", host: "fake.test").scheme == "https")
    }

    @Test("stored event round-trips through Codable with Google's parameter names")
    func eventCodable() throws {
        let event = try GASamples.event(
            .custom, name: "level_achieved", value: "1.99", currency: "USD",
            eventData: GoogleEventData([
                "level": .integer(5), "price": .money(Decimal(string: "2.9")!), "day": .date(try GoogleDate(text: "2016-09-05")),
                "at": .timestamp(try GoogleTimestamp(text: "1073513982.123")), "tags": .array([.string("a"), .bool(true)]),
                "ratio": .float(Decimal(string: "-0.5")!),
            ]))
        let data = try JSONEncoder().encode(event)
        let text = data.gaText
        for key in ["\"app_event_type\"", "\"app_event_name\"", "\"currency_code\"", "\"x_forwarded_for\"", "\"app_event_data\"", "\"lat\""] {
            #expect(text.contains(key), "\(key)")
        }
        let decoded = try JSONDecoder().decode(GoogleConversionEvent.self, from: data)
        #expect(decoded == event)
        #expect(try GASamples.builder.conversionRequest(for: decoded) == GASamples.builder.conversionRequest(for: event))
    }
}
