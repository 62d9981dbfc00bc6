import Foundation
import Testing

@testable import LedgerProviders

/// Every body rule of the Branch v1/open server-to-server guide broken once, each giving a
/// ProviderError that names the field and rule.
@Suite("Branch v1/open body rules (Branch v1/open server-to-server guide, \"POST body parameters\")")
struct BranchOpenRequestRuleTests {
    // Branch v1/open server-to-server guide, os_version: "preferred default to NA. This cannot be
    // blank."
    @Test func osVersionDefaultsToNAAndCannotBeBlank() throws {
        var request = BranchOpenRequestTests.iOSRequest()
        request.osVersion = nil
        let body = try request.bodyFields(BranchOpenRequestTests.config)
        #expect(body["os_version"] == .string("NA"))
        request.osVersion = "  "
        expectProviderError(field: "os_version", rule: "not_blank") { _ = try request.build(with: BranchOpenRequestTests.config) }
    }

    // Branch v1/open server-to-server guide, os: "Only accepts Android or iOS".
    @Test func osOnlyIOSOrAndroid() throws {
        #expect(try BranchOpenRequest.OperatingSystem(validating: "iOS") == .iOS)
        #expect(try BranchOpenRequest.OperatingSystem(validating: "Android") == .android)
        for bad in ["ios", "android", "iPadOS", "Windows", ""] {
            expectProviderError(field: "os", rule: "ios_or_android") { _ = try BranchOpenRequest.OperatingSystem(validating: bad) }
        }
    }

    // Branch v1/open server-to-server guide: branch_key, branch_secret, app_version, user_agent are
    // REQUIRED.
    @Test func requiredFields() {
        for (field, mutate) in [
            ("app_version", { (r: inout BranchOpenRequest) in r.appVersion = "" }),
            ("user_agent", { (r: inout BranchOpenRequest) in r.userAgent = " " }),
        ] {
            var request = BranchOpenRequestTests.iOSRequest()
            mutate(&request)
            expectProviderError(field: field, rule: "required") { _ = try request.build(with: BranchOpenRequestTests.config) }
        }
        let noKey = BranchConfiguration(branchKey: "", branchSecret: "s")
        expectProviderError(field: "branch_key", rule: "required") { _ = try BranchOpenRequestTests.iOSRequest().build(with: noKey) }
        let noSecret = BranchConfiguration(branchKey: "k", branchSecret: "")
        expectProviderError(field: "branch_secret", rule: "required") { _ = try BranchOpenRequestTests.iOSRequest().build(with: noSecret) }
    }

    // Branch v1/open server-to-server guide, hardware_id: "iOS: IDFA if available, otherwise
    // fallback to IDFV"; hardware_id_type idfa | vendor_id.
    @Test func iOSHardwareIDFallsBackToIDFV() throws {
        var request = BranchOpenRequestTests.iOSRequest()
        request.idfa = nil
        var body = try request.bodyFields(BranchOpenRequestTests.config)
        #expect(body["hardware_id"] == .string("0C381C08-B808-4C25-BE51-B00BC165B5F8"))
        #expect(body["hardware_id_type"] == .string("vendor_id"))
        #expect(body["is_hardware_id_real"] == .bool(true))
        // An all-zero IDFA (tracking not authorised) is "not available".
        request.idfa = "00000000-0000-0000-0000-000000000000"
        body = try request.bodyFields(BranchOpenRequestTests.config)
        #expect(body["hardware_id_type"] == .string("vendor_id"))
    }

    // Branch v1/open server-to-server guide: "If no device ID is available, do not include";
    // hardware_id_type "do not include if hardware_id is not populated"; is_hardware_id_real "false
    // if hardware_id cannot be populated".
    @Test func noDeviceIDOmitsHardwareIDAndType() throws {
        var request = BranchOpenRequestTests.iOSRequest()
        request.idfa = nil
        request.idfv = nil
        let body = try request.bodyFields(BranchOpenRequestTests.config)
        #expect(body["hardware_id"] == nil)
        #expect(body["hardware_id_type"] == nil)
        #expect(body["ios_vendor_id"] == nil)
        #expect(body["is_hardware_id_real"] == .bool(false))
        var android = BranchOpenRequestTests.androidRequest()
        android.androidID = nil
        let androidBody = try android.bodyFields(BranchOpenRequestTests.config)
        #expect(androidBody["hardware_id"] == nil)
        #expect(androidBody["hardware_id_type"] == nil)
        #expect(androidBody["is_hardware_id_real"] == .bool(false))
    }

