import Foundation

/// Writes the bytes ``LedgerJSON/makeEncoder()`` writes, about 1.5 times as fast.
///
/// Foundation's `JSONEncoder` builds a tree of boxed values, dictionaries included, and then
/// serializes it; for the small events the worker appends on every try that costs about 4.2 µs an
/// event, against 2.8 µs here (`ledger-bench event_encode`, docs/performance.md). This encoder
/// keeps one byte buffer: every scalar is written into it as soon as it is encoded, and an object
/// keeps only its keys and where its values' bytes are, so the output is assembled once, keys
/// sorted, at the end.
///
/// The output is byte for byte `JSONEncoder`'s with `[.sortedKeys, .withoutEscapingSlashes]` and
/// the ledger's date strategy (tested on every event type, on random values through every
/// container operation, and on unusual orders of them): keys sorted by
/// their UTF-8 bytes; `"`, `\`, and control characters escaped (`\b \f \n \r \t`, the others as
/// `\u00xx`), everything else written as it is; `Data` as Base64, `URL` as its absolute string,
/// `Decimal` and integers by their description, floating-point numbers by their description less
/// a trailing `.0`; a key encoded twice keeps its last value, a nested container asked for twice
/// is one container, and a `superEncoder`'s value takes its place when the encoder is released.
/// What `JSONEncoder` refuses, this refuses with the same `EncodingError` (a date outside the
/// years 0001–9999, a NaN or infinite number, nothing encoded at the top, containers nested 512
/// deep). Objects with many keys find them through a dictionary, so a client's wide
/// `custom_data` costs linear time.
public enum CanonicalJSONEncoder {
    /// The canonical JSON of `value`.
    public static func encode<Value: Encodable>(_ value: Value) throws -> Data {
        try encodeWithTree(value).data
    }

    /// The canonical JSON of `value` and the tree it was written from, whose objects hold exactly
    /// the keys written: what the catalog compares a caller's JSON with, without parsing the
    /// output again (``JSONShape``).
    static func encodeWithTree<Value: Encodable>(_ value: Value) throws -> (data: Data, tree: CanonicalNode) {
        let state = EncodingState()
        let root = try state.box(value, at: [])
        var output = [UInt8]()
        output.reserveCapacity(state.scratch.count + 64)
        do {
            try state.write(root, into: &output)
        } catch {
            throw EncodingError.invalidValue(
                value, EncodingError.Context(codingPath: [], debugDescription: "Unable to encode the given top-level value to JSON.",
                                             underlyingError: error))
        }
        return (Data(output), root)
    }
}

/// A value being encoded: scalar bytes already written (a range of the scratch buffer), or a
/// container filled as encoding goes on.
enum CanonicalNode {
    case bytes(Range<Int>)
    case object(CanonicalObject)
    case array(CanonicalArray)
}

/// An object's members in the order encoded; sorted when written.
final class CanonicalObject {
    var keys: [String] = []
    var values: [CanonicalNode] = []
    /// Where each key is, once there are enough keys that looking along them would cost more
    /// (a client's `custom_data` can hold tens of thousands).
    private var index: [String: Int]?

    func set(_ key: String, _ value: CanonicalNode) {
        if let at = position(of: key) {
            values[at] = value
        } else {
            keys.append(key)
            values.append(value)
            index?[key] = keys.count - 1
        }
    }

    /// The value stored under `key`, if any.
    func value(for key: String) -> CanonicalNode? { position(of: key).map { values[$0] } }

    private func position(of key: String) -> Int? {
        if let index { return index[key] }
        if keys.count < 16 { return keys.firstIndex(of: key) }
        var built = [String: Int](minimumCapacity: keys.count * 2)
        for (at, existing) in keys.enumerated() { built[existing] = at }
        index = built
        return built[key]
    }
}

/// An array's elements.
final class CanonicalArray {
    var items: [CanonicalNode] = []
}

/// One encoding's buffer, and the writing of scalars into it.
final class EncodingState {
    var scratch: [UInt8] = []

    init() { scratch.reserveCapacity(512) }

    /// Writes `text` as it is and returns where it is.
    @inline(__always)
    func append(_ text: String) -> CanonicalNode {
        let start = scratch.count
        scratch.append(contentsOf: text.utf8)
        return .bytes(start..<scratch.count)
    }

    func literal(_ text: StaticString) -> CanonicalNode {
        let start = scratch.count
        scratch.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
        return .bytes(start..<scratch.count)
    }

