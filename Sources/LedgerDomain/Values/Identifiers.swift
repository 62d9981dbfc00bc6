import Foundation

/// The ledger's identifier of one customer app, e.g. `com.example.game` or `1234567890`.
///
/// It is part of every device stream id (`device-<app>/<device>`), so it holds only the characters
/// a stream id may hold: ASCII letters, digits, `.`, `_`, `:` and `-`; 1–100 of them, which leaves
/// room for a 128-character ``DeviceID`` inside the store's 256-character stream ids.
public struct AppID: ValidatedString {
    /// The identifier as given.
    public let rawValue: String

    /// The longest accepted app id.
    public static let maximumLength = 100

    /// Validates `rawValue`.
    /// - Throws: `non_empty`, `max_100_characters` or `stream_safe_characters`.
    public init(_ rawValue: String) throws(RuleViolation) {
        if rawValue.isEmpty {
            throw RuleViolation(rule: "non_empty", message: "An app id must not be empty.")
        }
        if rawValue.unicodeScalars.count > Self.maximumLength {
            throw RuleViolation(rule: "max_100_characters", message: "An app id is at most 100 characters long.")
        }
        if !StreamID.isStreamSafe(rawValue) {
            throw RuleViolation(
                rule: "stream_safe_characters",
                message: "An app id may hold only ASCII letters, digits, '.', '_', ':' and '-'.")
        }
        self.rawValue = rawValue
    }
}

/// The ledger's identifier of one device of one app: the app's own install id, chosen by the
/// backend that appends the device's events.
///
/// Rules: 1–128 Unicode scalars, no control characters. Because it names a stream, which can never
/// be erased, it should be a pseudonymous install id — never an IDFA, IDFV, GAID or other identifier
/// a third party knows. A device id with characters a stream id cannot hold (anything but ASCII
/// letters, digits, `.`, `_`, `:`, `-`) is a valid `DeviceID` but ``StreamID/device(app:device:)``
/// refuses it.
public struct DeviceID: ValidatedString {
    /// The identifier as given.
    public let rawValue: String

    /// The longest accepted device id.
    public static let maximumLength = 128

    /// Validates `rawValue`.
    /// - Throws: `non_empty`, `max_128_characters` or `no_control_characters`.
    public init(_ rawValue: String) throws(RuleViolation) {
        do {
            try Check.text(rawValue, "", max: Self.maximumLength)
        } catch {
            throw RuleViolation(rule: error.rule, message: error.message)
        }
        self.rawValue = rawValue
    }
}