    // Branch v1/open server-to-server guide: hardware_id_type and ios_vendor_id are iOS ONLY;
    // google_advertising_id and advertising_ids ANDROID ONLY.
    @Test func platformOnlyDeviceIDs() throws {
        #expect(try BranchOpenRequestTests.androidRequest().bodyFields(BranchOpenRequestTests.config)["hardware_id_type"] == nil)
        var android = BranchOpenRequestTests.androidRequest()
        android.idfv = "0C381C08-B808-4C25-BE51-B00BC165B5F8"
        expectProviderError(field: "ios_vendor_id", rule: "ios_only") { _ = try android.build(with: BranchOpenRequestTests.config) }
        android = BranchOpenRequestTests.androidRequest()
        android.idfa = "D5B89252-FCF8-4065-88FC-B70F49186988"
        expectProviderError(field: "hardware_id", rule: "idfa_ios_only") { _ = try android.build(with: BranchOpenRequestTests.config) }
        var iOS = BranchOpenRequestTests.iOSRequest()
        iOS.googleAdvertisingID = "ea31e5e0-1aa5-4181-91d7-0b56524e0274"
        expectProviderError(field: "google_advertising_id", rule: "android_only") { _ = try iOS.build(with: BranchOpenRequestTests.config) }
        iOS = BranchOpenRequestTests.iOSRequest()
        iOS.advertisingIDs = ["oaid": "x"]
        expectProviderError(field: "advertising_ids", rule: "android_only") { _ = try iOS.build(with: BranchOpenRequestTests.config) }
        iOS = BranchOpenRequestTests.iOSRequest()
        iOS.androidID = "fae098e4605e79c3"
        expectProviderError(field: "hardware_id", rule: "android_id_android_only") { _ = try iOS.build(with: BranchOpenRequestTests.config) }
    }

    // Device ids must look like device ids (UUIDs; ANDROID_ID hexadecimal).
    @Test func deviceIDFormats() {
        var iOS = BranchOpenRequestTests.iOSRequest()
        iOS.idfa = "not-a-uuid"
        expectProviderError(field: "hardware_id", rule: "uuid_format") { _ = try iOS.build(with: BranchOpenRequestTests.config) }
        iOS = BranchOpenRequestTests.iOSRequest()
        iOS.idfv = "0C381C08"
        expectProviderError(field: "ios_vendor_id", rule: "uuid_format") { _ = try iOS.build(with: BranchOpenRequestTests.config) }
        var android = BranchOpenRequestTests.androidRequest()
        android.androidID = "zz-not-hex"
        expectProviderError(field: "hardware_id", rule: "android_id_hex") { _ = try android.build(with: BranchOpenRequestTests.config) }
        android = BranchOpenRequestTests.androidRequest()
        android.googleAdvertisingID = "gaid"
        expectProviderError(field: "google_advertising_id", rule: "uuid_format") { _ = try android.build(with: BranchOpenRequestTests.config) }
    }

    // Branch v1/open server-to-server guide, ad_tracking_enabled: "If Limit Ad Tracking should be
    // enabled, do not include in the request."
    @Test func adTrackingEnabledOmittedUnderLimitAdTracking() throws {
        var request = BranchOpenRequestTests.iOSRequest()
        request.limitAdTracking = true
        let body = try request.bodyFields(BranchOpenRequestTests.config)
        #expect(body["ad_tracking_enabled"] == nil)
        #expect(body["hardware_id"] != nil)  // the IDFA rule is separate; only the flag goes
        request.limitAdTracking = false
        #expect(try request.bodyFields(BranchOpenRequestTests.config)["ad_tracking_enabled"] == .bool(true))
    }

