import Foundation

extension BranchOpenRequest {
    /// Checks every rule of the Branch v1/open server-to-server guide and builds `POST /v1/open`
    /// with a JSON body (keys sorted, so the same facts always give the same bytes) and the headers
    /// `Content-Type: application/json` and `X-IP-Override: <device public IP>`. `branch_key` and
    /// `branch_secret` are marked sensitive.
    public func build(with configuration: BranchConfiguration) throws(ProviderError) -> ProviderRequest {
        let endpoint = configuration.endpoint
        let host = try BranchSingularHTTP.validateEndpoint(
            provider: .branch, scheme: endpoint.scheme, host: endpoint.host, port: endpoint.port)
        try validateHeaderIP(configuration)
        let body = ProviderJSON.object(sortingKeysOf: try bodyFields(configuration)).serialized
        return ProviderRequest(
            provider: .branch, method: .post, scheme: endpoint.scheme, host: host, port: endpoint.port,
            path: Self.path,
            headers: [Header("Content-Type", "application/json"), Header("X-IP-Override", devicePublicIP)],
            body: Data(body.utf8),
            sensitiveFields: [.jsonBodyKey("branch_key"), .jsonBodyKey("branch_secret")])
    }

    /// The body as a dictionary of Branch field names, after every check (exposed for tests and for
    /// callers that want to inspect the body without parsing bytes).
    func bodyFields(_ configuration: BranchConfiguration) throws(ProviderError) -> [String: ProviderJSON] {
        var body: [String: ProviderJSON] = [:]
        body["branch_key"] = .string(try required(configuration.branchKey, "branch_key"))
        body["branch_secret"] = .string(try required(configuration.branchSecret, "branch_secret"))
        body["server_to_server"] = .bool(true)
        body["app_version"] = .string(try required(appVersion, "app_version"))
        body["os"] = .string(os.rawValue)
        if let osVersion, BranchSingularHTTP.isBlank(osVersion) {
            throw fail("os_version", "not_blank", "os_version cannot be blank; omit it to send the default NA.")
        }
        body["os_version"] = .string(osVersion ?? "NA")
        body["user_agent"] = .string(try required(userAgent, "user_agent"))

        try addDeviceIDs(to: &body)

        if let localIP {
            guard BranchIPAddress(localIP) != nil else {
                throw fail("local_ip", "ip_address", "local_ip must be an IPv4 or IPv6 address, got '\(localIP)'.")
            }
            body["local_ip"] = .string(localIP)
        }
        for (field, value) in [("screen_height", screenHeight), ("screen_width", screenWidth)] {
            guard let value else { continue }
            guard value > 0 else { throw fail(field, "positive", "\(field) must be a positive pixel count.") }
            body[field] = .number(String(value))
        }
        try put(model, "model", in: &body)
        if let facebookAppLinkChecked { body["facebook_app_link_checked"] = .bool(facebookAppLinkChecked) }
        try put(linkIdentifier, "link_identifier", in: &body)
        for (field, value) in [
            ("universal_link_url", universalLinkURL), ("android_app_link_url", androidAppLinkURL),
            ("local_url", localURL),
        ] {
            guard let value else { continue }
            guard Self.isWebURL(value) else {
                throw fail(field, "web_url", "\(field) must be an absolute http(s) URL, got '\(value)'.")
            }
            body[field] = .string(value)
        }
        if localURL != nil, firstSession == false {
            throw fail("local_url", "first_session_only", "local_url is for the very first open only (NativeLink).")
        }

        try addPlatformOnlyFields(to: &body)

        if let firstSession { body["first_session"] = .bool(firstSession) }
        if serverToServerIdentity { body["server_to_server_identity"] = .bool(true) }
        for (field, value) in [("randomized_bundle_token", randomizedBundleToken), ("identity", identity)] {
            guard let value else { continue }
            guard serverToServerIdentity else {
                throw fail(
                    field, "requires_server_to_server_identity",
                    "\(field) is used only when server_to_server_identity is true (Branch v1/open server-to-server guide).")
            }
            try put(value, field, in: &body)
        }
        // Branch v1/open server-to-server guide, randomized_bundle_token: "After the first request,
        // this property must be hardcoded with the randomized_bundle_token received in the first
        // network response."
        if serverToServerIdentity, firstSession == false, randomizedBundleToken == nil {
            throw fail(
                "randomized_bundle_token", "required_after_first_open",
                "With server_to_server_identity, every open after the first must carry the randomized_bundle_token "
                    + "of the first answer (Branch v1/open server-to-server guide); wait for that answer before sending this open.")
        }
        if let trackingDisabled { body["tracking_disabled"] = .bool(trackingDisabled) }
        if let disableAdNetworkCallouts { body["disable_ad_network_callouts"] = .bool(disableAdNetworkCallouts) }
        try put(customParam1, "custom_param_1", in: &body)
        try put(customParam2, "custom_param_2", in: &body)
        try put(customParam3, "custom_param_3", in: &body)
        return body
    }

