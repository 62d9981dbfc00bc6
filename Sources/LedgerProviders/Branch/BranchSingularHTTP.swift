import Foundation

/// HTTP helpers shared by the Branch and Singular builders and classifiers: endpoint checks,
/// Unix-second arithmetic, `Retry-After` parsing and back-off. Pure: every time comes from the
/// caller.
enum BranchSingularHTTP {
    /// Checks a base URL's scheme, host and port (``EndpointRules``) and returns the host as it
    /// must appear in a URL (IPv6 literals in brackets). `http` is refused for anything but a
    /// loopback host because the bodies carry credentials (`branch_secret`, Singular's `a`).
    static func validateEndpoint(
        provider: Provider, scheme: String, host: String, port: Int?
    ) throws(ProviderError) -> String {
        let checked = try EndpointRules.check(scheme: scheme, host: host, port: port, provider: provider)
        if checked.host.contains(":") && !checked.host.hasPrefix("[") { return "[\(checked.host)]" }
        return checked.host
    }

    /// Whole Unix seconds of `date`, truncated toward zero like `(NSInteger)timeIntervalSince1970`
    /// in Singular's snippet; clamped instead of trapping for absurd dates.
    static func unixSeconds(_ date: Date) -> Int64 {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite else { return seconds > 0 ? Int64.max : Int64.min }
        if seconds >= 9.2e18 { return Int64.max }
        if seconds <= -9.2e18 { return Int64.min }
        return Int64(seconds.rounded(.towardZero))
    }

    /// `a - b` without trapping: saturates at the `Int64` bounds.
    static func saturatingDifference(_ a: Int64, _ b: Int64) -> Int64 {
        let (result, overflow) = a.subtractingReportingOverflow(b)
        guard overflow else { return result }
        return b < 0 ? Int64.max : Int64.min
    }

    /// The instant a `Retry-After` header allows, or `nil` when the header is absent or unreadable.
    ///
    /// RFC 9110 §10.2.3: either delay-seconds (`120`) or an HTTP-date; recipients accept the
    /// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) and the two obsolete forms (RFC 850
    /// `Sunday, 06-Nov-94 08:49:37 GMT` and asctime `Sun Nov  6 08:49:37 1994`). The delay is capped
    /// at `maxDelay` so a hostile header cannot park a send for ever; a date in the past means now.
    static func retryAfter(_ header: String?, now: Date, maxDelay: TimeInterval) -> Date? {
        guard let text = header?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        if text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            let seconds = text.count > 12 ? maxDelay : min(maxDelay, Double(Int64(text) ?? 0))
            return now.addingTimeInterval(seconds)
        }
        guard let when = parseHTTPDate(text) else { return nil }
        let delay = min(maxDelay, max(0, when.timeIntervalSince(now)))
        return now.addingTimeInterval(delay)
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// Parses the three HTTP-date forms (GMT only). Returns `nil` for anything else.
    static func parseHTTPDate(_ text: String) -> Date? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        var day: Int?, month: Int?, year: Int?, time: String?
        if parts.count == 6, parts[0].hasSuffix(","), parts[5] == "GMT" {
            // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
            day = strictInt(parts[1], digits: 1...2)
            month = monthIndex(parts[2])
            year = strictInt(parts[3], digits: 4...4)
            time = parts[4]
        } else if parts.count == 4, parts[0].hasSuffix(","), parts[3] == "GMT" {
            // RFC 850: Sunday, 06-Nov-94 08:49:37 GMT
            let dateParts = parts[1].split(separator: "-").map(String.init)
            guard dateParts.count == 3 else { return nil }
            day = strictInt(dateParts[0], digits: 2...2)
            month = monthIndex(dateParts[1])
            if let yy = strictInt(dateParts[2], digits: 2...2) { year = yy >= 70 ? 1900 + yy : 2000 + yy }
            time = parts[2]
        } else if parts.count == 5 {
            // asctime: Sun Nov  6 08:49:37 1994
            month = monthIndex(parts[1])
            day = strictInt(parts[2], digits: 1...2)
            time = parts[3]
            year = strictInt(parts[4], digits: 4...4)
        }
        guard let day, let month, let year, let time else { return nil }
        let clock = time.split(separator: ":").map(String.init)
        guard clock.count == 3, let hour = strictInt(clock[0], digits: 2...2),
            let minute = strictInt(clock[1], digits: 2...2), let second = strictInt(clock[2], digits: 2...2),
            hour < 24, minute < 60, second < 61, day >= 1, day <= daysIn(month: month, year: year)
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let total = days * 86_400 + Int64(hour * 3600 + minute * 60 + second)
        return Date(timeIntervalSince1970: TimeInterval(total))
    }

    private static func strictInt(_ text: String, digits: ClosedRange<Int>) -> Int? {
        guard digits.contains(text.count), text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        return Int(text)
    }

    private static func monthIndex(_ text: String) -> Int? {
        guard text.count == 3, let index = months.firstIndex(of: text.lowercased()) else { return nil }
        return index + 1
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let m = Int64(month)
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + Int64(day) - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// `true` when `text` is empty or only whitespace.
    static func isBlank(_ text: String) -> Bool { text.allSatisfy(\.isWhitespace) }

    /// `true` for the canonical 8-4-4-4-12 hexadecimal UUID text (either case).
    static func isUUID(_ text: String) -> Bool {
        let groups = text.split(separator: "-", omittingEmptySubsequences: false)
        guard groups.map(\.count) == [8, 4, 4, 4, 12] else { return false }
        return groups.allSatisfy { $0.utf8.allSatisfy(isHexDigit) }
    }

    /// `true` when `text` is a UUID made only of zeros: what iOS and Android return for the
    /// advertising id when tracking is not allowed, i.e. "not available".
    static func isZeroUUID(_ text: String) -> Bool {
        isUUID(text) && text.utf8.allSatisfy { $0 == UInt8(ascii: "0") || $0 == UInt8(ascii: "-") }
    }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        (48...57).contains(byte) || (65...70).contains(byte) || (97...102).contains(byte)
    }
}
