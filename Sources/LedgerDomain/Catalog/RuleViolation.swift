import Foundation

/// A value broke one of the domain's rules.
///
/// Thrown by the validating initialisers of the value types (``AppID``, ``DeviceID``, ``StreamID``,
/// ``CurrencyCode``, ``Money``) and by every event's ``LedgerEvent/validate()``. The catalog turns it
/// into an ``EventValidationError`` that also names the event type.
///
/// The message never quotes the offending value: the value may be personal data (an IDFA, an IP
/// address), and errors end up in logs and HTTP answers.
public struct RuleViolation: Error, Sendable, Hashable, CustomStringConvertible {
    /// The dotted JSON path of the field inside the event's data (`device.ip`,
    /// `candidates[2].time`), or `nil` when the violation is about a value on its own (a value
    /// type's initialiser does not know where its value sits).
    public var field: String?
    /// A short stable identifier of the rule, usable as a metric label: `required`, `range_0_63`,
    /// `currency_iso4217`, `max_128_characters`, …
    public var rule: String
    /// A sentence for a person.
    public var message: String

    /// Creates a violation.
    public init(field: String? = nil, rule: String, message: String) {
        self.field = field
        self.rule = rule
        self.message = message
    }

    /// The rule id the catalog reports as ``EventValidationError/Kind/missingField`` rather than
    /// ``EventValidationError/Kind/invalidValue``.
    public static let requiredRule = "required"

    /// This violation placed under `path`: a field-less violation takes `path` as its field; a
    /// violation with a relative field gets `path` as prefix.
    public func at(_ path: String) -> RuleViolation {
        var copy = self
        copy.field = FieldPath.join(path, field ?? "")
        return copy
    }

    /// The text form, for logs and messages.
    public var description: String { "\(field.map { "\($0): " } ?? "")\(message) [\(rule)]" }
}

/// Builds the dotted field paths used in errors and in ``LedgerEvent/personalFields``.
enum FieldPath {
    /// `base.name`, or `name` alone when `base` is empty (and `base` when `name` is empty).
    /// A `name` starting with `[` (an index) is appended without a dot.
    static func join(_ base: String, _ name: String) -> String {
        if base.isEmpty { return name }
        if name.isEmpty { return base }
        return name.hasPrefix("[") ? base + name : base + "." + name
    }

    /// Each of `paths` placed under `base`: `["idfa"]` under `device` is `["device.idfa"]`.
    static func prefixed(_ base: String, _ paths: [String]) -> [String] { paths.map { join(base, $0) } }

    /// The path of element `index` of the array at `base`: `candidates[2]`.
    static func index(_ base: String, _ index: Int) -> String { base + "[\(index)]" }

    /// The path segment for an object key: the key itself when it is made of letters, digits, `_`
    /// and `-`; otherwise quoted in brackets (`custom_data["a.b"]`) so the path stays unambiguous.
    static func key(_ base: String, _ key: String) -> String {
        // By byte: an ASCII letter is alphabetic, no other ASCII byte is, and a byte of a
        // multi-byte character is never ASCII (asking the scalars' Unicode properties was a
        // visible part of checking every fact's keys).
        let plain = !key.isEmpty && key.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"): true
            default: false
            }
        }
        if plain { return join(base, key) }
        let escaped = key.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return base + "[\"\(escaped)\"]"
    }
}
