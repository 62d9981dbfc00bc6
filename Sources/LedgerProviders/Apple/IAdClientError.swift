import Foundation

/// The `ADClientError` codes of the Apple Search Ads Attribution API, reported by the app when
/// `requestAttributionDetails` failed instead of phoning home a dictionary.
///
/// - 0 `ADClientErrorUnknown`: "wait a few seconds and try again" (generally connectivity).
/// - 1 `ADClientErrorLimitAdTracking`: "No data will be available about this user's ad taps and
///   conversions" — never ask again for this device.
/// - anything else: the sample code's "For any other errors, you may schedule a time to call the
///   API again", so it is retried like `unknown`.
///
/// Once a dictionary has been retrieved there is nothing more to do: "the values you have
/// retrieved will not change".
public enum IAdClientError: Sendable, Hashable, Codable {
    /// 0, `ADClientErrorUnknown`: retry in a few seconds.
    case unknown
    /// 1, `ADClientErrorLimitAdTracking`: no data, ever.
    case limitAdTracking
    /// Any other code: retried like `unknown`.
    case other(Int)

    /// The error for an `NSError.code` in `ADClientErrorDomain`.
    public init(code: Int) {
        switch code {
        case 0: self = .unknown
        case 1: self = .limitAdTracking
        default: self = .other(code)
        }
    }

    /// The numeric `ADClientError` code.
    public var code: Int {
        switch self {
        case .unknown: 0
        case .limitAdTracking: 1
        case .other(let code): code
        }
    }

    /// What to do about the device's attribution request: retry after `retryDelay` seconds ("a
    /// few seconds"; `iad_unknown_retry`, `iad_other_error_retry`) or stop for good
    /// (`iad_limit_ad_tracking`).
    public func disposition(now: Date, retryDelay: TimeInterval = 5) -> SendDisposition {
        switch self {
        case .unknown:
            .retry(notBefore: now.addingTimeInterval(retryDelay), rule: "iad_unknown_retry")
        case .limitAdTracking:
            .failed(rule: "iad_limit_ad_tracking", detail: "Limit Ad Tracking is on: no attribution data will ever be available.")
        case .other:
            .retry(notBefore: now.addingTimeInterval(retryDelay), rule: "iad_other_error_retry")
        }
    }

    /// Stored as the numeric code.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(code)
    }

    /// Decodes the numeric code.
    public init(from decoder: any Decoder) throws {
        self.init(code: try decoder.singleValueContainer().decode(Int.self))
    }
}
