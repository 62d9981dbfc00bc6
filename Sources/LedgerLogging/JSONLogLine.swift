import Foundation
import Logging

/// One log record as one line of JSON: the format of ``JSONLogHandler``, and of the lines a
/// command writes to stderr itself (start-up, failures) so that a JSON stderr holds nothing else.
///
/// Members, in this order: `time` (RFC 3339, UTC, microseconds), `level`, `logger` (the logger's
/// label), `message`, `source` (the module that logged, when known), and `metadata` (an object,
/// only when there is some; nested metadata as objects and arrays). Every string is escaped as
/// RFC 8259 requires, plus U+2028 and U+2029, so a line never breaks inside a record.
public enum JSONLogLine {
    /// The record's line, without its line feed.
    public static func render(
        time: Date, level: Logger.Level, label: String, message: String, source: String? = nil,
        metadata: Logger.Metadata = [:]
    ) -> String {
        var line = "{\"time\":"
        appendString(rfc3339(time), to: &line)
        line += ",\"level\":"
        appendString(level.rawValue, to: &line)
        line += ",\"logger\":"
        appendString(label, to: &line)
        line += ",\"message\":"
        appendString(message, to: &line)
        if let source, !source.isEmpty {
            line += ",\"source\":"
            appendString(source, to: &line)
        }
        if !metadata.isEmpty {
            line += ",\"metadata\":"
            appendObject(metadata, to: &line)
        }
        line += "}"
        return line
    }

    /// `time` in RFC 3339 UTC with six fractional digits: `2026-12-06T11:07:08.123456Z`.
    public static func rfc3339(_ time: Date) -> String {
        let totalMicroseconds = Int64((time.timeIntervalSince1970 * 1_000_000).rounded(.toNearestOrAwayFromZero))
        let microsecondsPerDay: Int64 = 86_400 * 1_000_000
        var days = totalMicroseconds / microsecondsPerDay
        var ofDay = totalMicroseconds % microsecondsPerDay
        if ofDay < 0 {
            ofDay += microsecondsPerDay
            days -= 1
        }
        let (year, month, day) = civilDate(daysSinceEpoch: days)
        let seconds = ofDay / 1_000_000
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(seconds / 3600, 2)):\(pad(seconds / 60 % 60, 2))"
            + ":\(pad(seconds % 60, 2)).\(pad(ofDay % 1_000_000, 6))Z"
    }

    /// Year, month and day of the proleptic Gregorian calendar for a count of days since
    /// 1970-01-01 (Howard Hinnant's `civil_from_days`): no calendar object, no locale, no lock.
    static func civilDate(daysSinceEpoch: Int64) -> (Int64, Int64, Int64) {
        let shifted = daysSinceEpoch + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }

    /// Metadata as a JSON object, its keys sorted (the same record is the same line).
    private static func appendObject(_ metadata: Logger.Metadata, to line: inout String) {
        line += "{"
        for (index, key) in metadata.keys.sorted().enumerated() {
            if index > 0 { line += "," }
            appendString(key, to: &line)
            line += ":"
            appendValue(metadata[key]!, to: &line)
        }
        line += "}"
    }

    private static func appendValue(_ value: Logger.MetadataValue, to line: inout String) {
        switch value {
        case .string(let text):
            appendString(text, to: &line)
        case .stringConvertible(let convertible):
            appendString(convertible.description, to: &line)
        case .dictionary(let dictionary):
            appendObject(dictionary, to: &line)
        case .array(let values):
            line += "["
            for (index, element) in values.enumerated() {
                if index > 0 { line += "," }
                appendValue(element, to: &line)
            }
            line += "]"
        }
    }

    /// `text` as a JSON string: quotes, backslashes and control characters escaped, and U+2028
    /// and U+2029 too (JavaScript readers end a line there).
    static func appendString(_ text: String, to line: inout String) {
        line += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": line += "\\\""
            case "\\": line += "\\\\"
            case "\n": line += "\\n"
            case "\r": line += "\\r"
            case "\t": line += "\\t"
            case "\u{08}": line += "\\b"
            case "\u{0C}": line += "\\f"
            case "\u{2028}": line += "\\u2028"
            case "\u{2029}": line += "\\u2029"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    let hex = String(scalar.value, radix: 16)
                    line += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    line.unicodeScalars.append(scalar)
                }
            }
        }
        line += "\""
    }
}