    // Branch v1/open server-to-server guide: install_referrer_extras,
    // google_search_install_referrer, clicked_referrer_ts, install_begin_ts are "ANDROID ONLY ...
    // Only include in the app's first session".
    @Test func installReferrerFieldsAndroidFirstSessionOnly() throws {
        let setters: [(String, (inout BranchOpenRequest) -> Void)] = [
            ("install_referrer_extras", { $0.installReferrerExtras = "utm_source=x" }),
            ("google_search_install_referrer", { $0.googleSearchInstallReferrer = "7AXhuEQs1U" }),
            ("clicked_referrer_ts", { $0.clickedReferrerTimestamp = 1_573_098_834 }),
            ("install_begin_ts", { $0.installBeginTimestamp = 1_573_098_843 }),
        ]
        for (field, set) in setters {
            var iOS = BranchOpenRequestTests.iOSRequest()
            set(&iOS)
            expectProviderError(field: field, rule: "android_only") { _ = try iOS.build(with: BranchOpenRequestTests.config) }
            var later = BranchOpenRequest(os: .android, appVersion: "1", userAgent: "UA", devicePublicIP: "1.2.3.4")
            later.firstSession = false
            set(&later)
            expectProviderError(field: field, rule: "first_session_only") { _ = try later.build(with: BranchOpenRequestTests.config) }
            var first = later
            first.firstSession = true
            #expect(try first.bodyFields(BranchOpenRequestTests.config)[field] != nil)
        }
        var negative = BranchOpenRequestTests.androidRequest()
        negative.installBeginTimestamp = -1
        expectProviderError(field: "install_begin_ts", rule: "non_negative") { _ = try negative.build(with: BranchOpenRequestTests.config) }
    }

    // Branch v1/open server-to-server guide: apple_attribution_token, search_ad_encoded, gbraid are
    // iOS ONLY; referrer_gclid ANDROID ONLY.
    @Test func iOSOnlyAndAndroidOnlyOptionalFields() throws {
        let iOSOnly: [(String, (inout BranchOpenRequest) -> Void)] = [
            ("apple_attribution_token", { $0.appleAttributionToken = "c7ya5fQsXrqhCiG0eQTvpS8" }),
            ("search_ad_encoded", { $0.searchAdEncoded = "eyJWZXJzaW9uMy4xIjp7fX0=" }),
            ("gbraid", { $0.gbraid = "CjwKCAiA3L6PBhBvEiwAINlJ9" }),
        ]
        for (field, set) in iOSOnly {
            var android = BranchOpenRequestTests.androidRequest()
            set(&android)
            expectProviderError(field: field, rule: "ios_only") { _ = try android.build(with: BranchOpenRequestTests.config) }
            var iOS = BranchOpenRequestTests.iOSRequest()
            set(&iOS)
            #expect(try iOS.bodyFields(BranchOpenRequestTests.config)[field] != nil)
        }
        var iOS = BranchOpenRequestTests.iOSRequest()
        iOS.referrerGclid = "CjwKCAiA3L6PBhBvEiwAINlJ9"
        expectProviderError(field: "referrer_gclid", rule: "android_only") { _ = try iOS.build(with: BranchOpenRequestTests.config) }
        var android = BranchOpenRequestTests.androidRequest()
        android.referrerGclid = "CjwKCAiA3L6PBhBvEiwAINlJ9"
        #expect(try android.bodyFields(BranchOpenRequestTests.config)["referrer_gclid"] == .string("CjwKCAiA3L6PBhBvEiwAINlJ9"))
        iOS = BranchOpenRequestTests.iOSRequest()
        iOS.searchAdEncoded = "eyJ9"
        iOS.firstSession = false
        expectProviderError(field: "search_ad_encoded", rule: "first_session_only") { _ = try iOS.build(with: BranchOpenRequestTests.config) }
    }

