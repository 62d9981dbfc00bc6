import Foundation

/// The field checks shared by every event's ``LedgerEvent/validate()``.
///
/// Each check throws a ``RuleViolation`` naming the field and a stable rule id. Limits are generous
/// on purpose: they refuse what is broken (empty ids, control characters that would corrupt an HTTP
/// header, values no provider could take), not what a provider might still accept, because a refused
/// device event loses the whole install.
enum Check {
    /// Longest free text accepted in a short field (names, versions, ids), in Unicode scalars.
    static let shortText = 256
    /// Longest URL or referrer accepted, in Unicode scalars.
    static let longText = 8_192

    /// A present value, or a `required` violation.
    static func required<Value>(_ value: Value?, _ field: String) throws(RuleViolation) -> Value {
        guard let value else {
            throw RuleViolation(field: field, rule: RuleViolation.requiredRule, message: "A value is required.")
        }
        return value
    }

    /// Text that is not empty, at most `max` Unicode scalars long, and free of control characters.
    static func text(_ value: String, _ field: String, max: Int = shortText) throws(RuleViolation) {
        if value.isEmpty {
            throw RuleViolation(field: field, rule: "non_empty", message: "The text must not be empty.")
        }
        if value.unicodeScalars.count > max {
            throw RuleViolation(field: field, rule: "max_\(max)_characters", message: "The text is longer than \(max) characters.")
        }
        if let scalar = value.unicodeScalars.first(where: { $0.properties.generalCategory == .control }) {
            throw RuleViolation(
                field: field, rule: "no_control_characters",
                message: "The text holds the control character U+\(String(scalar.value, radix: 16, uppercase: true)).")
        }
    }

    /// ``text(_:_:max:)`` when a value is present.
    static func text(_ value: String?, _ field: String, max: Int = shortText) throws(RuleViolation) {
        if let value { try text(value, field, max: max) }
    }

    /// A stable rule identifier as written by the worker or the decision rules: 1–100 characters of
    /// lowercase ASCII letters, digits, `_`, `.`, `-`.
    static func ruleID(_ value: String, _ field: String) throws(RuleViolation) {
        let allowed = !value.isEmpty && value.count <= 100 && value.unicodeScalars.allSatisfy { scalar in
            ("a"..."z").contains(scalar) || ("0"..."9").contains(scalar) || "_.-".unicodeScalars.contains(scalar)
        }
        guard allowed else {
            throw RuleViolation(
                field: field, rule: "rule_id",
                message: "A rule id is 1–100 characters of lowercase letters, digits, '_', '.' and '-'.")
        }
    }

    /// An integer inside `range`.
    static func range<Number: BinaryInteger>(_ value: Number, _ range: ClosedRange<Number>, _ field: String) throws(RuleViolation) {
        guard range.contains(value) else {
            throw RuleViolation(
                field: field, rule: "range_\(range.lowerBound)_\(range.upperBound)",
                message: "The value must lie between \(range.lowerBound) and \(range.upperBound).")
        }
    }

    /// An integer at least `minimum`.
    static func atLeast<Number: BinaryInteger>(_ value: Number, _ minimum: Number, _ field: String) throws(RuleViolation) {
        guard value >= minimum else {
            throw RuleViolation(field: field, rule: "min_\(minimum)", message: "The value must be at least \(minimum).")
        }
    }

    /// A UUID in its textual form (any letter case), as IDFA, IDFV and GAID always are.
    static func uuidText(_ value: String?, _ field: String) throws(RuleViolation) {
        guard let value else { return }
        guard value.utf8.count == 36, UUID(uuidString: value) != nil else {
            throw RuleViolation(field: field, rule: "uuid", message: "The identifier must be a UUID (8-4-4-4-12 hex digits).")
        }
    }

    /// An IPv4 or IPv6 address in its textual form.
    static func ipAddress(_ value: String?, _ field: String) throws(RuleViolation) {
        guard let value else { return }
        guard IPAddressSyntax.isValid(value) else {
            throw RuleViolation(field: field, rule: "ip_address", message: "The value must be an IPv4 or IPv6 address.")
        }
    }

    /// A URL with a scheme, at most ``longText`` characters.
    static func url(_ value: String?, _ field: String) throws(RuleViolation) {
        guard let value else { return }
        try text(value, field, max: longText)
        guard let url = URL(string: value), let scheme = url.scheme, !scheme.isEmpty else {
            throw RuleViolation(field: field, rule: "url", message: "The value must be a URL with a scheme.")
        }
    }

    /// A field that only one platform has.
    static func only(on platform: Platform, actual: Platform, isSet: Bool, _ field: String) throws(RuleViolation) {
        guard !isSet || platform == actual else {
            throw RuleViolation(
                field: field, rule: "\(platform.rawValue)_only",
                message: "The field exists only on \(platform.displayName) devices.")
        }
    }

    /// A stream id of the expected category (`device` for a device stream).
    static func streamCategory(_ stream: StreamID, _ expected: StreamCategory, _ field: String) throws(RuleViolation) {
        guard stream.category == expected.rawValue else {
            throw RuleViolation(
                field: field, rule: "\(expected.rawValue)_stream",
                message: "The stream must be a '\(expected.rawValue)-…' stream.")
        }
    }
}
