import Foundation
import Testing

@testable import LedgerProviders

@Suite("Singular conversion value request (Singular SKAdNetwork 4 implementation guide)")
struct SingularConversionValueRequestTests {
    static let config = SingularConfiguration(sdkKey: "sdk_key_here")

    /// The state of the document's HTTP example. (Its first and last call timestamps are equal, yet it
    /// holds p1/p2 coarse values — not reachable by the snippet's rules, so it is built directly.)
    static func exampleState() -> SKANDeviceState {
        var state = SKANDeviceState()
        state.conversionValue = 7
        state.p1Coarse = .low
        state.p2Coarse = .medium
        state.totalRevenueByCurrency = ["USD": Decimal(string: "9.99")!]
        state.totalAdMonRevenueByCurrency = ["USD": Decimal(string: "1.2")!]
        state.firstCallTimestamp = 1_510_090_877
        state.lastCallTimestamp = 1_510_090_877
        return state
    }

    static func exampleRequest() -> SingularConversionValueRequest {
        SingularConversionValueRequest(
            osVersion: "16.1", bundleID: "com.singular.app", appVersion: "1.2.3", event: .session,
            idfa: "DFC5A647-9043-4699-B2A5-76F03A97064B", idfv: "21DB6612-09B3-4ECC-84AC-B353B0AF1334",
            state: exampleState())
    }

    static let exampleNow = Date(timeIntervalSince1970: 1_510_090_877 + 60)

    // Singular SKAdNetwork 4 implementation guide, "Exemplos de pedidos / HTTP": every parameter,
    // in order, with its percent-encoding. (The curl and Java examples give
    // skan_first_call_to_skadnetwork_timestamp=1510040127; the HTTP and Python examples 1510090877.
    // We reproduce the HTTP example, as asked.)
    @Test func goldenHTTPExampleQuery() throws {
        let request = try Self.exampleRequest().build(with: Self.config, at: Self.exampleNow)
        let printed = """
            /api/v2/conversion_value
            ?a=sdk_key_here
            &p=iOS
            &i=com.singular.app
            &v=16.1
            &idfa=DFC5A647-9043-4699-B2A5-76F03A97064B
            &idfv=21DB6612-09B3-4ECC-84AC-B353B0AF1334
            &n=__SESSION__
            &app_v=1.2.3
            &skan_current_conversion_value=7
            &p1_coarse=0
            &p2_coarse=1
            &skan_total_revenue_by_currency=%7B%22USD%22%3A9.99%7D
            &skan_total_admon_revenue_by_currency=%7B%22USD%22%3A1.2%7D
            &skan_first_call_to_skadnetwork_timestamp=1510090877
            &skan_last_call_to_skadnetwork_timestamp=1510090877
            """.replacingOccurrences(of: "\n", with: "")
        #expect(request.path + "?" + request.encodedQuery == printed)
        #expect(request.urlString == "https://sdk-api-v1.singular.net" + printed)
        #expect(request.method == .get)
        #expect(request.body == nil)  // "Não forneça um corpo de pedido"
        #expect(request.headerValue("Accept") == "application/json")
        #expect(request.queryValue("skan_total_revenue_by_currency") == #"{"USD":9.99}"#)
    }

    // The SDK key `a` is a credential: gone from redacted() (URL, headers, body).
    @Test func redactedRemovesSDKKey() throws {
        let config = SingularConfiguration(sdkKey: "sdk_SEEKRIT_key")
        let request = try Self.exampleRequest().build(with: config, at: Self.exampleNow)
        #expect(request.sensitiveFields == [.query("a")])
        let stored = request.redacted()
        #expect(stored.queryValue("a") == ProviderRequest.redactedMarker)
        let everything = stored.urlString + stored.headers.map { $0.name + $0.value }.joined()
            + String(decoding: stored.body ?? Data(), as: UTF8.self)
        #expect(!everything.contains("SEEKRIT"))
        #expect(!config.description.contains("SEEKRIT"))
    }

    // Singular SKAdNetwork 4 implementation guide, "Parâmetros necessários": a, i, v, app_v, n are
    // required; `a` is the SDK key.
    @Test func requiredParameters() {
        expectProviderError(field: "a", rule: "required") {
            _ = try Self.exampleRequest().build(with: SingularConfiguration(sdkKey: " "), at: Self.exampleNow)
        }
        let cases: [(String, (inout SingularConversionValueRequest) -> Void)] = [
            ("i", { $0.bundleID = "" }), ("v", { $0.osVersion = "" }), ("app_v", { $0.appVersion = " " }),
            ("n", { $0.event = .named("") }),
        ]
        for (field, mutate) in cases {
            var request = Self.exampleRequest()
            mutate(&request)
            expectProviderError(field: field, rule: "required") { _ = try request.build(with: Self.config, at: Self.exampleNow) }
        }
    }

    // Singular SKAdNetwork 4 implementation guide: n is the event name, `__SESSION__` for sessions
    // (SESSION_EVENT_NAME) — reserved for sessions.
    @Test func eventNames() throws {
        var request = Self.exampleRequest()
        request.event = .named("revenue_event_name")
        #expect(try request.build(with: Self.config, at: Self.exampleNow).queryValue("n") == "revenue_event_name")
        request.event = .named("__SESSION__")
        expectProviderError(field: "n", rule: "reserved_event_name") { _ = try request.build(with: Self.config, at: Self.exampleNow) }
    }

