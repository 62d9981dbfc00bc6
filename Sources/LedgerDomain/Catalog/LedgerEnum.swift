import Foundation

/// A closed set of string values in an event's JSON (`"ios"`, `"apple_adservices"`, `"click"`).
///
/// Conforming enums decode with an error that lists the accepted values (rule `one_of`), so a
/// caller who sends `"iOS"` learns that `"ios"` was meant. Raw values are snake_case and never
/// change once written: they are part of the stored events.
public protocol LedgerEnum: RawRepresentable, CaseIterable, Codable, Sendable, Hashable where RawValue == String {}

extension LedgerEnum {
    /// Decodes one of the raw values, or throws `dataCorrupted` carrying a `one_of` ``RuleViolation``.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let raw = try container.decode(String.self)
        guard let value = Self(rawValue: raw) else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath, debugDescription: "not one of the accepted values",
                    underlyingError: Self.violation))
        }
        self = value
    }

    /// Encodes the raw value.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// The violation reported for a value outside the set.
    static var violation: RuleViolation {
        let accepted = allCases.map(\.rawValue).joined(separator: ", ")
        return RuleViolation(rule: "one_of", message: "The value must be one of: \(accepted).")
    }
}
