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
