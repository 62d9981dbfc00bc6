import Foundation

/// Typed reading of one JSON object's members, with errors that name the JSON path
/// (`ad_events[0].campaign_id`) and the rule broken (`missing`, `wrong_type`, `integer`,
/// `integer_out_of_range`). Unknown members are ignored: every parser is tolerant of new keys.
struct ProviderJSONObject {
    let provider: Provider
    /// The path of this object; empty for the document root.
    let path: String
    let value: ProviderJSON

    /// Wraps `value`, which must be an object.
    init(_ value: ProviderJSON, provider: Provider, path: String = "") throws(ProviderError) {
        guard case .object = value else {
            throw ProviderError(
                .malformedResponse, provider: provider, field: path.isEmpty ? "$" : path, rule: "wrong_type",
                message: "Expected a JSON object, found \(value.typeName).")
        }
        self.provider = provider
        self.path = path
        self.value = value
    }

    /// The members in document order.
    var members: [ProviderJSONMember] {
        if case .object(let members) = value { return members }
        return []
    }

    /// The full path of a member.
    func fieldPath(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// The member's value, or `nil` when absent. JSON `null` is returned as `.null`.
    func member(_ key: String) -> ProviderJSON? { value[key] }

    func missing(_ key: String) -> ProviderError {
        ProviderError(
            .malformedResponse, provider: provider, field: fieldPath(key), rule: "missing",
            message: "The required field \(fieldPath(key)) is absent or null.")
    }

    func wrongType(_ key: String, expected: String, found: ProviderJSON) -> ProviderError {
        ProviderError(
            .malformedResponse, provider: provider, field: fieldPath(key), rule: "wrong_type",
            message: "\(fieldPath(key)) must be a \(expected), found \(found.typeName).")
    }

    /// A member that must be present and not null.
    func required(_ key: String) throws(ProviderError) -> ProviderJSON {
        guard let found = member(key), found != .null else { throw missing(key) }
        return found
    }

    /// A member that may be absent or null (both read as `nil`).
    func optional(_ key: String) -> ProviderJSON? {
        guard let found = member(key), found != .null else { return nil }
        return found
    }

    func requiredString(_ key: String) throws(ProviderError) -> String {
        let found = try required(key)
        guard case .string(let text) = found else { throw wrongType(key, expected: "string", found: found) }
        return text
    }

    func optionalString(_ key: String) throws(ProviderError) -> String? {
        guard let found = optional(key) else { return nil }
        guard case .string(let text) = found else { throw wrongType(key, expected: "string", found: found) }
        return text
    }

    func requiredBool(_ key: String) throws(ProviderError) -> Bool {
        let found = try required(key)
        guard case .bool(let flag) = found else { throw wrongType(key, expected: "boolean", found: found) }
        return flag
    }

    func requiredInt64(_ key: String) throws(ProviderError) -> Int64 {
        try int64(key, from: try required(key))
    }

    func optionalInt64(_ key: String) throws(ProviderError) -> Int64? {
        guard let found = optional(key) else { return nil }
        return try int64(key, from: found)
    }

    /// An integer that must fit in 64 bits; `12.0` and `1e3` are refused (`integer`) rather than
    /// guessed at, and `99999999999999999999999` is refused (`integer_out_of_range`), never rounded.
    func int64(_ key: String, from found: ProviderJSON) throws(ProviderError) -> Int64 {
        guard case .number(let text) = found else { throw wrongType(key, expected: "number", found: found) }
        guard GoogleAppleJSON.isIntegerText(text) else {
            throw ProviderError(
                .malformedResponse, provider: provider, field: fieldPath(key), rule: "integer",
                message: "\(fieldPath(key)) must be a whole number, found \(text.prefix(40)).")
        }
        guard let number = Int64(text) else {
            throw ProviderError(
                .malformedResponse, provider: provider, field: fieldPath(key), rule: "integer_out_of_range",
                message: "\(fieldPath(key)) does not fit in 64 bits: \(text.prefix(40)).")
        }
        return number
    }

    /// An array member (absent or null reads as `nil`).
    func optionalArray(_ key: String) throws(ProviderError) -> [ProviderJSON]? {
        guard let found = optional(key) else { return nil }
        guard case .array(let items) = found else { throw wrongType(key, expected: "array", found: found) }
        return items
    }
}

/// Google's and Apple's reading of an answer: ``ProviderJSONReader`` with their limits, its
/// errors as `malformedResponse` on field `$`.
enum GoogleAppleJSON {
    /// Reads one JSON document. Errors are `malformedResponse` on `field` `$` with rule `not_json`
    /// (syntax, bad UTF-8) or `too_deep` (nesting beyond 32 levels).
    static func parse(_ data: Data, provider: Provider) throws(ProviderError) -> ProviderJSON {
        do {
            return try ProviderJSONReader.parse(data, limits: .googleApple)
        } catch {
            throw ProviderError(
                .malformedResponse, provider: provider, field: "$", rule: error.rule,
                message: "The answer is not valid JSON: \(error.reason) at byte \(error.offset).")
        }
    }

    /// `-?[0-9]+`: a JSON number with neither fraction nor exponent.
    static func isIntegerText(_ text: String) -> Bool {
        var digits = Substring(text)
        if digits.first == "-" { digits = digits.dropFirst() }
        return !digits.isEmpty && digits.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// `-?[0-9]+(\.[0-9]+)?`: a decimal with a dot separator, no exponent, no grouping, no spaces.
    static func isPlainDecimalText(_ text: String) -> Bool {
        var rest = Substring(text)
        if rest.first == "-" { rest = rest.dropFirst() }
        let parts = rest.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        return parts.allSatisfy { part in
            !part.isEmpty && part.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        }
    }
}
