import Foundation
import LedgerProviders
import LedgerTestKit
import Testing

/// Every rule of the Google App Conversion Tracking API's parameter table, broken once, gets a
/// `ProviderError` naming the field and rule.
struct GoogleConversionRequestRuleTests {
    func build(_ change: (inout GoogleConversionEvent) -> Void) throws -> () throws(ProviderError) -> ProviderRequest {
        var event = try GASamples.event(.firstOpen)
        change(&event)
        let frozen = event
        return { () throws(ProviderError) -> ProviderRequest in try GASamples.builder.conversionRequest(for: frozen) }
    }

    @Test("Google App Conversion Tracking API dev_token and link_id: Required")
    func credentialsRequired() throws {
        let event = try GASamples.event(.firstOpen)
        gaExpectError(field: "dev_token", rule: "required") {
            try GoogleConversionRequestBuilder(link: GoogleAppLink(devToken: " ", linkID: "31FF")).conversionRequest(for: event)
        }
        gaExpectError(field: "link_id", rule: "required") {
            try GoogleConversionRequestBuilder(link: GoogleAppLink(devToken: "tok", linkID: "")).conversionRequest(for: event)
        }
    }

    @Test("Google App Conversion Tracking API app_event_name: \"This field is required if app_event_type is custom\"")
    func customRequiresName() throws {
        gaExpectError(field: "app_event_name", rule: "required_for_custom", try build { $0.appEventType = .custom })
        gaExpectError(field: "app_event_name", rule: "required_for_custom", try build {
            $0.appEventType = .custom
            $0.appEventName = "  "
        })
    }

    @Test("Google App Conversion Tracking API app_event_name: \"1 to 64 Unicode characters\" (counted as code points, not UTF-8 bytes)")
    func nameLength() throws {
        let sixtyFour = String(repeating: "é", count: 64)  // 128 UTF-8 bytes, 64 characters
        let request = try build {
            $0.appEventType = .custom
            $0.appEventName = sixtyFour
        }()
        #expect(request.queryValue("app_event_name") == sixtyFour)
        gaExpectError(field: "app_event_name", rule: "length_1_64", try build {
            $0.appEventType = .custom
            $0.appEventName = sixtyFour + "x"
        })
    }

    @Test("Google App Conversion Tracking API app_event_name: a reserved app_event_type value → APP_EVENT_NAME_RESERVED_VALUE")
    func reservedName() throws {
        for reserved in ["first_open", "custom", "Session_Start", "ECOMMERCE_PURCHASE"] {
            gaExpectError(field: "app_event_name", rule: "app_event_name_reserved_value", try build {
                $0.appEventType = .custom
                $0.appEventName = reserved
            })
        }
        // The sample names are fine.
        for allowed in ["level_achieved", "Level Achieved", "first_open_bonus"] {
            _ = try build {
                $0.appEventType = .custom
                $0.appEventName = allowed
            }()
        }
    }

    @Test("Google App Conversion Tracking API app_event_name names \"any custom app event\": refused on a non-custom type")
    func nameOnlyForCustom() throws {
        gaExpectError(field: "app_event_name", rule: "only_for_custom", try build { $0.appEventName = "level_achieved" })
    }

