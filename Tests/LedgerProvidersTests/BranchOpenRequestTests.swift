import Foundation
import Testing

@testable import LedgerProviders

@Suite("Branch v1/open request (Branch v1/open server-to-server guide)")
struct BranchOpenRequestTests {
    static let config = BranchConfiguration(branchKey: "key_live_k3y_SEEKRIT", branchSecret: "secret_live_s3cr3t_SEEKRIT")

    /// The iOS `curl -d` example, as printed in the Branch v1/open server-to-server guide.
    static let iOSExample = """
        {
         "branch_key": "TODO",
         "branch_secret": "TODO",
         "server_to_server": true,
         "app_version": "1.12.4",
         "os": "iOS",
         "os_version": "10.0",
         "model": "iPhone",
         "screen_height": 2208,
         "screen_width": 1242,
         "facebook_app_link_checked": false,
         "user_agent": "{FULL_USER_AGENT_HERE}",
         "hardware_id": "D5B89252-FCF8-4065-88FC-B70F49186988",
         "hardware_id_type": "idfa",
         "ios_vendor_id": "0C381C08-B808-4C25-BE51-B00BC165B5F8",
         "is_hardware_id_real": true,
         "ad_tracking_enabled": true,
         "custom_param_1": "Parameter 1",
         "custom_param_2": "Parameter 2",
         "custom_param_3": "Parameter 3"
        }
        """

    /// The Android `curl -d` example, as printed in the Branch v1/open server-to-server guide.
    static let androidExample = """
        {
         "branch_key": "TODO",
         "branch_secret": "TODO",
         "server_to_server": true,
         "app_version": "1.12.4",
         "os": "Android",
         "os_version": 26,
         "model": "SM-G960U1",
         "screen_height": 2076,
         "screen_width": 1080,
         "facebook_app_link_checked": false,
         "user_agent": "{FULL_USER_AGENT_HERE}",
         "hardware_id": "fae098e4605e79c3",
         "google_advertising_id": "ea31e5e0-1aa5-4181-91d7-0b56524e0274",
         "advertising_ids": {
            "oaid": "02ab41d3-7886-4f29-a606-fba4372e9fdc"
         },
         "google_search_install_referrer": "referrer_value_here",
         "clicked_referrer_ts": 1574699946,
         "install_begin_ts": 1574699955,
         "is_hardware_id_real": true,
         "ad_tracking_enabled": true,
         "custom_param_1": "Parameter 1",
         "custom_param_2": "Parameter 2",
         "custom_param_3": "Parameter 3"
        }
        """

    static func iOSRequest() -> BranchOpenRequest {
        var request = BranchOpenRequest(
            os: .iOS, osVersion: "10.0", appVersion: "1.12.4", userAgent: "{FULL_USER_AGENT_HERE}",
            devicePublicIP: "1.2.3.4")
        request.model = "iPhone"
        request.screenHeight = 2208
        request.screenWidth = 1242
        request.facebookAppLinkChecked = false
        request.idfa = "D5B89252-FCF8-4065-88FC-B70F49186988"
        request.idfv = "0C381C08-B808-4C25-BE51-B00BC165B5F8"
        request.customParam1 = "Parameter 1"
        request.customParam2 = "Parameter 2"
        request.customParam3 = "Parameter 3"
        return request
    }

    static func androidRequest() -> BranchOpenRequest {
        var request = BranchOpenRequest(
            os: .android, osVersion: "26", appVersion: "1.12.4", userAgent: "{FULL_USER_AGENT_HERE}",
            devicePublicIP: "1.2.3.4")
        request.model = "SM-G960U1"
        request.screenHeight = 2076
        request.screenWidth = 1080
        request.facebookAppLinkChecked = false
        request.androidID = "fae098e4605e79c3"
        request.googleAdvertisingID = "ea31e5e0-1aa5-4181-91d7-0b56524e0274"
        request.advertisingIDs = ["oaid": "02ab41d3-7886-4f29-a606-fba4372e9fdc"]
        request.googleSearchInstallReferrer = "referrer_value_here"
        request.clickedReferrerTimestamp = 1_574_699_946
        request.installBeginTimestamp = 1_574_699_955
        request.customParam1 = "Parameter 1"
        request.customParam2 = "Parameter 2"
        request.customParam3 = "Parameter 3"
        return request
    }

    /// The document's example with the credentials as `redacted()` leaves them.
    static func redactedExample(_ text: String) -> [String: ProviderJSON] {
        guard var members = json(text).membersByKey else { return [:] }
        members["branch_key"] = .string(ProviderRequest.redactedMarker)
        members["branch_secret"] = .string(ProviderRequest.redactedMarker)
        return members
    }

    // Branch v1/open server-to-server guide, "Example Requests / iOS": the curl -d body, minus
    // credentials.
    @Test func goldenIOSExampleBody() throws {
        let request = try Self.iOSRequest().build(with: Self.config)
        #expect(json(request.redacted().body) == .object(sortingKeysOf: Self.redactedExample(Self.iOSExample)))
        #expect(request.method == .post)
        #expect(request.urlString == "https://api2.branch.io/v1/open")
        #expect(request.headerValue("X-IP-Override") == "1.2.3.4")
        #expect(request.headerValue("content-type") == "application/json")
    }