    /// A string, quoted and escaped as `JSONEncoder` escapes it.
    func string(_ text: String) -> CanonicalNode {
        let start = scratch.count
        Self.write(string: text, into: &scratch)
        return .bytes(start..<scratch.count)
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Writes `text` quoted, escaping `"`, `\` and control characters; runs with nothing to
    /// escape are copied whole.
    static func write(string text: String, into buffer: inout [UInt8]) {
        buffer.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            var mark = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                if index > mark { buffer.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[mark..<index])) }
                buffer.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): buffer.append(byte)
                case 0x08: buffer.append(UInt8(ascii: "b"))
                case 0x0C: buffer.append(UInt8(ascii: "f"))
                case 0x0A: buffer.append(UInt8(ascii: "n"))
                case 0x0D: buffer.append(UInt8(ascii: "r"))
                case 0x09: buffer.append(UInt8(ascii: "t"))
                default:
                    buffer.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                               hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0x0F)]])
                }
                mark = index + 1
            }
            if utf8.count > mark { buffer.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[mark...])) }
        }
        buffer.append(UInt8(ascii: "\""))
    }

    func float<Number: BinaryFloatingPoint & CustomStringConvertible>(_ number: Number, at path: [any CodingKey]) throws -> CanonicalNode {
        guard number.isFinite else {
            throw EncodingError.invalidValue(
                number, EncodingError.Context(codingPath: path, debugDescription: "Unable to encode \(Number.self).\(number) directly in JSON."))
        }
        var text = number.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        return append(text)
    }

    func date(_ date: Date, at path: [any CodingKey]) throws -> CanonicalNode {
        guard let text = LedgerTimestamp.format(date) else {
            throw EncodingError.invalidValue(
                date, EncodingError.Context(codingPath: path, debugDescription: "a date outside the years 0001–9999"))
        }
        return string(text)
    }

    /// Encodes any value: the types `JSONEncoder` treats apart, then the value's own `encode(to:)`.
    func box<Value: Encodable>(_ value: Value, at path: [any CodingKey]) throws -> CanonicalNode {
        // Type comparisons, which specialization folds, before any dynamic cast.
        if Value.self == String.self { return string(value as! String) }
        if Value.self == Date.self { return try date(value as! Date, at: path) }
        if Value.self == Data.self { return string((value as! Data).base64EncodedString()) }
        if Value.self == URL.self { return string((value as! URL).absoluteString) }
        if Value.self == Decimal.self { return append((value as! Decimal).description) }
        let encoder = CanonicalEncoder(state: self, codingPath: path)
        try value.encode(to: encoder)
        guard let node = encoder.node else {
            guard path.isEmpty else { return .object(CanonicalObject()) }
            throw EncodingError.invalidValue(
                value, EncodingError.Context(codingPath: [], debugDescription: "Top-level \(Value.self) did not encode any values."))
        }
        return node
    }

    /// Containers nested deeper than this are refused, as `JSONEncoder` refuses them.
    static let maximumDepth = 512

    /// Writes `node` into `output`, objects' keys sorted by their UTF-8 bytes.
    /// - Throws: ``TooDeep`` past ``maximumDepth`` nested containers.
    func write(_ node: CanonicalNode, into output: inout [UInt8], depth: Int = 0) throws(TooDeep) {
        switch node {
        case .bytes(let range):
            output.append(contentsOf: scratch[range])
        case .array(let array):
            guard depth + 1 < Self.maximumDepth else { throw TooDeep() }
            output.append(UInt8(ascii: "["))
            for (index, item) in array.items.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                try write(item, into: &output, depth: depth + 1)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let object):
            guard depth + 1 < Self.maximumDepth else { throw TooDeep() }
            output.append(UInt8(ascii: "{"))
            let order = object.keys.indices.sorted { object.keys[$0].utf8.lexicographicallyPrecedes(object.keys[$1].utf8) }
            for (position, index) in order.enumerated() {
                if position > 0 { output.append(UInt8(ascii: ",")) }
                Self.write(string: object.keys[index], into: &output)
                output.append(UInt8(ascii: ":"))
                try write(object.values[index], into: &output, depth: depth + 1)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// More nested containers than ``maximumDepth``.
    struct TooDeep: Error {}
}

/// The `Encoder` a value's `encode(to:)` is given.
final class CanonicalEncoder: Encoder {
    let state: EncodingState
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    /// What the value encoded: its one container, or its single value.
    var node: CanonicalNode?

    init(state: EncodingState, codingPath: [any CodingKey]) {
        self.state = state
        self.codingPath = codingPath
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let object: CanonicalObject
        if case .object(let existing) = node {
            object = existing
        } else {
            object = CanonicalObject()
            node = .object(object)
        }
        return KeyedEncodingContainer(CanonicalKeyedContainer<Key>(state: state, object: object, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let array: CanonicalArray
        if case .array(let existing) = node {
            array = existing
        } else {
            array = CanonicalArray()
            node = .array(array)
        }
        return CanonicalUnkeyedContainer(state: state, array: array, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { CanonicalSingleValueContainer(encoder: self) }
}

/// A key for an array element in a coding path (`JSONEncoder`'s `Index 3`).
struct CanonicalIndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}

struct CanonicalKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let state: EncodingState
    let object: CanonicalObject
    let codingPath: [any CodingKey]
    /// A super encoder this container came from, kept alive while the container is (its value
    /// takes its place when it is released, as in `JSONEncoder`).
    var owner: AnyObject? = nil

    mutating func encodeNil(forKey key: Key) throws { object.set(key.stringValue, state.literal("null")) }
    mutating func encode(_ value: Bool, forKey key: Key) throws {
        object.set(key.stringValue, state.literal(value ? "true" : "false"))
    }
    mutating func encode(_ value: String, forKey key: Key) throws { object.set(key.stringValue, state.string(value)) }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        object.set(key.stringValue, try state.float(value, at: codingPath + [key]))
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        object.set(key.stringValue, try state.float(value, at: codingPath + [key]))
    }
    mutating func encode(_ value: Int, forKey key: Key) throws { object.set(key.stringValue, state.append(String(value))) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { object.set(key.stringValue, state.append(String(value))) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { object.set(key.stringValue, state.append(String(value))) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { object.set(key.stringValue, state.append(String(value))) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { object.set(key.stringValue, state.append(String(value))) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { object.set(key.stringValue, state.append(String(value))) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { object.set(key.stringValue, state.append(String(value))) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { object.set(key.stringValue, state.append(String(value))) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { object.set(key.stringValue, state.append(String(value))) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { object.set(key.stringValue, state.append(String(value))) }
    mutating func encode(_ value: Int128, forKey key: Key) throws { object.set(key.stringValue, state.append(String(value))) }
    mutating func encode(_ value: UInt128, forKey key: Key) throws { object.set(key.stringValue, state.append(String(value))) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        object.set(key.stringValue, try state.box(value, at: codingPath + [key]))
    }

    // A container asked for twice under one key is the same container, as in `JSONEncoder`.
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        let nested: CanonicalObject
        if case .object(let existing) = object.value(for: key.stringValue) {
            nested = existing
        } else {
            nested = CanonicalObject()
            object.set(key.stringValue, .object(nested))
        }
        return KeyedEncodingContainer(CanonicalKeyedContainer<NestedKey>(state: state, object: nested, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested: CanonicalArray
        if case .array(let existing) = object.value(for: key.stringValue) {
            nested = existing
        } else {
            nested = CanonicalArray()
            object.set(key.stringValue, .array(nested))
        }
        return CanonicalUnkeyedContainer(state: state, array: nested, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder { superEncoder(named: "super") }
    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(named: key.stringValue, key: key) }

    private func superEncoder(named name: String, key: (any CodingKey)? = nil) -> any Encoder {
        CanonicalSuperEncoder(state: state, place: .member(object, name), codingPath: codingPath + [key ?? CanonicalNamedKey(name)])
    }
}

/// A key made from its name (`super`).
struct CanonicalNamedKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

struct CanonicalUnkeyedContainer: UnkeyedEncodingContainer {
    let state: EncodingState
    let array: CanonicalArray
    let codingPath: [any CodingKey]
    /// See ``CanonicalKeyedContainer/owner``.
    var owner: AnyObject? = nil
    var count: Int { array.items.count }

    private var nextPath: [any CodingKey] { codingPath + [CanonicalIndexKey(array.items.count)] }

    mutating func encodeNil() throws { array.items.append(state.literal("null")) }
    mutating func encode(_ value: Bool) throws { array.items.append(state.literal(value ? "true" : "false")) }
    mutating func encode(_ value: String) throws { array.items.append(state.string(value)) }
    mutating func encode(_ value: Double) throws { array.items.append(try state.float(value, at: nextPath)) }
    mutating func encode(_ value: Float) throws { array.items.append(try state.float(value, at: nextPath)) }
    mutating func encode(_ value: Int) throws { array.items.append(state.append(String(value))) }
    mutating func encode(_ value: Int8) throws { array.items.append(state.append(String(value))) }
    mutating func encode(_ value: Int16) throws { array.items.append(state.append(String(value))) }
    mutating func encode(_ value: Int32) throws { array.items.append(state.append(String(value))) }
    mutating func encode(_ value: Int64) throws { array.items.append(state.append(String(value))) }
    mutating func encode(_ value: UInt) throws { array.items.append(state.append(String(value))) }
    mutating func encode(_ value: UInt8) throws { array.items.append(state.append(String(value))) }
    mutating func encode(_ value: UInt16) throws { array.items.append(state.append(String(value))) }
    mutating func encode(_ value: UInt32) throws { array.items.append(state.append(String(value))) }
    mutating func encode(_ value: UInt64) throws { array.items.append(state.append(String(value))) }
    mutating func encode(_ value: Int128) throws { array.items.append(state.append(String(value))) }
    mutating func encode(_ value: UInt128) throws { array.items.append(state.append(String(value))) }
    mutating func encode<T: Encodable>(_ value: T) throws { array.items.append(try state.box(value, at: nextPath)) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let path = nextPath
        let nested = CanonicalObject()
        array.items.append(.object(nested))
        return KeyedEncodingContainer(CanonicalKeyedContainer<NestedKey>(state: state, object: nested, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let path = nextPath
        let nested = CanonicalArray()
        array.items.append(.array(nested))
        return CanonicalUnkeyedContainer(state: state, array: nested, codingPath: path)
    }

    mutating func superEncoder() -> any Encoder {
        CanonicalSuperEncoder(state: state, place: .element(array, array.items.count), codingPath: nextPath)
    }
}

struct CanonicalSingleValueContainer: SingleValueEncodingContainer {
    let encoder: CanonicalEncoder
    /// See ``CanonicalKeyedContainer/owner``.
    var owner: AnyObject? = nil
    var codingPath: [any CodingKey] { encoder.codingPath }
    private var state: EncodingState { encoder.state }

    private func set(_ node: CanonicalNode) { encoder.node = node }

    mutating func encodeNil() throws { set(state.literal("null")) }
    mutating func encode(_ value: Bool) throws { set(state.literal(value ? "true" : "false")) }
    mutating func encode(_ value: String) throws { set(state.string(value)) }
    mutating func encode(_ value: Double) throws { set(try state.float(value, at: codingPath)) }
    mutating func encode(_ value: Float) throws { set(try state.float(value, at: codingPath)) }
    mutating func encode(_ value: Int) throws { set(state.append(String(value))) }
    mutating func encode(_ value: Int8) throws { set(state.append(String(value))) }
    mutating func encode(_ value: Int16) throws { set(state.append(String(value))) }
    mutating func encode(_ value: Int32) throws { set(state.append(String(value))) }
    mutating func encode(_ value: Int64) throws { set(state.append(String(value))) }
    mutating func encode(_ value: UInt) throws { set(state.append(String(value))) }
    mutating func encode(_ value: UInt8) throws { set(state.append(String(value))) }
    mutating func encode(_ value: UInt16) throws { set(state.append(String(value))) }
    mutating func encode(_ value: UInt32) throws { set(state.append(String(value))) }
    mutating func encode(_ value: UInt64) throws { set(state.append(String(value))) }
    mutating func encode(_ value: Int128) throws { set(state.append(String(value))) }
    mutating func encode(_ value: UInt128) throws { set(state.append(String(value))) }
    mutating func encode<T: Encodable>(_ value: T) throws { set(try state.box(value, at: codingPath)) }
}

/// The encoder a `superEncoder` call returns. As in `JSONEncoder`, what it encoded takes its
/// place (the member, or the element at the index it was made for) when it is released, and an
/// encoder that encoded nothing leaves an empty object there.
final class CanonicalSuperEncoder: Encoder {
    enum Place {
        case member(CanonicalObject, String)
        case element(CanonicalArray, Int)
    }

    let inner: CanonicalEncoder
    let place: Place
    var codingPath: [any CodingKey] { inner.codingPath }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(state: EncodingState, place: Place, codingPath: [any CodingKey]) {
        self.inner = CanonicalEncoder(state: state, codingPath: codingPath)
        self.place = place
    }

    deinit {
        let node = inner.node ?? .object(CanonicalObject())
        switch place {
        case .member(let object, let key): object.set(key, node)
        case .element(let array, let index): array.items.insert(node, at: min(index, array.items.count))
        }
    }

    // The containers keep this encoder alive, so its value is placed when they are done.
    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        _ = inner.container(keyedBy: type)
        guard case .object(let object) = inner.node else { preconditionFailure("a keyed container makes an object") }
        return KeyedEncodingContainer(CanonicalKeyedContainer<Key>(state: inner.state, object: object, codingPath: codingPath, owner: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        _ = inner.unkeyedContainer()
        guard case .array(let array) = inner.node else { preconditionFailure("an unkeyed container makes an array") }
        return CanonicalUnkeyedContainer(state: inner.state, array: array, codingPath: codingPath, owner: self)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { CanonicalSingleValueContainer(encoder: inner, owner: self) }
}
