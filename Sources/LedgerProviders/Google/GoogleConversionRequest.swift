import Foundation

/// Builds the Google App Conversion Tracking API's conversion tracking request and its
/// cross-network attribution request, purely.
///
/// Query parameters go in the order of the document's samples (`dev_token`, `link_id`,
/// `app_event_type`, `app_event_name`, `rdid`, `id_type`, `lat`, `app_version`, `os_version`,
/// `sdk_version`, `timestamp`, `value`, `currency_code`, `gclid`, then `gbraid`; the cross-network
/// request appends `ad_event_id`, `attributed`). Headers: `User-Agent`, `X-Forwarded-For`,
/// `Content-Type: application/json; charset=utf-8` (as every sample shows), and `Content-Length: 0`
/// when there is no body ("our server requires that you explicitly set the Content-Length: 0
/// header"). `dev_token` is marked sensitive, so ``ProviderRequest/redacted()`` hides it.
public struct GoogleConversionRequestBuilder: Sendable {
    /// The credentials for the app.
    public var link: GoogleAppLink
    /// Where requests go.
    public var endpoint: GoogleEndpoint
    /// The product the app User-Agent names (its `name/version`): the ledger's, unless configured.
    public var product: GoogleUserAgentProduct

    /// "/pagead/conversion/app/version … Currently the only valid version is 1.0."
    public static let conversionPath = "/pagead/conversion/app/1.0"
    /// The cross-network attribution path.
    public static let crossNetworkPath = "/pagead/conversion/app/1.0/cross_network"
    /// The content type every sample request carries.
    public static let contentType = "application/json; charset=utf-8"

    /// A builder for one app, towards production and naming the ledger unless told otherwise.
    public init(link: GoogleAppLink, endpoint: GoogleEndpoint = .production, product: GoogleUserAgentProduct = .ledger) {
        self.link = link
        self.endpoint = endpoint
        self.product = product
    }

    /// The conversion tracking request: `POST /pagead/conversion/app/1.0?…`.
    ///
    /// - Throws: `ProviderError` naming the parameter or header and the rule broken.
    public func conversionRequest(for event: GoogleConversionEvent) throws(ProviderError) -> ProviderRequest {
        try Self.checkPresent(link.devToken, field: "dev_token")
        try Self.checkPresent(link.linkID, field: "link_id")
        try Self.validate(event)
        var query = [QueryItem("dev_token", link.devToken), QueryItem("link_id", link.linkID)]
        query.append(QueryItem("app_event_type", event.appEventType.rawValue))
        if let name = event.appEventName { query.append(QueryItem("app_event_name", name)) }
        query.append(QueryItem("rdid", event.rdid))
        query.append(QueryItem("id_type", event.platform.idType))
        query.append(QueryItem("lat", event.limitAdTracking ? "1" : "0"))
        query.append(QueryItem("app_version", event.appVersion))
        query.append(QueryItem("os_version", event.osVersion))
        query.append(QueryItem("sdk_version", event.sdkVersion ?? event.appVersion))
        query.append(QueryItem("timestamp", event.timestamp.text))
        if event.hasValue, let value = event.value { query.append(QueryItem("value", value)) }
        if let currency = event.currencyCode { query.append(QueryItem("currency_code", currency)) }
        if let gclid = event.gclid { query.append(QueryItem("gclid", gclid)) }
        if let gbraid = event.gbraid { query.append(QueryItem("gbraid", gbraid)) }

        let body = try event.eventData.requestBody()
        var headers = [
            Header("User-Agent", try event.userAgent.headerValue()),
            Header("X-Forwarded-For", event.deviceIP),
            Header("Content-Type", Self.contentType),
        ]
        if body == nil { headers.append(Header("Content-Length", "0")) }
        return ProviderRequest(
            provider: .google, method: .post, scheme: endpoint.scheme, host: endpoint.host, port: endpoint.port,
            path: Self.conversionPath, query: query, headers: headers, body: body,
            sensitiveFields: [.query("dev_token")])
    }

    /// The cross-network attribution request for `event`: "identical to the original conversion
    /// tracking request" on `/pagead/conversion/app/1.0/cross_network`, plus `ad_event_id` (from
    /// the ad event Google answered) and `attributed` (`1` if Google got the credit, else `0`).
    public func crossNetworkRequest(
        for event: GoogleConversionEvent, adEventID: String, attributed: Bool
    ) throws(ProviderError) -> ProviderRequest {
        try Self.crossNetworkRequest(derivedFrom: conversionRequest(for: event), adEventID: adEventID, attributed: attributed)
    }