    /// `hardware_id`, `hardware_id_type`, `ios_vendor_id`, `google_advertising_id`,
    /// `advertising_ids`, `is_hardware_id_real` and `ad_tracking_enabled`.
    private func addDeviceIDs(to body: inout [String: ProviderJSON]) throws(ProviderError) {
        var hardwareID: String?
        switch os {
        case .iOS:
            if androidID != nil {
                throw fail("hardware_id", "android_id_android_only", "ANDROID_ID is a hardware_id on Android only.")
            }
            if googleAdvertisingID != nil {
                throw fail("google_advertising_id", "android_only", "google_advertising_id is REQUIRED - ANDROID ONLY.")
            }
            if !advertisingIDs.isEmpty {
                throw fail("advertising_ids", "android_only", "advertising_ids is ANDROID ONLY.")
            }
            let usableIDFA = try uuid(idfa, "hardware_id").flatMap { BranchSingularHTTP.isZeroUUID($0) ? nil : $0 }
            let usableIDFV = try uuid(idfv, "ios_vendor_id").flatMap { BranchSingularHTTP.isZeroUUID($0) ? nil : $0 }
            if let usableIDFA {
                hardwareID = usableIDFA
                body["hardware_id_type"] = .string("idfa")
            } else if let usableIDFV {
                hardwareID = usableIDFV
                body["hardware_id_type"] = .string("vendor_id")
            }
            if let usableIDFV { body["ios_vendor_id"] = .string(usableIDFV) }
        case .android:
            if idfa != nil { throw fail("hardware_id", "idfa_ios_only", "The IDFA is a hardware_id on iOS only.") }
            if idfv != nil { throw fail("ios_vendor_id", "ios_only", "ios_vendor_id is REQUIRED - iOS ONLY.") }
            if let androidID {
                guard !androidID.isEmpty, androidID.count <= 64, androidID.utf8.allSatisfy(BranchSingularHTTP.isHexDigit) else {
                    throw fail("hardware_id", "android_id_hex", "ANDROID_ID must be hexadecimal, got '\(androidID)'.")
                }
                hardwareID = androidID
            }
            if let gaid = try uuid(googleAdvertisingID, "google_advertising_id"), !BranchSingularHTTP.isZeroUUID(gaid) {
                body["google_advertising_id"] = .string(gaid)
            }
            if !advertisingIDs.isEmpty {
                var ids: [String: ProviderJSON] = [:]
                for (name, value) in advertisingIDs {
                    guard !BranchSingularHTTP.isBlank(name), !BranchSingularHTTP.isBlank(value) else {
                        throw fail("advertising_ids", "not_blank", "advertising_ids names and values cannot be blank.")
                    }
                    ids[name] = .string(value)
                }
                body["advertising_ids"] = .object(sortingKeysOf: ids)
            }
        }
        if let hardwareID { body["hardware_id"] = .string(hardwareID) }
        body["is_hardware_id_real"] = .bool(hardwareID != nil)
        if !limitAdTracking { body["ad_tracking_enabled"] = .bool(true) }
    }

