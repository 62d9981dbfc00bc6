import Foundation

/// `timestamptz` text in and out, at PostgreSQL's precision (microseconds), without `DateFormatter`.
///
/// Sessions opened by the wrapper use `TimeZone=UTC` and `DateStyle=ISO`, so the server prints
/// `2026-11-23 01:53:54.123456+00`; offsets such as `+05:30` are read too.
public enum PostgresTimestamp {
    /// Formats a date as UTC with six fractional digits, rounded to the microsecond
    /// (`2026-11-23 01:53:54.123456+00`), the form `timestamptz` input and JSON payloads take.
    public static func format(_ date: Date) -> String {
        format(microseconds: microseconds(date))
    }

    /// A date's whole microseconds since 1970, rounded as ``format(_:)`` rounds them: what
    /// `timestamptz` stores for the date's text.
    public static func microseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
    }

    /// Formats microseconds since 1970 as ``format(_:)`` does.
    public static func format(microseconds micros: Int64) -> String {
        var seconds = micros / 1_000_000
        var fraction = micros % 1_000_000
        if fraction < 0 {
            fraction += 1_000_000
            seconds -= 1
        }
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 {
            secondOfDay += 86_400
            days -= 1
        }
        let (year, month, day) = civil(fromDays: days)
        // Written digit by digit into a fixed buffer: string interpolation here was a visible
        // share of a batch append's client time.
        var bytes = [UInt8](repeating: UInt8(ascii: "0"), count: 29)
        func put(_ value: Int64, at offset: Int, width: Int) {
            var value = value
            for index in stride(from: offset + width - 1, through: offset, by: -1) {
                bytes[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value % 10)
                value /= 10
            }
        }
        bytes[4] = UInt8(ascii: "-")
        put(month, at: 5, width: 2)
        bytes[7] = UInt8(ascii: "-")
        put(day, at: 8, width: 2)
        bytes[10] = UInt8(ascii: " ")
        put(secondOfDay / 3600, at: 11, width: 2)
        bytes[13] = UInt8(ascii: ":")
        put(secondOfDay / 60 % 60, at: 14, width: 2)
        bytes[16] = UInt8(ascii: ":")
        put(secondOfDay % 60, at: 17, width: 2)
        bytes[19] = UInt8(ascii: ".")
        put(fraction, at: 20, width: 6)
        bytes[26] = UInt8(ascii: "+")
        guard (0...9999).contains(year) else {
            // Never stored (the parser refuses it too), but written as the old formatter did.
            let text = String(year)
            return String(repeating: "0", count: max(0, 4 - text.count)) + text + String(decoding: bytes[4...], as: UTF8.self)
        }
        put(year, at: 0, width: 4)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Parses `YYYY-MM-DD HH:MM:SS[.ffffff](+|-)HH[:MM[:SS]]`; `nil` for anything else
    /// (including `infinity`, BC dates and years past 9999, which the ledger never stores).
    static func parse(_ bytes: UnsafeRawBufferPointer) -> Date? {
        var index = 0
        func number(_ width: Int) -> Int64? {
            guard index + width <= bytes.count else { return nil }
            var value: Int64 = 0
            for _ in 0..<width {
                let byte = bytes[index]
                guard byte >= 48, byte <= 57 else { return nil }
                value = value * 10 + Int64(byte - 48)
                index += 1
            }
            return value
        }
        func expect(_ char: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == char else { return false }
            index += 1
            return true
        }
        guard let year = number(4), expect(UInt8(ascii: "-")), let month = number(2),
            expect(UInt8(ascii: "-")), let day = number(2), expect(UInt8(ascii: " ")) || expect(UInt8(ascii: "T")),
            let hour = number(2), expect(UInt8(ascii: ":")), let minute = number(2),
            expect(UInt8(ascii: ":")), let second = number(2)
        else { return nil }
        var micros: Int64 = 0
        if expect(UInt8(ascii: ".")) {
            var digits = 0
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                if digits < 6 { micros = micros * 10 + Int64(bytes[index] - 48) }
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 6) { micros *= 10 }
        }
        var offsetSeconds: Int64 = 0
        if index < bytes.count {
            let sign: Int64
            if expect(UInt8(ascii: "+")) { sign = 1 } else if expect(UInt8(ascii: "-")) { sign = -1 } else { return nil }
            guard let offsetHours = number(2) else { return nil }
            var offset = offsetHours * 3600
            if expect(UInt8(ascii: ":")) {
                guard let offsetMinutes = number(2) else { return nil }
                offset += offsetMinutes * 60
                if expect(UInt8(ascii: ":")) {
                    guard let offsetSecs = number(2) else { return nil }
                    offset += offsetSecs
                }
            }
            offsetSeconds = sign * offset
        }
        guard index == bytes.count, (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60,
            second < 61
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return Date(timeIntervalSince1970: Double(seconds * 1_000_000 + micros) / 1_000_000)
    }

    // Howard Hinnant's civil-calendar algorithms (proleptic Gregorian, days since 1970-01-01).
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
