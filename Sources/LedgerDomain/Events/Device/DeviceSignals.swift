import Foundation

/// The app fetched an AdServices attribution token after the first launch (for instance a fresh
/// one after the user authorized tracking, which yields Apple's detailed payload). Causes an Apple
/// AdServices token lookup unless the same token was already looked up.
///
/// Stream: `device-<app>/<device>`. JSON: `{"token": …, "issued_at": …}`.
public struct AdServicesTokenReceived: LedgerEvent {
    /// The stored type name (see ``LedgerEvent/eventType``).
    public static let eventType = "AdServicesTokenReceived"
    /// The version of this JSON shape.
    public static let schemaVersion = 1
    /// What the event is about.
    public static let category = EventCategory.device
    /// The category of the streams it is appended to.
    public static let streamCategory = StreamCategory.device
    /// The fields the privacy layer encrypts per device (see ``LedgerEvent/personalFields``).
    public static let personalFields: [String] = []

    /// The token and when the app got it.
    public var token: AdServicesToken

    /// Creates the event.
    public init(token: AdServicesToken) { self.token = token }

    /// Decodes the JSON shape described above; invalid values throw `dataCorrupted` carrying a ``RuleViolation``.
    public init(from decoder: any Decoder) throws { token = try AdServicesToken(from: decoder) }
    /// Encodes the JSON shape described above.
    public func encode(to encoder: any Encoder) throws { try token.encode(to: encoder) }

    /// A non-empty token.
    public func validate() throws(RuleViolation) { try token.validate(at: "") }
}

/// A link opened the already-installed app. Recorded for the record and for Branch/Google
/// re-engagement; the following `SessionStarted` carries the same link for the providers.
///
/// Stream: `device-<app>/<device>`. JSON: the ``DeepLink`` fields at top level.
public struct DeepLinkOpened: LedgerEvent {
    /// The stored type name (see ``LedgerEvent/eventType``).
    public static let eventType = "DeepLinkOpened"
    /// The version of this JSON shape.
    public static let schemaVersion = 1
    /// What the event is about.
    public static let category = EventCategory.device
    /// The category of the streams it is appended to.
    public static let streamCategory = StreamCategory.device
    /// The fields the privacy layer encrypts per device (see ``LedgerEvent/personalFields``).
    public static let personalFields = DeepLink.personalFields

    /// The link and its click identifiers.
    public var link: DeepLink

    /// Creates the event.
    public init(link: DeepLink) { self.link = link }

    /// Decodes the JSON shape described above; invalid values throw `dataCorrupted` carrying a ``RuleViolation``.
    public init(from decoder: any Decoder) throws { link = try DeepLink(from: decoder) }
    /// Encodes the JSON shape described above.
    public func encode(to encoder: any Encoder) throws { try link.encode(to: encoder) }

    /// A URL with a scheme; click ids of at most 512 characters.
    public func validate() throws(RuleViolation) { try link.validate(at: "") }
}

/// What Apple's legacy iAd framework (`ADClient.requestAttributionDetails`) answered, phoned home
/// once by the app. Kept as received because its shape is Apple's and changed over time (it
/// arrives wrapped, e.g. `{"Version3.1": {"iad-attribution": "true", …}}`, with string values).
/// Since 2023 it only ever says `iad-attribution` false or errs; an iAd false never outweighs an
/// AdServices true.
///
/// Stream: `device-<app>/<device>`.
public struct IAdAttributionDetailsReceived: LedgerEvent {
    /// The stored type name (see ``LedgerEvent/eventType``).
    public static let eventType = "IAdAttributionDetailsReceived"
    /// The version of this JSON shape.
    public static let schemaVersion = 1
    /// What the event is about.
    public static let category = EventCategory.device
    /// The category of the streams it is appended to.
    public static let streamCategory = StreamCategory.device
    /// The fields the privacy layer encrypts per device (see ``LedgerEvent/personalFields``).
    public static let personalFields: [String] = []

    /// The attribution dictionary exactly as received (a JSON object), when the call succeeded.
    /// It describes campaigns, not the device, so it is not marked personal.
    public var details: JSONValue?
    /// The `ADClientError` code when the call failed: 0 unknown (retry later), 1 limit ad
    /// tracking (no data will ever come). Other codes are kept as they are.
    public var errorCode: Int?

    /// `ADClientErrorUnknown`: try again in a few seconds.
    public static let errorUnknown = 0
    /// `ADClientErrorLimitAdTracking`: no attribution data will ever exist for this device.
    public static let errorLimitAdTracking = 1

    /// Creates the event.
    public init(details: JSONValue? = nil, errorCode: Int? = nil) {
        self.details = details
        self.errorCode = errorCode
    }

    enum CodingKeys: String, CodingKey {
        case details
        case errorCode = "error_code"
    }

    /// Exactly one of `details` (an object) and `error_code` (zero or more).
    public func validate() throws(RuleViolation) {
        switch (details, errorCode) {
        case (.some(.object), nil):
            return
        case (.some, nil):
            throw RuleViolation(field: "details", rule: "json_object", message: "The attribution details must be a JSON object.")
        case (nil, .some(let code)):
            try Check.atLeast(code, 0, "error_code")
        default:
            throw RuleViolation(
                field: "details", rule: "details_xor_error_code",
                message: "Exactly one of 'details' and 'error_code' is given: the call either answered or failed.")
        }
    }
}

/// The user's tracking consent changed (ATT on iOS, limit-ad-tracking on Android). Later requests
/// use the new state; an authorization on iOS makes a fresh AdServices token worth fetching.
///
/// Stream: `device-<app>/<device>`.
public struct TrackingConsentChanged: LedgerEvent {
    /// The stored type name (see ``LedgerEvent/eventType``).
    public static let eventType = "TrackingConsentChanged"
    /// The version of this JSON shape.
    public static let schemaVersion = 1
    /// What the event is about.
    public static let category = EventCategory.device
    /// The category of the streams it is appended to.
    public static let streamCategory = StreamCategory.device
    /// The fields the privacy layer encrypts per device (see ``LedgerEvent/personalFields``).
    public static let personalFields = ["idfa", "gaid"]

    /// The new ATT status (iOS 14+).
    public var attStatus: ATTStatus?
    /// The new limit-ad-tracking flag (Android, or iOS before 14).
    public var limitAdTracking: Bool?
    /// The IDFA that became available with an authorization. Personal.
    public var idfa: String?
    /// The advertising id after the change (Android; zeroed when tracking is limited). Personal.
    public var gaid: String?

    /// Creates the event.
    public init(attStatus: ATTStatus? = nil, limitAdTracking: Bool? = nil, idfa: String? = nil, gaid: String? = nil) {
        self.attStatus = attStatus
        self.limitAdTracking = limitAdTracking
        self.idfa = idfa
        self.gaid = gaid
    }

    enum CodingKeys: String, CodingKey {
        case attStatus = "att_status"
        case limitAdTracking = "limit_ad_tracking"
        case idfa, gaid
    }

    /// At least one of `att_status` and `limit_ad_tracking`; identifiers are UUIDs.
    public func validate() throws(RuleViolation) {
        guard attStatus != nil || limitAdTracking != nil else {
            throw RuleViolation(
                field: "att_status", rule: "status_required",
                message: "A consent change names the new 'att_status' or 'limit_ad_tracking'.")
        }
        try Check.uuidText(idfa, "idfa")
        try Check.uuidText(gaid, "gaid")
    }
}
