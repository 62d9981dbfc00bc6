import Foundation

/// The Google App Conversion Tracking API's conversion tracking response:
/// `{"ad_events": [<ad event objects>], "errors": [<error strings>], "attributed": true|false}`.
/// "Both the ad_events and errors arrays may be empty." Unknown keys are ignored; an absent array
/// reads as empty; `attributed` is required (it is the answer).
public struct GoogleConversionResponse: Sendable, Hashable, Codable {
    /// The ad events that preceded the conversion, as Google listed them. An answer with
    /// `attributed: false` may list some too; only ``claimedAdEvents`` count for attribution.
    public var adEvents: [GoogleAdEvent]
    /// Machine-readable error codes, e.g. `INVALID_CURRENCY_CODE`.
    public var errors: [GoogleErrorCode]
    /// Whether Google attributes the conversion to one of its ads.
    public var attributed: Bool

    enum CodingKeys: String, CodingKey {
        case adEvents = "ad_events"
        case errors
        case attributed
    }

    /// An answer from its parts (for tests and stored values).
    public init(adEvents: [GoogleAdEvent] = [], errors: [GoogleErrorCode] = [], attributed: Bool) {
        self.adEvents = adEvents
        self.errors = errors
        self.attributed = attributed
    }

    /// Parses an answer body.
    ///
    /// - Throws: `ProviderError` (`malformedResponse`) naming the JSON path and the rule
    ///   (`not_json`, `too_deep`, `missing`, `wrong_type`, `integer`, `integer_out_of_range`,
    ///   `unix_seconds`). Never traps, whatever the bytes.
    public static func parse(_ body: Data) throws(ProviderError) -> GoogleConversionResponse {
        let root = try ProviderJSONObject(GoogleAppleJSON.parse(body, provider: .google), provider: .google)
        var adEvents: [GoogleAdEvent] = []
        for (index, item) in (try root.optionalArray("ad_events") ?? []).enumerated() {
            adEvents.append(try GoogleAdEvent(ProviderJSONObject(item, provider: .google, path: "ad_events[\(index)]")))
        }
        var errors: [GoogleErrorCode] = []
        for (index, item) in (try root.optionalArray("errors") ?? []).enumerated() {
            guard case .string(let code) = item else {
                throw root.wrongType("errors[\(index)]", expected: "string", found: item)
            }
            errors.append(GoogleErrorCode(code))
        }
        return GoogleConversionResponse(adEvents: adEvents, errors: errors, attributed: try root.requiredBool("attributed"))
    }

    /// The ad events Google claims the conversion for: all of them when `attributed` is true,
    /// none otherwise. Only "when Google answers affirmatively" does an ad event become a
    /// candidate for the decision and an obligation to report (a cross-network attribution
    /// request); ad events listed beside `attributed: false` claim nothing.
    public var claimedAdEvents: [GoogleAdEvent] { attributed ? adEvents : [] }

    /// The claimed ad event to use for last-click attribution: the one with the latest
    /// `timestamp` ("This value should be used for last-click attribution"); `nil` when Google
    /// claims nothing.
    public var lastClick: GoogleAdEvent? { claimedAdEvents.max { $0.timestamp < $1.timestamp } }
}

/// One error code of `errors[]`. Google writes codes in either case (`TIMESTAMP_INVALID`,
/// `timestamp_invalid`; the document itself says `invalid_timestamp`), so codes compare
/// case-insensitively through ``canonical``; unknown codes are kept as received.
public struct GoogleErrorCode: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Codes named by the Google App Conversion Tracking API and by field experience.
    public enum Known: String, Sendable, Hashable, CaseIterable {
        /// The Google App Conversion Tracking API's sample error.
        case invalidCurrencyCode = "INVALID_CURRENCY_CODE"
        /// `app_event_name` is a reserved `app_event_type` value.
        case appEventNameReservedValue = "APP_EVENT_NAME_RESERVED_VALUE"
        /// Answered when the device clock runs ahead (field experience).
        case timestampInvalid = "TIMESTAMP_INVALID"
        /// The Google App Conversion Tracking API's example spelling (`invalid_timestamp`).
        case invalidTimestamp = "INVALID_TIMESTAMP"
    }

    /// The code exactly as Google sent it.
    public let raw: String

    /// A code as received.
    public init(_ raw: String) { self.raw = raw }

    /// The code upper-cased (ASCII), for comparisons and metrics.
    public var canonical: String { raw.uppercased() }

    /// The known code this is, matched case-insensitively, or `nil`.
    public var known: Known? { Known(rawValue: canonical) }

    /// Whether this is `code`, whatever the case.
    public func matches(_ code: Known) -> Bool { known == code }

    /// The code as received.
    public var description: String { raw }

    /// Codes are equal whatever their case.
    public static func == (lhs: GoogleErrorCode, rhs: GoogleErrorCode) -> Bool { lhs.canonical == rhs.canonical }
    /// Hashes the canonical form, consistently with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(canonical) }

    /// Stored as the raw string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(raw)
    }

    /// Decodes the raw string.
    public init(from decoder: any Decoder) throws {
        self.raw = try decoder.singleValueContainer().decode(String.self)
    }
}
