import Foundation

/// Compares the JSON a caller sent with the canonical re-encoding of what was decoded from it:
/// a key the canonical form lacks is a field the type does not know (decoding alone ignores it),
/// and a string or key holding U+0000 cannot be stored by PostgreSQL's `jsonb`.
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
    /// string or key holding U+0000. `canonical` is the encoder's tree of the canonical form (its
    /// objects hold the keys it wrote); pass `nil` to check only for U+0000.
    static func firstProblem(input: some ShapeNode, canonical: CanonicalNode?) -> Problem? {
        var path: [Step] = []
        return firstProblem(input: input, canonical: canonical, path: &path)
    }

    /// The walk: `path` is the way to `input`, made a text only for the problem found (every
    /// fact's keys are walked, and almost none has a problem).
    private static func firstProblem<Node: ShapeNode>(input: Node, canonical: CanonicalNode?, path: inout [Step]) -> Problem? {
        switch input.shape {
        case .string(let text):
            return text.utf8.contains(0) ? nul(field(path)) : nil
        case .object(let keys):
            var canonicalObject: CanonicalObject?
            if case .object(let found)? = canonical { canonicalObject = found }
            for key in keys.sorted() {
                path.append(.key(key))
                defer { path.removeLast() }
                if key.utf8.contains(0) { return nul(field(path)) }
                guard let value = input.member(key) else { continue }
                var canonicalValue: CanonicalNode?
                if let canonicalObject {
                    canonicalValue = canonicalObject.value(for: key)
                    if canonicalValue == nil, !value.isNull {
                        return Problem(
                            kind: .unknownField, field: field(path), rule: "unknown_field",
                            message: "The type has no such field (a new field needs a new schema version).")
                    }
                }
                if let problem = firstProblem(input: value, canonical: canonicalValue, path: &path) { return problem }
            }
            return nil
        case .array(let count):
            var canonicalItems: [CanonicalNode]?
            if case .array(let found)? = canonical { canonicalItems = found.items }
            for index in 0..<count {
                let counterpart = canonicalItems.flatMap { index < $0.count ? $0[index] : nil }
                path.append(.index(index))
                defer { path.removeLast() }
                if let problem = firstProblem(input: input.element(index), canonical: counterpart, path: &path) { return problem }
            }
            return nil
        case .scalar:
            return nil
        }
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

/// What the shape check needs to know of one parsed JSON value.
enum NodeShape {
    /// A string.
    case string(String)
    /// An object with these keys.
    case object(keys: [String])
    /// An array of this many elements.
    case array(count: Int)
    /// A number, a boolean or `null`.
    case scalar
}

/// A parsed JSON value ``JSONShape`` can walk: a ``JSONValue`` as the HTTP API reads a body, or
/// `JSONSerialization`'s tree of bytes given to the catalog.
protocol ShapeNode {
    /// What the value is.
    var shape: NodeShape { get }
    /// Whether the value is `null`.
    var isNull: Bool { get }
    /// The member under `key` of an object.
    func member(_ key: String) -> Self?
    /// Element `index` of an array.
    func element(_ index: Int) -> Self
}

extension JSONValue: ShapeNode {
    var shape: NodeShape {
        switch self {
        case .string(let text): .string(text)
        case .object(let members): .object(keys: Array(members.keys))
        case .array(let items): .array(count: items.count)
        case .null, .bool, .number: .scalar
        }
    }

    var isNull: Bool { self == .null }

    func member(_ key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members[key]
    }

    func element(_ index: Int) -> JSONValue {
        guard case .array(let items) = self else { return .null }
        return items[index]
    }
}

/// A value of `JSONSerialization`'s tree, cast once.
struct FoundationJSONNode: ShapeNode {
    private enum Value {
        case string(String)
        case object([String: Any])
        case array([Any])
        case null
        case scalar
    }

    private let value: Value

    init(_ any: Any) {
        if let text = any as? String {
            value = .string(text)
        } else if let object = any as? [String: Any] {
            value = .object(object)
        } else if let array = any as? [Any] {
            value = .array(array)
        } else {
            value = any is NSNull ? .null : .scalar
        }
    }

    var shape: NodeShape {
        switch value {
        case .string(let text): .string(text)
        case .object(let members): .object(keys: Array(members.keys))
        case .array(let items): .array(count: items.count)
        case .null, .scalar: .scalar
        }
    }

    var isNull: Bool {
        if case .null = value { return true }
        return false
    }

    func member(_ key: String) -> FoundationJSONNode? {
        guard case .object(let members) = value, let found = members[key] else { return nil }
        return FoundationJSONNode(found)
    }

    func element(_ index: Int) -> FoundationJSONNode {
        guard case .array(let items) = value else { return FoundationJSONNode(NSNull()) }
        return FoundationJSONNode(items[index])
    }
}