    // Branch v1/open server-to-server guide: server_to_server_identity "Do not set this property if
    // this feature will not be used"; randomized_bundle_token and identity only make sense with it.
    @Test func serverToServerIdentityRules() throws {
        var request = BranchOpenRequestTests.iOSRequest()
        #expect(try request.bodyFields(BranchOpenRequestTests.config)["server_to_server_identity"] == nil)
        #expect(try request.bodyFields(BranchOpenRequestTests.config)["server_to_server"] == .bool(true))
        request.randomizedBundleToken = "791040498773585647"
        expectProviderError(field: "randomized_bundle_token", rule: "requires_server_to_server_identity") {
            _ = try request.build(with: BranchOpenRequestTests.config)
        }
        request.randomizedBundleToken = nil
        request.identity = "U1923847128356"
        expectProviderError(field: "identity", rule: "requires_server_to_server_identity") {
            _ = try request.build(with: BranchOpenRequestTests.config)
        }
        request.serverToServerIdentity = true
        request.randomizedBundleToken = "791040498773585647"
        request.firstSession = false
        let body = try request.bodyFields(BranchOpenRequestTests.config)
        #expect(body["server_to_server_identity"] == .bool(true))
        #expect(body["randomized_bundle_token"] == .string("791040498773585647"))
        #expect(body["identity"] == .string("U1923847128356"))
        #expect(body["first_session"] == .bool(false))
    }

    // Branch v1/open server-to-server guide: optional strings are omitted when missing; a blank
    // value is refused rather than sent.
    @Test func optionalStringsCannotBeBlank() {
        let setters: [(String, (inout BranchOpenRequest) -> Void)] = [
            ("link_identifier", { $0.linkIdentifier = "" }),
            ("custom_param_1", { $0.customParam1 = " " }),
            ("custom_param_2", { $0.customParam2 = "" }),
            ("custom_param_3", { $0.customParam3 = "\t" }),
            ("model", { $0.model = "" }),
            ("apple_attribution_token", { $0.appleAttributionToken = "" }),
        ]
        for (field, set) in setters {
            var request = BranchOpenRequestTests.iOSRequest()
            set(&request)
            expectProviderError(field: field, rule: "not_blank") { _ = try request.build(with: BranchOpenRequestTests.config) }
        }
    }

    // Branch v1/open server-to-server guide: universal_link_url / android_app_link_url / local_url
    // hold "a Branch or non-Branch web url".
    @Test func linkURLsMustBeWebURLs() throws {
        var request = BranchOpenRequestTests.iOSRequest()
        request.universalLinkURL = "https://branch.app.link/example?utm_medium=test"
        request.androidAppLinkURL = "https://branch.app.link/example?utm_medium=test"
        request.linkIdentifier = "823569794275788167"
        request.localURL = "https://branch.app.link/example?utm_medium=test"
        let body = try request.bodyFields(BranchOpenRequestTests.config)
        #expect(body["universal_link_url"] == .string("https://branch.app.link/example?utm_medium=test"))
        #expect(body["link_identifier"] == .string("823569794275788167"))
        request.universalLinkURL = "example://open?link_click_id=1234"
        expectProviderError(field: "universal_link_url", rule: "web_url") { _ = try request.build(with: BranchOpenRequestTests.config) }
        request.universalLinkURL = nil
        request.firstSession = false
        expectProviderError(field: "local_url", rule: "first_session_only") { _ = try request.build(with: BranchOpenRequestTests.config) }
    }

    // Screen sizes are positive pixel counts; local_ip is an IP address.
    @Test func screenSizesAndLocalIP() throws {
        var request = BranchOpenRequestTests.iOSRequest()
        request.screenHeight = 0
        expectProviderError(field: "screen_height", rule: "positive") { _ = try request.build(with: BranchOpenRequestTests.config) }
        request = BranchOpenRequestTests.iOSRequest()
        request.screenWidth = -5
        expectProviderError(field: "screen_width", rule: "positive") { _ = try request.build(with: BranchOpenRequestTests.config) }
        request = BranchOpenRequestTests.iOSRequest()
        request.localIP = "192.168.1.153"
        #expect(try request.bodyFields(BranchOpenRequestTests.config)["local_ip"] == .string("192.168.1.153"))
        request.localIP = "192.168.1"
        expectProviderError(field: "local_ip", rule: "ip_address") { _ = try request.build(with: BranchOpenRequestTests.config) }
    }
}
