import Foundation
import LedgerDomain

extension JSONValue {
    /// Converts a value read from a provider into the form events keep (Branch's link-data keys
    /// the ledger has no field for: `$og_title`, `~tags`, `custom`, …, and unknown top-level keys).
    /// Numbers become `Decimal`, so ids such as `~id: 429691043152332059` keep every digit; `nil`
    /// when a number does not fit a `Decimal` (e.g. `1e400`). Of duplicate keys the last wins.
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
            var out: [JSONValue] = []
            for item in items {
                guard let value = JSONValue(item) else { return nil }
                out.append(value)
            }
            self = .array(out)
        case .object(let members):
            var out: [String: JSONValue] = [:]
            for member in members {
                guard let value = JSONValue(member.value) else { return nil }
                out[member.key] = value
            }
            self = .object(out)
        }
    }
}

/// A coding key for provider field names that are not Swift identifiers (`+clicked_branch_link`)
/// and for the pass-through keys of Branch's ``JSONValue`` dictionaries.
struct FieldCodingKey: CodingKey, Hashable {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
