import Foundation

/// Turns Foundation's coding errors into ``EventValidationError``s that name the field (as a dotted
/// path) and the rule.
enum ErrorMapping {
    /// The dotted path of a coding path: `device.idfa`, `candidates[2].time`, `custom_data["a.b"]`.
    static func path(_ codingPath: [any CodingKey]) -> String {
        codingPath.reduce(into: "") { path, key in
            if let index = key.intValue, key.stringValue == "Index \(index)" {
                path = FieldPath.index(path, index)
            } else {
                path = FieldPath.key(path, key.stringValue)
            }
        }
    }

    /// The error for a failed decode.
    static func decoding(_ error: DecodingError, eventType: String) -> EventValidationError {
        switch error {
        case .keyNotFound(let key, let context):
            return EventValidationError(
                .missingField, eventType: eventType, field: path(context.codingPath + [key]),
                rule: RuleViolation.requiredRule, message: "The field is required but absent.")
        case .valueNotFound(_, let context):
            return EventValidationError(
                .missingField, eventType: eventType, field: path(context.codingPath),
                rule: RuleViolation.requiredRule, message: "The field is required but null.")
        case .typeMismatch(let type, let context):
            let expected = jsonTypeName(type)
            return EventValidationError(
                .wrongType, eventType: eventType, field: path(context.codingPath),
                rule: "expected_\(expected)", message: "The field must be a JSON \(expected).")
        case .dataCorrupted(let context):
            let field = path(context.codingPath)
            if let violation = context.underlyingError as? RuleViolation {
                return ruleViolation(violation.at(field), eventType: eventType)
            }
            return EventValidationError(
                .invalidValue, eventType: eventType, field: field.isEmpty ? nil : field,
                rule: "invalid_value", message: "The value is not valid: \(context.debugDescription)")
        @unknown default:
            return EventValidationError(
                .invalidValue, eventType: eventType, rule: "invalid_value", message: "The data could not be decoded.")
        }
    }

    /// The error for a failed encode (a value JSON cannot hold, such as a date past year 9999).
    static func encoding(_ error: EncodingError, eventType: String) -> EventValidationError {
        switch error {
        case .invalidValue(_, let context):
            let field = path(context.codingPath)
            return EventValidationError(
                .invalidValue, eventType: eventType, field: field.isEmpty ? nil : field, rule: "encodable",
                message: "The value cannot be encoded: \(context.debugDescription).")
        @unknown default:
            return EventValidationError(.invalidValue, eventType: eventType, rule: "encodable", message: "The event cannot be encoded.")
        }
    }

    /// The error for a broken domain rule: `required` is a missing field, anything else an invalid value.
    static func ruleViolation(_ violation: RuleViolation, eventType: String) -> EventValidationError {
        let kind: EventValidationError.Kind = violation.rule == RuleViolation.requiredRule ? .missingField : .invalidValue
        let field = violation.field.flatMap { $0.isEmpty ? nil : $0 }
        return EventValidationError(kind, eventType: eventType, field: field, rule: violation.rule, message: violation.message)
    }

    /// The JSON type a Swift type is read from.
    private static func jsonTypeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "string"
        case is Bool.Type: return "boolean"
        case is Decimal.Type, is Double.Type, is Float.Type: return "number"
        case is Int.Type, is Int8.Type, is Int16.Type, is Int32.Type, is Int64.Type: return "number"
        case is UInt.Type, is UInt8.Type, is UInt16.Type, is UInt32.Type, is UInt64.Type: return "number"
        default:
            let name = String(describing: type)
            if name.hasPrefix("Array") || name.hasPrefix("[") && !name.contains(":") { return "array" }
            if name.hasPrefix("Dictionary") || name.hasPrefix("[") { return "object" }
            return "value"
        }
    }
}

/// Compares the JSON a caller sent with the canonical re-encoding of what was decoded from it.
enum JSONShape {
    /// A problem found in the sent JSON.
    struct Problem {
        var kind: EventValidationError.Kind
        var field: String
        var rule: String
        var message: String
    }

    /// One step of the path to a value: an object's key or an array's index.
    private enum Step {
        case key(String)
        case index(Int)
    }

    /// The first key (in sorted order, depth first) of `input` that the canonical form does not
    /// have although its value is not `null` — a field the type does not know — or the first
    /// string or key holding U+0000, which PostgreSQL's `jsonb` cannot store.
    /// `canonical` is the encoder's tree of the canonical form (its objects hold the keys it
    /// wrote); pass `nil` to check only for U+0000.
    static func firstProblem(input: Any, canonical: CanonicalNode?) -> Problem? {
        var path: [Step] = []
        return firstProblem(input: input, canonical: canonical, path: &path)
    }

    /// The walk: `path` is the way to `input`, made a text only for the problem found (every
    /// fact's keys are walked, and almost none has a problem).
    private static func firstProblem(input: Any, canonical: CanonicalNode?, path: inout [Step]) -> Problem? {
        if let text = input as? String {
            return text.utf8.contains(0) ? nul(field(path)) : nil
        }
        if let object = input as? [String: Any] {
            var canonicalObject: CanonicalObject?
            if case .object(let found)? = canonical { canonicalObject = found }
            for key in object.keys.sorted() {
                path.append(.key(key))
                defer { path.removeLast() }
                if key.utf8.contains(0) { return nul(field(path)) }
                guard let value = object[key] else { continue }
                var canonicalValue: CanonicalNode?
                if let canonicalObject {
                    canonicalValue = canonicalObject.value(for: key)
                    if canonicalValue == nil, !(value is NSNull) {
                        return Problem(
                            kind: .unknownField, field: field(path), rule: "unknown_field",
                            message: "The type has no such field (a new field needs a new schema version).")
                    }
                }
                if let problem = firstProblem(input: value, canonical: canonicalValue, path: &path) { return problem }
            }
            return nil
        }
        if let array = input as? [Any] {
            var canonicalItems: [CanonicalNode]?
            if case .array(let found)? = canonical { canonicalItems = found.items }
            for (index, value) in array.enumerated() {
                let counterpart = canonicalItems.flatMap { index < $0.count ? $0[index] : nil }
                path.append(.index(index))
                defer { path.removeLast() }
                if let problem = firstProblem(input: value, canonical: counterpart, path: &path) { return problem }
            }
        }
        return nil
    }

    /// The field path of `path`: `device.idfa`, `custom_data["a.b"]`, `candidates[2]`.
    private static func field(_ path: [Step]) -> String {
        path.reduce(into: "") { text, step in
            switch step {
            case .key(let key): text = FieldPath.key(text, key)
            case .index(let index): text = FieldPath.index(text, index)
            }
        }
    }

    private static func nul(_ field: String) -> Problem {
        Problem(
            kind: .invalidValue, field: field, rule: "no_nul_character",
            message: "The text holds U+0000, which PostgreSQL's jsonb cannot store.")
    }
}