    // Branch v1/open server-to-server guide, "Example Requests / Android". The example prints
    // `"os_version": 26` (a number) although the table types os_version as String; we always send
    // the String "26" (the table wins: "Will accept any value"). Everything else is reproduced as
    // printed, including the install-referrer fields without first_session (so those fields are
    // refused only when first_session is explicitly false).
    @Test func goldenAndroidExampleBody() throws {
        let request = try Self.androidRequest().build(with: Self.config)
        var expected = Self.redactedExample(Self.androidExample)
        #expect(expected["os_version"] == .number("26"))
        expected["os_version"] = .string("26")
        #expect(json(request.redacted().body) == .object(sortingKeysOf: expected))
    }

    // Deterministic JSON: sorted keys, so the same facts give the same bytes.
    @Test func bodyIsReproducibleWithSortedKeys() throws {
        let a = try Self.iOSRequest().build(with: Self.config)
        let b = try Self.iOSRequest().build(with: Self.config)
        #expect(a.body == b.body)
        let text = String(decoding: a.body ?? Data(), as: UTF8.self)
        #expect(text.hasPrefix(#"{"ad_tracking_enabled":true,"app_version":"1.12.4","branch_key":"#))
        // Sorted at every level, nested objects (advertising_ids) too.
        for request in [Self.iOSRequest(), Self.androidRequest()] {
            let body = try ProviderJSONReader.parse(request.build(with: Self.config).body ?? Data(), limits: .branchSingular)
            #expect(body == body.sortingKeys())
        }
    }

    // Branch v1/open server-to-server guide: branch_secret is a credential; nothing of branch_key /
    // branch_secret may survive redacted().
    @Test func redactedRemovesBothCredentials() throws {
        for request in [Self.iOSRequest(), Self.androidRequest()] {
            let built = try request.build(with: Self.config)
            #expect(built.sensitiveFields == [.jsonBodyKey("branch_key"), .jsonBodyKey("branch_secret")])
            let stored = built.redacted()
            let everything = stored.urlString + stored.headers.map { $0.name + $0.value }.joined()
                + String(decoding: stored.body ?? Data(), as: UTF8.self)
            #expect(!everything.contains("SEEKRIT"))
            #expect(String(decoding: built.body ?? Data(), as: UTF8.self).contains("secret_live_s3cr3t_SEEKRIT"))
            #expect(!Self.config.description.contains("SEEKRIT"))
        }
    }

    // Branch v1/open server-to-server guide: "The device's public IP address must be set using
    // X-IP-Override ... (it is critical this uses the device's IP, and not your server's IP)".
    @Test func xIPOverrideIsTheDevicesPublicIP() throws {
        var request = Self.iOSRequest()
        request.devicePublicIP = "2001:4860:4860::8888"
        #expect(try request.build(with: Self.config).headerValue("X-IP-Override") == "2001:4860:4860::8888")
        for bad in ["", "1.2.3", "1.2.3.4\r\nX-Evil: 1", "01.2.3.4", "256.1.1.1", "example.com", "[::1]"] {
            request.devicePublicIP = bad
            expectProviderError(field: "X-IP-Override", rule: "ip_address") { _ = try request.build(with: Self.config) }
        }
        for privateIP in ["10.0.0.1", "192.168.1.1", "127.0.0.1", "172.16.5.4", "100.64.0.1", "::1", "fe80::1", "fd00::1"] {
            request.devicePublicIP = privateIP
            expectProviderError(field: "X-IP-Override", rule: "public_ip") { _ = try request.build(with: Self.config) }
        }
        let ours = BranchConfiguration(branchKey: "k", branchSecret: "s", serverPublicIPs: ["203.0.113.9", "2001:db8::9"])
        // The same addresses, however written.
        for server in ["203.0.113.9", "::ffff:203.0.113.9", "2001:db8::9", "2001:0db8:0:0::9", "2001:DB8::9"] {
            request.devicePublicIP = server
            expectProviderError(field: "X-IP-Override", rule: "not_server_ip") { _ = try request.build(with: ours) }
        }
        request.devicePublicIP = "2001:db8::10"
        _ = try request.build(with: ours)
    }

    // Base URL overridable for a loopback fake; http only for 127.0.0.1 / localhost / ::1.
    @Test func endpointOverrideAndLoopbackHTTP() throws {
        for (host, shown) in [("127.0.0.1", "127.0.0.1"), ("localhost", "localhost"), ("::1", "[::1]")] {
            let config = BranchConfiguration(
                branchKey: "k", branchSecret: "s", endpoint: BranchEndpoint(scheme: "http", host: host, port: 8080))
            #expect(try Self.iOSRequest().build(with: config).urlString == "http://\(shown):8080/v1/open")
        }
        let remoteHTTP = BranchConfiguration(
            branchKey: "k", branchSecret: "s", endpoint: BranchEndpoint(scheme: "http", host: "api2.branch.io"))
        expectProviderError(field: "scheme", rule: "https_only") { _ = try Self.iOSRequest().build(with: remoteHTTP) }
        let badPort = BranchConfiguration(
            branchKey: "k", branchSecret: "s", endpoint: BranchEndpoint(host: "api2.branch.io", port: 70_000))
        expectProviderError(field: "port", rule: "range_1_65535") { _ = try Self.iOSRequest().build(with: badPort) }
        let badHost = BranchConfiguration(branchKey: "k", branchSecret: "s", endpoint: BranchEndpoint(host: "evil.com/x?"))
        expectProviderError(field: "host", rule: "valid_host") { _ = try Self.iOSRequest().build(with: badHost) }
    }
}