    /// The Android-only (install referrer, `referrer_gclid`) and iOS-only (`apple_attribution_token`,
    /// `search_ad_encoded`, `gbraid`) fields, with their first-session rules.
    private func addPlatformOnlyFields(to body: inout [String: ProviderJSON]) throws(ProviderError) {
        let androidFirstSession: [(String, ProviderJSON?)] = [
            ("install_referrer_extras", installReferrerExtras.map(ProviderJSON.string)),
            ("google_search_install_referrer", googleSearchInstallReferrer.map(ProviderJSON.string)),
            ("clicked_referrer_ts", clickedReferrerTimestamp.map { .number(String($0)) }),
            ("install_begin_ts", installBeginTimestamp.map { .number(String($0)) }),
        ]
        for (field, value) in androidFirstSession {
            guard let value else { continue }
            guard os == .android else { throw fail(field, "android_only", "\(field) is ANDROID ONLY (Branch v1/open server-to-server guide).") }
            guard firstSession != false else {
                throw fail(field, "first_session_only", "\(field): only include in the app's first session (Branch v1/open server-to-server guide).")
            }
            switch value {
            case .string(let text) where BranchSingularHTTP.isBlank(text):
                throw fail(field, "not_blank", "\(field) cannot be blank; omit it when unavailable.")
            case .number(let text) where text.hasPrefix("-"):
                throw fail(field, "non_negative", "\(field) is a Unix timestamp and cannot be negative.")
            default: body[field] = value
            }
        }
        if referrerGclid != nil, os != .android {
            throw fail("referrer_gclid", "android_only", "referrer_gclid is ANDROID ONLY (Branch v1/open server-to-server guide).")
        }
        try put(referrerGclid, "referrer_gclid", in: &body)
        for (field, value) in [
            ("apple_attribution_token", appleAttributionToken), ("search_ad_encoded", searchAdEncoded),
            ("gbraid", gbraid),
        ] where value != nil && os != .iOS {
            throw fail(field, "ios_only", "\(field) is iOS ONLY (Branch v1/open server-to-server guide).")
        }
        if searchAdEncoded != nil, firstSession == false {
            throw fail("search_ad_encoded", "first_session_only", "search_ad_encoded: only include in the first session.")
        }
        try put(appleAttributionToken, "apple_attribution_token", in: &body)
        try put(searchAdEncoded, "search_ad_encoded", in: &body)
        try put(gbraid, "gbraid", in: &body)
    }

    private func validateHeaderIP(_ configuration: BranchConfiguration) throws(ProviderError) {
        guard let address = BranchIPAddress(devicePublicIP) else {
            throw fail(
                "X-IP-Override", "ip_address",
                "X-IP-Override must be the device's IPv4 or IPv6 address, got '\(devicePublicIP)'.")
        }
        guard address.isPublic else {
            throw fail(
                "X-IP-Override", "public_ip",
                "X-IP-Override must be the device's public IP; \(devicePublicIP) is private, loopback or reserved.")
        }
        // As hosts, not as text: `2001:db8::9` and `2001:0db8:0:0::9` are one address, and
        // `::ffff:203.0.113.9` is `203.0.113.9`.
        guard !configuration.serverPublicIPs.contains(where: { BranchIPAddress($0)?.unmapped == address.unmapped }) else {
            throw fail(
                "X-IP-Override", "not_server_ip",
                "X-IP-Override must use the device's IP, and not your server's IP (Branch v1/open server-to-server guide).")
        }
    }

    private func required(_ value: String, _ field: String) throws(ProviderError) -> String {
        guard !BranchSingularHTTP.isBlank(value) else { throw fail(field, "required", "\(field) is REQUIRED (Branch v1/open server-to-server guide).") }
        return value
    }

    private func put(_ value: String?, _ field: String, in body: inout [String: ProviderJSON]) throws(ProviderError) {
        guard let value else { return }
        guard !BranchSingularHTTP.isBlank(value) else {
            throw fail(field, "not_blank", "\(field) cannot be blank; omit it when missing (Branch v1/open server-to-server guide).")
        }
        body[field] = .string(value)
    }

    private func uuid(_ value: String?, _ field: String) throws(ProviderError) -> String? {
        guard let value else { return nil }
        guard BranchSingularHTTP.isUUID(value) else {
            throw fail(field, "uuid_format", "\(field) must be a device id in UUID form, got '\(value)'.")
        }
        return value
    }

    private func fail(_ field: String, _ rule: String, _ message: String) -> ProviderError {
        ProviderError(.invalidRequest, provider: .branch, field: field, rule: rule, message: message)
    }

    /// An absolute `http` or `https` URL with a host.
    static func isWebURL(_ text: String) -> Bool {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty
        else { return false }
        return true
    }
}
