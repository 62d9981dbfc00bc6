import Foundation

/// An ISO 4217 currency code: three uppercase ASCII letters (`USD`, `EUR`, `JPY`).
///
/// Only the shape is checked, not membership of the current ISO list: codes come and go, and a
/// provider answers a code it does not know (`INVALID_CURRENCY_CODE`), which the ledger records.
public struct CurrencyCode: ValidatedString {
    /// The code.
    public let rawValue: String

    /// Validates `rawValue`.
    /// - Throws: `currency_iso4217`.
    public init(_ rawValue: String) throws(RuleViolation) {
        guard rawValue.utf8.count == 3, rawValue.utf8.allSatisfy({ (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }) else {
            throw RuleViolation(rule: "currency_iso4217", message: "A currency is an ISO 4217 code of three uppercase letters.")
        }
        self.rawValue = rawValue
    }
}

/// An amount of money: an exact decimal and its currency. Never a binary floating-point number,
/// so that 19.99 stays 19.99 through storage, projections and provider requests.
///
/// JSON: `{"amount": "19.99", "currency": "EUR"}` — the amount is a string of plain decimal
/// notation (optional `-`, digits, optional `.` and digits; no exponent, at most 38 significant
/// digits), so no JSON reader along the way can round it through a `double`.
public struct Money: Codable, Sendable, Hashable, CustomStringConvertible {
    /// The amount, exact.
    public let amount: Decimal
    /// The currency.
    public let currency: CurrencyCode

    /// Most significant digits a `Decimal` holds exactly.
    static let maximumDigits = 38

    /// Validates and creates an amount.
    /// - Throws: `finite` for NaN.
    public init(amount: Decimal, currency: CurrencyCode) throws(RuleViolation) {
        guard !amount.isNaN else {
            throw RuleViolation(field: "amount", rule: "finite", message: "An amount must be a finite number.")
        }
        // What is encoded must decode: the stored text form obeys the same shape and digit limit
        // as amounts read from JSON (the store trusts the catalog's own encodings).
        guard Self.isPlainAmount(amount.description) else {
            throw RuleViolation(
                field: "amount", rule: "decimal_amount",
                message: "An amount has at most 38 significant digits in plain decimal notation.")
        }
        self.amount = amount
        self.currency = currency
    }

    /// Parses an amount in plain decimal notation (`"19.99"`, `"-3"`, `"0.005"`).
    /// - Throws: `decimal_amount` for anything else.
    public init(amount text: String, currency: CurrencyCode) throws(RuleViolation) {
        guard let amount = Self.parseAmount(text), !amount.isNaN else {
            throw RuleViolation(
                field: "amount", rule: "decimal_amount",
                message: "An amount is plain decimal text: an optional '-', digits, optionally '.' and digits; no exponent, at most 38 digits.")
        }
        // No need for the encode check of `init(amount: Decimal)` (printing the amount, a good
        // part of reading one): plain text of at most 38 digits prints back as plain text of at
        // most as many (only leading and trailing zeros go). The tests hold both forms to it.
        self.amount = amount
        self.currency = currency
    }

    /// The amount in the canonical text form stored in JSON (`19.99`; trailing zeros dropped).
    public var amountText: String { amount.description }

    /// The text form, for logs and messages.
    public var description: String { "\(amountText) \(currency.rawValue)" }

    private enum CodingKeys: String, CodingKey {
        case amount
        case currency
    }

    /// Decodes the JSON shape described above; invalid values throw `dataCorrupted` carrying a ``RuleViolation``.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let text = try container.decode(String.self, forKey: .amount)
        let currency = try container.decode(CurrencyCode.self, forKey: .currency)
        do {
            try self.init(amount: text, currency: currency)
        } catch {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: container.codingPath + [CodingKeys.amount], debugDescription: error.message,
                    underlyingError: RuleViolation(rule: error.rule, message: error.message)))
        }
    }

    /// Encodes the JSON shape described above.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(amountText, forKey: .amount)
        try container.encode(currency, forKey: .currency)
    }

    /// `Decimal(string:)` accepts prefixes (`"12abc"` → 12) and exponents; the shape is checked first.
    static func parseAmount(_ text: String) -> Decimal? {
        guard isPlainAmount(text) else { return nil }
        return smallAmount(text) ?? Decimal(string: text, locale: posix)
    }

    /// A plain amount of at most 18 digits that is not zero, made from its digits as an integer
    /// and a power of ten: the same `Decimal`, bit for bit, as `Decimal(string:)` makes (a test
    /// compares them), in a fifth of its time (a rebuild reads every revenue event's amount). Nil
    /// for anything else, which `Decimal(string:)` reads (zero keeps its scale there).
    static func smallAmount(_ text: String) -> Decimal? {
        var significand: UInt64 = 0
        var digits = 0
        var scale = 0
        var sawPoint = false
        var negative = false
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                digits += 1
                guard digits <= 18 else { return nil }
                significand = significand * 10 + UInt64(byte - UInt8(ascii: "0"))
                if sawPoint { scale += 1 }
            case UInt8(ascii: "."):
                sawPoint = true
            case UInt8(ascii: "-"):
                negative = true
            default:
                return nil  // not plain: `isPlainAmount` has refused it already
            }
        }
        guard significand != 0 else { return nil }
        return Decimal(sign: negative ? .minus : .plus, exponent: -scale, significand: Decimal(significand))
    }

    /// Made once, not per amount (projection rebuilds read every revenue event's amount).
    private static let posix = Locale(identifier: "en_US_POSIX")

    /// Plain decimal notation with at most ``maximumDigits`` digits: an optional `-`, digits,
    /// optionally `.` and digits. (Every such text is a `Decimal`: 38 digits fit its mantissa.)
    private static func isPlainAmount(_ text: String) -> Bool {
        var digits = 0
        var sawPoint = false
        var digitsAfterPoint = 0
        for (offset, byte) in text.utf8.enumerated() {
            switch byte {
            case UInt8(ascii: "-") where offset == 0:
                continue
            case UInt8(ascii: ".") where !sawPoint && digits > 0:
                sawPoint = true
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                digits += 1
                if sawPoint { digitsAfterPoint += 1 }
            default:
                return false
            }
        }
        return digits > 0 && digits <= maximumDigits && (!sawPoint || digitsAfterPoint > 0)
    }
}
