import Foundation

/// The ledger's JSON encoder and decoder, shared by the catalog, the envelope and anyone who needs
/// the same encoding.
///
/// Canonical output: keys sorted, slashes not escaped, dates as ``LedgerTimestamp`` text. Two equal
/// events always encode to the same bytes, so encodings can be compared, hashed and kept as golden
/// test strings.
public enum LedgerJSON {
    /// A new encoder with the canonical settings. (Encoders are cheap; a new one per use avoids
    /// sharing a reference type across tasks.)
    public static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            guard let text = LedgerTimestamp.format(date) else {
                throw EncodingError.invalidValue(
                    date, EncodingError.Context(codingPath: encoder.codingPath, debugDescription: "a date outside the years 0001–9999"))
            }
            var container = encoder.singleValueContainer()
            try container.encode(text)
        }
        return encoder
    }

    /// A new decoder that reads what ``makeEncoder()`` writes. Dates must be ``LedgerTimestamp``
    /// text; anything else throws `dataCorrupted` carrying an `iso8601_timestamp` ``RuleViolation``.
    public static func makeDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = LedgerTimestamp.parse(text) else {
                throw DecodingError.dataCorrupted(
                    DecodingError.Context(
                        codingPath: decoder.codingPath, debugDescription: "not an ISO 8601 timestamp",
                        underlyingError: RuleViolation(
                            rule: "iso8601_timestamp",
                            message: "The value must be an ISO 8601 timestamp such as 2024-05-01T12:34:56.123456Z.")))
            }
            return date
        }
        return decoder
    }
}

/// A string value type that validates itself: its Codable form is the bare string, and decoding
/// an invalid one throws `dataCorrupted` carrying the ``RuleViolation`` (so the catalog can name the
/// field and the rule). ``AppID``, ``DeviceID``, ``StreamID`` and ``CurrencyCode`` are such types.
public protocol ValidatedString: Codable, Sendable, Hashable, CustomStringConvertible {
    /// Validates and wraps `rawValue`.
    init(_ rawValue: String) throws(RuleViolation)
    /// The text.
    var rawValue: String { get }
}

extension ValidatedString {
    /// Decodes the JSON shape described above; invalid values throw `dataCorrupted` carrying a ``RuleViolation``.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let raw = try container.decode(String.self)
        do {
            try self.init(raw)
        } catch {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: decoder.codingPath, debugDescription: error.message, underlyingError: error))
        }
    }

    /// Encodes the JSON shape described above.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// The text form, for logs and messages.
    public var description: String { rawValue }
}

/// UUIDs in the ledger's JSON are lowercase, as PostgreSQL prints `uuid` values and as
/// ``StreamID/send(id:)`` writes them, so `data->>'send_id'` and `event_id::text` compare as text.
///
/// Foundation encodes `UUID` in uppercase; these overloads are more specific than the generic
/// `encode(_:forKey:)`, so every keyed UUID field of this module's types (synthesised `Codable`
/// included) takes them. Decoding accepts either case. (A UUID inside an array would not be
/// covered; no event has one, and the golden-encoding tests would show it.)
extension KeyedEncodingContainer {
    mutating func encode(_ value: UUID, forKey key: Key) throws {
        try encode(value.uuidString.lowercased(), forKey: key)
    }

    mutating func encodeIfPresent(_ value: UUID?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) }
    }
}
