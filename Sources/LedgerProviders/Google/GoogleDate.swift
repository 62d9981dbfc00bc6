import Foundation

/// A calendar date written `yyyy-mm-dd` (Google App Conversion Tracking API, "Event Data Encoding":
/// "Always send the number of digits specified above, e.g. … the 5th day of the month, send 05").
public struct GoogleDate: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// The year, 1–9999.
    public let year: Int
    /// The month, 1–12.
    public let month: Int
    /// The day of the month.
    public let day: Int

    /// A checked date (proleptic Gregorian; year 1–9999 so that it has four digits).
    ///
    /// - Throws: `ProviderError` on `field` with rule `yyyy_mm_dd`.
    public init(year: Int, month: Int, day: Int, field: String = "app_event_data") throws(ProviderError) {
        guard (1...9999).contains(year), (1...12).contains(month),
            (1...Self.daysInMonth(year: year, month: month)).contains(day)
        else {
            throw ProviderError(
                .invalidRequest, provider: .google, field: field, rule: "yyyy_mm_dd",
                message: "\(field) is not a real date with a four-digit year (Google App Conversion Tracking API, \"Date format: yyyy-mm-dd\").")
        }
        self.year = year
        self.month = month
        self.day = day
    }

    /// Reads `yyyy-mm-dd` strictly (exactly 4-2-2 digits).
    public init(text: String, field: String = "app_event_data") throws(ProviderError) {
        let scalars = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard scalars[range].allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
            return Int(String(decoding: scalars[range], as: UTF8.self))
        }
        guard scalars.count == 10, scalars[4] == UInt8(ascii: "-"), scalars[7] == UInt8(ascii: "-"),
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10)
        else {
            throw ProviderError(
                .invalidRequest, provider: .google, field: field, rule: "yyyy_mm_dd",
                message: "\(field) must be written yyyy-mm-dd, e.g. 2016-09-23 (Google App Conversion Tracking API).")
        }
        try self.init(year: year, month: month, day: day, field: field)
    }

    /// The calendar date of `date` in `timeZone` (UTC unless told otherwise).
    public init(_ date: Date, timeZone: TimeZone = TimeZone(identifier: "UTC")!, field: String = "app_event_data")
        throws(ProviderError)
    {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        try self.init(year: parts.year ?? 0, month: parts.month ?? 0, day: parts.day ?? 0, field: field)
    }

    /// `2016-09-23`.
    public var text: String {
        func pad(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"
    }

    /// The `yyyy-mm-dd` text.
    public var description: String { text }

    /// Calendar order.
    public static func < (lhs: GoogleDate, rhs: GoogleDate) -> Bool {
        (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day)
    }

    /// Stored as its `yyyy-mm-dd` text.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }

    /// Decodes the stored form, re-checking it.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            try self.init(text: text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.message)
        }
    }

    static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}

extension GoogleEventValue: Codable {
    /// Stored form: an object with one key naming the type, e.g. `{"money":"2.99"}`,
    /// `{"array":[{"string":"Crayons"}]}`. Decimals are stored as strings so that they round-trip
    /// exactly whatever the encoder does with numbers.
    private enum CodingKeys: String, CodingKey {
        case string, bool, integer, float, money, date, timestamp, array, object
    }

    /// Encodes the stored form.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .string(let text): try container.encode(text, forKey: .string)
        case .bool(let flag): try container.encode(flag, forKey: .bool)
        case .integer(let integer): try container.encode(integer, forKey: .integer)
        case .float(let decimal): try container.encode(decimal.description, forKey: .float)
        case .money(let decimal): try container.encode(decimal.description, forKey: .money)
        case .date(let date): try container.encode(date, forKey: .date)
        case .timestamp(let timestamp): try container.encode(timestamp.text, forKey: .timestamp)
        case .array(let items): try container.encode(items, forKey: .array)
        case .object(let fields): try container.encode(fields, forKey: .object)
        }
    }

    /// Decodes the stored form, re-checking it.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard let key = container.allKeys.first, container.allKeys.count == 1 else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "Expected exactly one type key."))
        }
        func decimal() throws -> Decimal {
            let text = try container.decode(String.self, forKey: key)
            guard GoogleAppleJSON.isPlainDecimalText(text), text.utf8.count <= 64, let value = Decimal(string: text) else { throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "Not a decimal: \(text)") }
            return value
        }
        switch key {
        case .string: self = .string(try container.decode(String.self, forKey: key))
        case .bool: self = .bool(try container.decode(Bool.self, forKey: key))
        case .integer: self = .integer(try container.decode(Int64.self, forKey: key))
        case .float: self = .float(try decimal())
        case .money: self = .money(try decimal())
        case .date: self = .date(try container.decode(GoogleDate.self, forKey: key))
        case .timestamp:
            let text = try container.decode(String.self, forKey: key)
            guard let micros = GoogleTimestamp.microseconds(plainText: text, maxFractionDigits: 6) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "Not a timestamp: \(text)")
            }
            self = .timestamp(GoogleTimestamp(microsecondsSince1970: micros))
        case .array: self = .array(try container.decode([GoogleEventValue].self, forKey: key))
        case .object: self = .object(try container.decode([GoogleEventField].self, forKey: key))
        }
    }
}
