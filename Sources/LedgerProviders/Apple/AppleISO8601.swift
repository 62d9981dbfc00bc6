import Foundation

/// ISO-8601 date-times as Apple writes them, read without `DateFormatter` (no locale, no time-zone
/// database, no shared mutable state).
///
/// Accepted: `YYYY-MM-DDTHH:MM` with optional `:SS` and optional fraction (any number of digits),
/// then a zone: `Z`, `±HH:MM`, `±HHMM` or `±HH`. AdServices writes minutes only
/// (`2024-10-08T17:17Z` in the Apple AdServices attribution API); iAd writes seconds
/// (`2020-06-29T18:50:16Z`); a fraction (`…16.123Z`) is accepted too. A zone is required: a bare
/// local time would have to be guessed.
enum AppleISO8601 {
    /// The instant `text` denotes, or `nil` when it is not such a date-time.
    static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        var index = 0
        func digits(_ count: Int) -> Int? {
            guard index + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[index..<index + count] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            index += count
            return value
        }
        func expect(_ character: Character) -> Bool {
            guard index < bytes.count, let ascii = character.asciiValue, bytes[index] == ascii else { return false }
            index += 1
            return true
        }
        guard let year = digits(4), expect("-"), let month = digits(2), expect("-"), let day = digits(2) else { return nil }
        guard expect("T") || expect("t") else { return nil }
        guard let hour = digits(2), expect(":"), let minute = digits(2) else { return nil }
        var second = 0
        var fraction = 0.0
        if expect(":") {
            guard let parsed = digits(2) else { return nil }
            second = parsed
            if expect(".") || expect(",") {
                let start = index
                while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") { index += 1 }
                guard index > start, index - start <= 9 else { return nil }
                fraction = Double("0." + String(decoding: bytes[start..<index], as: UTF8.self)) ?? 0
            }
        }
        var offsetSeconds = 0
        if expect("Z") || expect("z") {
            offsetSeconds = 0
        } else if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            let sign = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
            guard let zoneHours = digits(2), zoneHours <= 23 else { return nil }
            var zoneMinutes = 0
            if index < bytes.count {
                _ = expect(":")
                guard let parsed = digits(2), parsed <= 59 else { return nil }
                zoneMinutes = parsed
            }
            offsetSeconds = sign * (zoneHours * 3_600 + zoneMinutes * 60)
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysInMonth(year: year, month: month),
            hour <= 23, minute <= 59, second <= 60
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offsetSeconds
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    /// `2024-10-08T17:17:00Z`, with `.SSS` milliseconds when not whole: the stored form of Apple dates.
    static func format(_ date: Date) -> String {
        let totalMillis = (date.timeIntervalSince1970 * 1_000).rounded()
        guard totalMillis.isFinite, abs(totalMillis) < 2.5e17 else { return "invalid" }
        let millis = Int(totalMillis)
        let secondsTotal = Int((Double(millis) / 1_000).rounded(.down))
        let milliPart = millis - secondsTotal * 1_000
        let days = Int((Double(secondsTotal) / 86_400).rounded(.down))
        let secondOfDay = secondsTotal - days * 86_400
        let (year, month, day) = civilFromDays(days)
        func pad(_ value: Int, _ width: Int) -> String {
            let text = String(abs(value))
            return (value < 0 ? "-" : "") + String(repeating: "0", count: max(0, width - text.count)) + text
        }
        var text = "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T"
        text += "\(pad(secondOfDay / 3_600, 2)):\(pad(secondOfDay % 3_600 / 60, 2)):\(pad(secondOfDay % 60, 2))"
        if milliPart != 0 { text += "." + pad(milliPart, 3) }
        return text + "Z"
    }

    static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The inverse of ``daysFromCivil(year:month:day:)``.
    static func civilFromDays(_ days: Int) -> (year: Int, month: Int, day: Int) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
