import Foundation

/// A Unix timestamp in UTC with microsecond precision, held exactly as an integer count of
/// microseconds.
///
/// The Google App Conversion Tracking API writes timestamps as "UNIX timestamp … in seconds with up
/// to microseconds precision" (`1432681913.123456`) in the `timestamp` query parameter, in
/// `app_event_data` and in each `ad_events[].timestamp` of the answer, which "should be used for
/// last-click attribution". A `Double` cannot hold that exactly and `"\(double)"` may print an
/// exponent, so this type keeps microseconds as an `Int64` and formats them itself.
public struct GoogleTimestamp: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// Microseconds since 1970-01-01T00:00:00Z.
    public let microsecondsSince1970: Int64

    /// A timestamp from a microsecond count.
    public init(microsecondsSince1970: Int64) {
        self.microsecondsSince1970 = microsecondsSince1970
    }

    /// A timestamp from a `Date`, rounded to the nearest microsecond.
    ///
    /// - Throws: `ProviderError` (`timestamp`, `finite`) for a date that is not finite or lies
    ///   outside ±292,000 years.
    public init(_ date: Date) throws(ProviderError) {
        let micros = (date.timeIntervalSince1970 * 1_000_000).rounded()
        guard micros.isFinite, micros > -9.2e18, micros < 9.2e18 else {
            throw ProviderError(
                .invalidRequest, provider: .google, field: "timestamp", rule: "finite",
                message: "The timestamp must be a finite date.")
        }
        self.microsecondsSince1970 = Int64(micros)
    }

    /// Reads the document's textual form strictly: optional `-`, 1–12 digits of seconds, then
    /// optionally `.` and 1–6 digits (Google App Conversion Tracking API: "up to microseconds
    /// precision"). No exponent, no grouping, no spaces.
    ///
    /// - Throws: `ProviderError` on `field` with rule `unix_seconds_up_to_6_decimals`.
    public init(text: String, field: String = "timestamp") throws(ProviderError) {
        guard let micros = Self.microseconds(plainText: text, maxFractionDigits: 6) else {
            throw ProviderError(
                .invalidRequest, provider: .google, field: field, rule: "unix_seconds_up_to_6_decimals",
                message: "\(field) must be Unix seconds with up to 6 decimals (e.g. 1432681913.123456), "
                    + "without exponent or grouping (Google App Conversion Tracking API).")
        }
        self.microsecondsSince1970 = micros
    }

    /// Reads a JSON number from an answer leniently: more than six decimals are rounded to the
    /// microsecond and an exponent is resolved, but values beyond ±10¹² seconds are refused.
    init?(jsonNumber text: String) {
        var plain = text
        if text.contains(where: { $0 == "e" || $0 == "E" }) {
            guard text.utf8.count <= 64, let decimal = Decimal(string: text), decimal.isFinite else { return nil }
            plain = decimal.description
            guard !plain.contains(where: { $0 == "e" || $0 == "E" }) else { return nil }
        }
        guard let micros = Self.microseconds(plainText: plain, maxFractionDigits: nil) else { return nil }
        self.microsecondsSince1970 = micros
    }

    /// The instant as a `Date` (to the precision a `Double` allows).
    public var date: Date { Date(timeIntervalSince1970: Double(microsecondsSince1970) / 1_000_000) }

    /// The text sent to Google: whole seconds without decimals (`1478713087`), otherwise exactly six
    /// decimals (`1432681913.123456`, `1073513982.123000`), as the Google App Conversion Tracking
    /// API's examples show. Never an exponent.
    public var text: String {
        let magnitude = microsecondsSince1970.magnitude
        let seconds = magnitude / 1_000_000
        let fraction = magnitude % 1_000_000
        let sign = microsecondsSince1970 < 0 ? "-" : ""
        guard fraction != 0 else { return "\(sign)\(seconds)" }
        let digits = String(fraction)
        return "\(sign)\(seconds)." + String(repeating: "0", count: 6 - digits.count) + digits
    }

    /// The text sent to Google.
    public var description: String { text }

    /// Chronological order (last click is the greatest).
    public static func < (lhs: GoogleTimestamp, rhs: GoogleTimestamp) -> Bool {
        lhs.microsecondsSince1970 < rhs.microsecondsSince1970
    }

    /// Stored as a JSON number with the same digits as ``text`` (through `Decimal`, exact).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        guard let decimal = Decimal(string: text) else {
            throw EncodingError.invalidValue(self, .init(codingPath: encoder.codingPath, debugDescription: text))
        }
        try container.encode(decimal)
    }

    /// Decodes a stored JSON number exactly.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let decimal = try container.decode(Decimal.self)
        guard let value = GoogleTimestamp(jsonNumber: decimal.description) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "Not a Unix timestamp: \(decimal)")
        }
        self = value
    }

    /// Parses `-?digits(.digits)?`; with `maxFractionDigits` set, more decimals are refused,
    /// otherwise they are rounded half away from zero.
    static func microseconds(plainText text: String, maxFractionDigits: Int?) -> Int64? {
        var rest = Substring(text)
        let negative = rest.first == "-"
        if negative { rest = rest.dropFirst() }
        let parts = rest.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let whole = parts[0]
        let fraction = parts.count > 1 ? parts[1] : ""
        func allDigits(_ part: Substring) -> Bool {
            part.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        }
        guard !whole.isEmpty, whole.count <= 12, allDigits(whole), allDigits(fraction) else { return nil }
        if parts.count > 1, fraction.isEmpty { return nil }
        if let maxFractionDigits, fraction.count > maxFractionDigits { return nil }
        guard let seconds = Int64(whole) else { return nil }
        let kept = String(fraction.prefix(6))
        var micros = Int64(kept + String(repeating: "0", count: 6 - kept.count)) ?? 0
        if fraction.count > 6, let next = fraction.dropFirst(6).first, next >= "5" { micros += 1 }
        let total = seconds * 1_000_000 + micros
        return negative ? -total : total
    }
}
