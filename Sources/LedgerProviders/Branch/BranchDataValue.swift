import Foundation

/// A JSON value of Branch's answer that the ledger keeps as-is: link data keys it has no field for
/// (`$og_title`, `~tags`, `custom`, …) and unknown top-level keys.
///
/// Numbers are `Decimal`, so ids such as `~id: 429691043152332059` keep every digit (a `Double`
/// would not). Encodes as the plain JSON value, so stored event data reads like Branch's own.
public indirect enum BranchDataValue: Sendable, Hashable, Codable {
    /// `null`.
    case null
    /// `true` / `false`.
    case bool(Bool)
    /// A number, exactly.
    case number(Decimal)
    /// A string.
    case string(String)
    /// An array.
    case array([BranchDataValue])
    /// An object.
    case object([String: BranchDataValue])

    /// Converts a parsed value; `nil` when a number does not fit a `Decimal` (e.g. `1e400`).
    init?(_ json: ProviderJSON) {
        switch json {
        case .null: self = .null
        case .bool(let value): self = .bool(value)
        case .number(let text):
            guard let value = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")), !value.isNaN else {
                return nil
            }
            self = .number(value)
        case .string(let text): self = .string(text)
        case .array(let items):
            var out: [BranchDataValue] = []
            for item in items {
                guard let value = BranchDataValue(item) else { return nil }
                out.append(value)
            }
            self = .array(out)
        case .object(let members):
            var out: [String: BranchDataValue] = [:]
            for member in members {
                guard let value = BranchDataValue(member.value) else { return nil }
                out[member.key] = value
            }
            self = .object(out)
        }
    }

    /// Decodes any JSON value.
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
        } else if let value = try? container.decode([BranchDataValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: BranchDataValue].self))
        }
    }

    /// Encodes as the plain JSON value.
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

/// A coding key for provider field names that are not Swift identifiers (`+clicked_branch_link`)
/// and for the pass-through keys of ``BranchDataValue`` dictionaries.
struct BSCodingKey: CodingKey, Hashable {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