    /// The cross-network attribution request derived from an already built (not redacted)
    /// conversion request.
    ///
    /// - Throws: `ProviderError` on `ad_event_id` (`required`), `path` (`conversion_request_only`),
    ///   `dev_token` (`not_redacted`: a stored, redacted request cannot be replayed).
    public static func crossNetworkRequest(
        derivedFrom original: ProviderRequest, adEventID: String, attributed: Bool
    ) throws(ProviderError) -> ProviderRequest {
        try checkPresent(adEventID, field: "ad_event_id")
        guard original.provider == .google, original.path == conversionPath,
            original.queryValue("ad_event_id") == nil, original.queryValue("attributed") == nil
        else {
            throw ProviderError(
                .invalidRequest, provider: .google, field: "path", rule: "conversion_request_only",
                message: "A cross-network request derives from a conversion request on \(conversionPath) (Google App Conversion Tracking API).")
        }
        guard let token = original.queryValue("dev_token"), token != ProviderRequest.redactedMarker else {
            throw ProviderError(
                .invalidRequest, provider: .google, field: "dev_token", rule: "not_redacted",
                message: "The original request's dev_token is redacted; rebuild it from the stored event instead.")
        }
        var request = original
        request.path = crossNetworkPath
        request.query.append(QueryItem("ad_event_id", adEventID))
        request.query.append(QueryItem("attributed", attributed ? "1" : "0"))
        return request
    }

    /// Checks every rule of the Google App Conversion Tracking API's parameter table that concerns
    /// the event itself.
    public static func validate(_ event: GoogleConversionEvent) throws(ProviderError) {
        try validateEventName(event)
        guard isUUID(event.rdid) else {
            throw failure("rdid", "uuid", "rdid must be a valid UUID string, e.g. f10e1de2-e237-4f50-b6aa-843c45cc63d6.")
        }
        try checkPresent(event.appVersion, field: "app_version")
        try checkPresent(event.osVersion, field: "os_version")
        if let sdk = event.sdkVersion { try checkPresent(sdk, field: "sdk_version") }
        guard event.timestamp.microsecondsSince1970 > 0 else {
            throw failure("timestamp", "positive", "timestamp must be a UNIX timestamp after 1970.")
        }
        if event.hasValue, let value = event.value, !(GoogleAppleJSON.isPlainDecimalText(value) && value.contains(".")) {
            throw failure(
                "value", "decimal_point_no_exponent_no_grouping",
                "value must \"always be formatted as a machine-readable floating point value using a decimal point\", "
                    + "e.g. 1.99 — no exponent, no grouping.")
        }
        if let currency = event.currencyCode {
            guard currency.utf8.count == 3, currency.utf8.allSatisfy({ $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) else {
                throw failure("currency_code", "iso_4217", "currency_code must be an ISO 4217 code such as USD.")
            }
        } else if event.hasValue {
            throw failure("currency_code", "required_with_value", "currency_code is required when value is provided and not blank.")
        }
        if let gclid = event.gclid { try checkPresent(gclid, field: "gclid", rule: "not_blank") }
        if let gbraid = event.gbraid { try checkPresent(gbraid, field: "gbraid", rule: "not_blank") }
        try event.userAgent.validated()
        try GoogleDeviceIPAddress.validate(event.deviceIP)
        _ = try event.eventData.jsonValue()
    }

    /// `app_event_name`: "required if app_event_type is custom"; "1 to 64 Unicode characters";
    /// "must not contain any of the values reserved for app_event_type" (else Google answers
    /// `APP_EVENT_NAME_RESERVED_VALUE`). Characters are counted as Unicode scalars (code points);
    /// reserved values are matched case-insensitively, to catch `First_Open` before Google does.
    static func validateEventName(_ event: GoogleConversionEvent) throws(ProviderError) {
        guard event.appEventType == .custom else {
            guard event.appEventName == nil else {
                throw failure("app_event_name", "only_for_custom", "app_event_name names a custom event; app_event_type is \(event.appEventType.rawValue).")
            }
            return
        }
        guard let name = event.appEventName, !name.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw failure("app_event_name", "required_for_custom", "app_event_name is required when app_event_type is custom.")
        }
        guard (1...64).contains(name.unicodeScalars.count) else {
            throw failure("app_event_name", "length_1_64", "app_event_name must be 1 to 64 Unicode characters.")
        }
        if GoogleAppEventType.allCases.contains(where: { $0.rawValue == name.lowercased() }) {
            throw failure(
                "app_event_name", "app_event_name_reserved_value",
                "app_event_name must not be a value reserved for app_event_type (\(name)); Google would answer APP_EVENT_NAME_RESERVED_VALUE.")
        }
    }

    /// 8-4-4-4-12 hexadecimal digits, either case; the all-zero UUID is valid.
    public static func isUUID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (offset, byte) in bytes.enumerated() {
            if [8, 13, 18, 23].contains(offset) {
                guard byte == UInt8(ascii: "-") else { return false }
            } else {
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
                    UInt8(ascii: "A")...UInt8(ascii: "F"):
                    continue
                default: return false
                }
            }
        }
        return true
    }

    static func checkPresent(_ value: String, field: String, rule: String = "required") throws(ProviderError) {
        guard !value.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw failure(field, rule, "\(field) is required and must not be blank.")
        }
    }

    static func failure(_ field: String, _ rule: String, _ message: String) -> ProviderError {
        ProviderError(.invalidRequest, provider: .google, field: field, rule: rule, message: message + " (Google App Conversion Tracking API)")
    }
}
