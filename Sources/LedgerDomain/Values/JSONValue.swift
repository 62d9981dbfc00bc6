import Foundation

/// Any JSON value, kept as received: for the parts of events whose shape the ledger does not own
/// (Apple's iAd dictionary, Branch's link-data keys the ledger has no field for, an app's custom
/// event data).
///
/// Numbers are `Decimal`, so integers up to 38 digits and decimal fractions survive exactly.
public enum JSONValue: Codable, Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number.
    case number(Decimal)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object.
    case object([String: JSONValue])

    /// Whether the value is a string, number or boolean.
    public var isPrimitive: Bool {
        switch self {
        case .bool, .number, .string: true
        case .null, .array, .object: false
        }
    }

    /// Decodes any JSON value: null, then a boolean, a number, a string, an array, an object.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Decimal.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// Encodes the JSON shape described above.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}
