import Foundation
import LedgerDomain

/// A step in a JSON path: an object key or an array index.
enum Step {
    case key(String)
    case index(Int)
}

/// Helpers to build bad inputs from a good sample's canonical JSON.
enum JSONEditing {
    /// The canonical JSON of `event` parsed into Foundation objects.
    static func tree<Event: LedgerEvent>(_ event: Event) throws -> Any {
        try JSONSerialization.jsonObject(with: EventCatalog.standard.encode(event))
    }

    /// The JSON of `event` with the value at `path` replaced (`nil` removes the key).
    static func data<Event: LedgerEvent>(_ event: Event, setting value: Any?, at path: [Step]) throws -> Data {
        try data(from: EventCatalog.standard.encode(event), setting: value, at: path)
    }

    /// `data` (JSON) with the value at `path` replaced (`nil` removes the key).
    static func data(from data: Data, setting value: Any?, at path: [Step]) throws -> Data {
        var root = try JSONSerialization.jsonObject(with: data)
        set(value, at: path[...], in: &root)
        return try JSONSerialization.data(withJSONObject: root, options: [.sortedKeys])
    }

    private static func set(_ value: Any?, at path: ArraySlice<Step>, in node: inout Any) {
        guard let step = path.first else { return }
        let rest = path.dropFirst()
        switch step {
        case .key(let key):
            var object = node as? [String: Any] ?? [:]
            if rest.isEmpty {
                object[key] = value
            } else {
                var child = object[key] ?? [String: Any]()
                set(value, at: rest, in: &child)
                object[key] = child
            }
            node = object
        case .index(let index):
            var array = node as? [Any] ?? []
            if rest.isEmpty {
                array[index] = value ?? NSNull()
            } else {
                set(value, at: rest, in: &array[index])
            }
            node = array
        }
    }
}
