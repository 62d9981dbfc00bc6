import Foundation

/// A JSON value as read from (or written to) a provider: every provider's parser and body builder
/// uses this one type, read by ``ProviderJSONReader``.
///
/// Why not `JSONSerialization`: it turns numbers into `Double` (Google's `1432681913.123456` would
/// lose its microseconds, Branch's `~id` `429691043152332059` its last digits), it cannot tell
/// `true` from `1` on Linux (both bridge through `NSNumber`), it escapes `/`, it does not keep key
/// order (Google's golden body must be byte-exact), and it recurses without a depth limit. Here
/// numbers keep their source text and objects keep their members in order, duplicates included.
/// (`package`: the fake providers write their answers with it too.)
package indirect enum ProviderJSON: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` / `false`.
    case bool(Bool)
    /// The number's text exactly as it appeared (already checked against the JSON grammar).
    case number(String)
    /// A string.
    case string(String)
    /// An array.
    case array([ProviderJSON])
    /// An object's members in document order.
    case object([ProviderJSONMember])

    /// An object whose members are `members` with their keys sorted, so that the same facts
    /// always give the same bytes (Branch's request body).
    static func object(sortingKeysOf members: [String: ProviderJSON]) -> ProviderJSON {
        .object(members.keys.sorted().map { ProviderJSONMember(key: $0, value: members[$0]!) })
    }

    /// The value of the last member named `key` (duplicate keys: the last wins, as in most
    /// readers); `nil` when absent or when this is not an object.
    subscript(key: String) -> ProviderJSON? {
        guard case .object(let members) = self else { return nil }
        return members.last { $0.key == key }?.value
    }

    /// The object's members by key, the last of duplicates winning; `nil` when this is not an object.
    var membersByKey: [String: ProviderJSON]? {
        guard case .object(let members) = self else { return nil }
        var byKey: [String: ProviderJSON] = [:]
        for member in members { byKey[member.key] = member.value }
        return byKey
    }

    /// A short name of the value's JSON type, for error messages.
    var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// The value as an exact `Int64`, if it is a JSON number with an integral value in range
    /// (`7`, `7.0`, `7e0`); `nil` for fractions, huge numbers (`1e400`) and every other type.
    var integerValue: Int64? {
        guard case .number(let text) = self else { return nil }
        if let plain = Int64(text) { return plain }
        guard let decimal = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")),
            !decimal.isNaN
        else { return nil }
        var value = decimal
        var rounded = Decimal()
        NSDecimalRound(&rounded, &value, 0, .plain)
        guard rounded == decimal else { return nil }
        return Int64(rounded.description)
    }

    /// The compact JSON text: no spaces, members in order, `/` not escaped, non-ASCII kept as
    /// UTF-8 — exactly the bytes Google's samples show
    /// (`{"app_event_data":{"item_id":["Crayons","Markers"]}}`).
    package var serialized: String {
        var out = ""
        write(to: &out)
        return out
    }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let flag): out += flag ? "true" : "false"
        case .number(let text): out += text
        case .string(let text): Self.writeString(text, to: &out)
        case .array(let items):
            out += "["
            for (offset, item) in items.enumerated() {
                if offset > 0 { out += "," }
                item.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (offset, member) in members.enumerated() {
                if offset > 0 { out += "," }
                Self.writeString(member.key, to: &out)
                out += ":"
                member.value.write(to: &out)
            }
            out += "}"
        }
    }

    /// Writes `text` as a JSON string literal, escaping only `"`, `\` and control characters
    /// (`\b \f \n \r \t`, the rest as lowercase `\u00XX`).
    static func writeString(_ text: String, to out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16, uppercase: false)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

/// One member of a JSON object.
package struct ProviderJSONMember: Sendable, Hashable {
    /// The member's name.
    package var key: String
    /// The member's value.
    package var value: ProviderJSON

    /// A member named `key` holding `value`.
    package init(key: String, value: ProviderJSON) {
        self.key = key
        self.value = value
    }
}