    // Singular SKAdNetwork 4 implementation guide: idfa only when the user opted in (an all-zero
    // IDFA is "not available"); idfv always; UUIDs.
    @Test func deviceIdentifiers() throws {
        var request = Self.exampleRequest()
        request.idfa = nil
        #expect(try request.build(with: Self.config, at: Self.exampleNow).queryValue("idfa") == nil)
        request.idfa = "00000000-0000-0000-0000-000000000000"
        #expect(try request.build(with: Self.config, at: Self.exampleNow).queryValue("idfa") == nil)
        request.idfa = "IDFA"
        expectProviderError(field: "idfa", rule: "uuid_format") { _ = try request.build(with: Self.config, at: Self.exampleNow) }
        request = Self.exampleRequest()
        request.idfv = "IDFV"
        expectProviderError(field: "idfv", rule: "uuid_format") { _ = try request.build(with: Self.config, at: Self.exampleNow) }
    }

    // Singular SKAdNetwork 4 implementation guide snippet:
    // `if ([SKANSnippet isSkanWindowOver]) return;` and registration comes first.
    @Test func noRequestAfterWindowOverOrBeforeRegistration() {
        let over = Date(timeIntervalSince1970: 1_510_090_877 + 35 * 86_400)
        expectProviderError(field: "skan_first_call_to_skadnetwork_timestamp", rule: "skan_window_over") {
            _ = try Self.exampleRequest().build(with: Self.config, at: over)
        }
        var request = Self.exampleRequest()
        request.state = SKANDeviceState()
        expectProviderError(field: "skan_first_call_to_skadnetwork_timestamp", rule: "not_registered") {
            _ = try request.build(with: Self.config, at: Self.exampleNow)
        }
    }

    // Singular SKAdNetwork 4 implementation guide: values are 0-63 ("Illegal values" otherwise),
    // even in a state decoded from storage.
    @Test func stateValuesOutOfRangeAreRefused() {
        var request = Self.exampleRequest()
        request.state.conversionValue = 64
        expectProviderError(field: "skan_current_conversion_value", rule: "range_0_63") {
            _ = try request.build(with: Self.config, at: Self.exampleNow)
        }
        request.state.conversionValue = 1
        request.state.previousFineValue = -1
        expectProviderError(field: "prev_fine_value", rule: "range_0_63") {
            _ = try request.build(with: Self.config, at: Self.exampleNow)
        }
    }

    // Singular SKAdNetwork 4 implementation guide, "Parâmetros opcionais": prev values, lock
    // timestamps and per-window revenue, when present.
    @Test func optionalParametersWhenPresent() throws {
        var request = Self.exampleRequest()
        request.state.previousFineValue = 5
        request.state.p0Coarse = .high
        request.state.p0PreviousCoarse = .medium
        request.state.p1PreviousCoarse = .low
        request.state.p0WindowLock = 1_510_090_900
        request.state.p0TotalIAPRevenue = ["USD": Decimal(string: "9.99")!, "EUR": Decimal(string: "0.5")!]
        request.state.p1TotalAdMonRevenue = ["USD": Decimal(string: "1.2")!]
        let built = try request.build(with: Self.config, at: Self.exampleNow)
        let names = built.query.map(\.name)
        #expect(names == [
            "a", "p", "i", "v", "idfa", "idfv", "n", "app_v", "skan_current_conversion_value", "prev_fine_value",
            "p0_coarse", "p1_coarse", "p2_coarse", "p0_prev_coarse_value", "p1_prev_coarse_value",
            "skan_total_revenue_by_currency", "skan_total_admon_revenue_by_currency", "p0_total_iap_revenue",
            "p1_total_admon_revenue", "p0_window_lock", "skan_first_call_to_skadnetwork_timestamp",
            "skan_last_call_to_skadnetwork_timestamp",
        ])
        #expect(built.queryValue("p0_total_iap_revenue") == #"{"EUR":0.5,"USD":9.99}"#)
        #expect(built.queryValue("p0_coarse") == "2")
        #expect(built.queryValue("p0_window_lock") == "1510090900")
    }

    // Money: Decimal, "." and no exponent.
    @Test func revenueFormatting() {
        let totals: [String: Decimal] = [
            "USD": Decimal(string: "0.1")! + Decimal(string: "0.2")!, "KRW": Decimal(string: "1e30")!,
            "JPY": Decimal(string: "1e-10")!, "EUR": Decimal(string: "-2.50")!, "a\"b": 1,
        ]
        #expect(SKANDeviceState.revenueJSON(totals) == #"{"EUR":-2.5,"JPY":0.0000000001,"KRW":1000000000000000000000000000000,"USD":0.3,"a\"b":1}"#)
        #expect(SKANDeviceState.revenueJSON([:]) == "{}")
    }

    // http only for loopback fakes.
    @Test func endpointOverride() throws {
        let fake = SingularConfiguration(sdkKey: "k", endpoint: SingularEndpoint(scheme: "http", host: "127.0.0.1", port: 9999))
        #expect(try Self.exampleRequest().build(with: fake, at: Self.exampleNow).urlString.hasPrefix("http://127.0.0.1:9999/api/v2/conversion_value?a=k&"))
        let bad = SingularConfiguration(sdkKey: "k", endpoint: SingularEndpoint(scheme: "http", host: "sdk-api-v1.singular.net"))
        expectProviderError(field: "scheme", rule: "https_only") { _ = try Self.exampleRequest().build(with: bad, at: Self.exampleNow) }
    }
}