    @Test("Google App Conversion Tracking API app_event_type: the enumeration has exactly the nine documented values")
    func eventTypeEnumeration() {
        #expect(GoogleAppEventType.allCases.map(\.rawValue) == [
            "first_open", "session_start", "in_app_purchase", "view_item_list", "view_item", "view_search_results",
            "add_to_cart", "ecommerce_purchase", "custom",
        ])
    }

    @Test("Google App Conversion Tracking API app_event_type \"will only accept the following values\"; id_type only advertisingid (Android) / idfa (iOS)")
    func enumerations() throws {
        #expect(try GoogleAppEventType(validating: "in_app_purchase") == .inAppPurchase)
        gaExpectError(field: "app_event_type", rule: "enumeration") { try GoogleAppEventType(validating: "purchase") }
        gaExpectError(field: "app_event_type", rule: "enumeration") { try GoogleAppEventType(validating: "First_Open") }
        #expect(try GoogleDevicePlatform(validating: "iOS").idType == "idfa")
        #expect(try GoogleDevicePlatform(validating: "android").idType == "advertisingid")
        gaExpectError(field: "id_type", rule: "android_or_ios") { try GoogleDevicePlatform(validating: "windows") }
    }

    @Test("Google App Conversion Tracking API rdid: \"A valid UUID string\"")
    func rdidUUID() throws {
        for bad in ["", "not-a-uuid", "0F7AB11F-DA50-498E-B225-21AC1977A85", "0F7AB11FXDA50-498E-B225-21AC1977A85D", "{0F7AB11F-DA50-498E-B225-21AC1977A85D}", "GF7AB11F-DA50-498E-B225-21AC1977A85D"] {
            gaExpectError(field: "rdid", rule: "uuid", try build { $0.rdid = bad })
        }
        #expect(GoogleConversionRequestBuilder.isUUID("00000000-0000-0000-0000-000000000000"))
    }

    @Test("Google App Conversion Tracking API app_version, os_version: Required; sdk_version, when given, not blank")
    func versionsRequired() throws {
        gaExpectError(field: "app_version", rule: "required", try build { $0.appVersion = "" })
        gaExpectError(field: "os_version", rule: "required", try build { $0.osVersion = " " })
        gaExpectError(field: "sdk_version", rule: "required", try build { $0.sdkVersion = "" })
    }

    @Test("Google App Conversion Tracking API timestamp: Unix seconds \"with up to microseconds precision\", never an exponent")
    func timestampRules() throws {
        for bad in ["1.432681913e9", "1432681913.1234567", "1,432,681,913", "1432681913.", ".5", "", " 1432681913", "1432681913,5"] {
            gaExpectError(field: "timestamp", rule: "unix_seconds_up_to_6_decimals") { try GoogleTimestamp(text: bad) }
        }
        gaExpectError(field: "timestamp", rule: "positive", try build { $0.timestamp = GoogleTimestamp(microsecondsSince1970: 0) })
        #expect(try GoogleTimestamp(Date(timeIntervalSince1970: 1_432_681_913.123456)).text == "1432681913.123456")
        #expect(try GoogleTimestamp(Date(timeIntervalSince1970: 0.00001)).text == "0.000010")
        #expect(try GoogleTimestamp(Date(timeIntervalSince1970: 1_478_713_087)).text == "1478713087")
        gaExpectError(field: "timestamp", rule: "finite") { try GoogleTimestamp(Date(timeIntervalSince1970: .infinity)) }
    }

    @Test("Google App Conversion Tracking API value: \"machine-readable floating point value using a decimal point\" — no exponent, no grouping")
    func valueFormat() throws {
        for bad in ["1,99", "2E+9", "1e-5", "1,000,000.00", "1.99 USD", "$1.99", "1.", ".99", "NaN", "1 000", "5", "-2"] {
            gaExpectError(field: "value", rule: "decimal_point_no_exponent_no_grouping", try build {
                $0.value = bad
                $0.currencyCode = "USD"
            })
        }
        #expect(try GoogleConversionEvent.valueText(Decimal(string: "0.00001")!) == "0.00")
        #expect(try GoogleConversionEvent.valueText(Decimal(string: "1.985")!) == "1.99")
        #expect(try GoogleConversionEvent.valueText(Decimal(1_000_000)) == "1000000.00")
        #expect(try GoogleConversionEvent.valueText(Decimal(string: "-0.5")!) == "-0.50")
    }

    @Test("Google App Conversion Tracking API currency_code: ISO 4217, \"required if the value parameter is provided and not blank\"")
    func currencyRules() throws {
        gaExpectError(field: "currency_code", rule: "required_with_value", try build { $0.value = "1.99" })
        for bad in ["usd", "US", "USDX", "U$D", ""] {
            gaExpectError(field: "currency_code", rule: "iso_4217", try build {
                $0.value = "1.99"
                $0.currencyCode = bad
            })
        }
        // A blank value is "not provided": no currency needed, no value sent.
        let blank = try build { $0.value = "  " }()
        #expect(blank.queryValue("value") == nil)
        #expect(blank.queryValue("currency_code") == nil)
    }

    @Test("Google App Conversion Tracking API gclid / gbraid: when a deep link carried one, never blank")
    func clickIDsNotBlank() throws {
        gaExpectError(field: "gclid", rule: "not_blank", try build { $0.gclid = "" })
        gaExpectError(field: "gbraid", rule: "not_blank", try build { $0.gbraid = " " })
    }

    @Test("Google App Conversion Tracking API X-Forwarded-For: \"The public IPv4 or IPv6 address of the device\"")
    func forwardedFor() throws {
        for bad in ["", "256.1.1.1", "1.2.3", "01.2.3.4", "1.2.3.4, 5.6.7.8", "1.2.3.4:80", "[2607:f8b0::1]", "fe80::1%eth0", "1:2:3:4:5:6:7:8:9", "1::2::3", "12345::1", "gggg::1", "localhost", "1.2.3.4\r\nX-Evil: 1"] {
            gaExpectError(field: "X-Forwarded-For", rule: "ipv4_or_ipv6", try build { $0.deviceIP = bad })
        }
        for notPublic in ["10.0.0.1", "127.0.0.1", "192.168.1.20", "172.16.5.4", "169.254.1.1", "100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255", "::", "::1", "fe80::1", "fd00::1", "ff02::1", "::ffff:192.168.1.1"] {
            gaExpectError(field: "X-Forwarded-For", rule: "public_address", try build { $0.deviceIP = notPublic })
        }
        for good in ["216.58.194.174", "8.8.8.8", "2607:f8b0:4005:80a::200e", "2001:4860:4860::8888", "::ffff:8.8.8.8", "2a00:1450:4001:82b:0:0:0:200e"] {
            let request = try build { $0.deviceIP = good }()
            #expect(request.headerValue("X-Forwarded-For") == good)
        }
        #expect(GoogleDeviceIPAddress.family(of: "2001:db8::1") == .ipv6)
        #expect(GoogleDeviceIPAddress.family(of: "1.2.3.4") == .ipv4)
    }

    @Test("Google App Conversion Tracking API: \"All requests must be sent via HTTPS\"; http only towards loopback")
    func httpsOnly() {
        gaExpectError(field: "scheme", rule: "https_only") { try GoogleEndpoint(scheme: "http", host: "www.googleadservices.com") }
        gaExpectError(field: "scheme", rule: "https_only") { try GoogleEndpoint(scheme: "http", host: "10.0.0.5") }
        gaExpectError(field: "scheme", rule: "https_only") { try GoogleEndpoint(scheme: "ftp", host: "localhost") }
        gaExpectError(field: "port", rule: "range_1_65535") { try GoogleEndpoint(scheme: "https", host: "localhost", port: 0) }
        gaExpectError(field: "host", rule: "valid_host") { try GoogleEndpoint(scheme: "https", host: "") }
        gaExpectError(field: "host", rule: "valid_host") { try GoogleEndpoint(scheme: "https", host: "evil.com/path?") }
    }

    @Test("a stored config cannot decode into plain http to a remote host")
    func endpointDecodingChecks() {
        let data = Data(#"{"scheme":"http","host":"www.googleadservices.com"}"#.utf8)
        #expect(throws: (any Error).self) { try JSONDecoder().decode(GoogleEndpoint.self, from: data) }
    }

    @Test("Google App Conversion Tracking API cross-network: ad_event_id Required; derived only from a real, unredacted conversion request")
    func crossNetworkRules() throws {
        let event = try GASamples.event(.firstOpen)
        gaExpectError(field: "ad_event_id", rule: "required") {
            try GASamples.builder.crossNetworkRequest(for: event, adEventID: "", attributed: true)
        }
        let original = try GASamples.builder.conversionRequest(for: event)
        gaExpectError(field: "dev_token", rule: "not_redacted") {
            try GoogleConversionRequestBuilder.crossNetworkRequest(derivedFrom: original.redacted(), adEventID: "x", attributed: true)
        }
        let cross = try GoogleConversionRequestBuilder.crossNetworkRequest(derivedFrom: original, adEventID: "x", attributed: true)
        gaExpectError(field: "path", rule: "conversion_request_only") {
            try GoogleConversionRequestBuilder.crossNetworkRequest(derivedFrom: cross, adEventID: "x", attributed: true)
        }
    }
}
