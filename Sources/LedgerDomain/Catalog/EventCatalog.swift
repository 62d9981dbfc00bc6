import Foundation

/// The list of every event type the ledger knows, and the one gate events pass through.
///
/// The event store calls ``validate(type:schemaVersion:data:)`` before it appends an event, stores
/// the bytes of ``encode(_:)`` (the canonical form), and calls ``decode(type:schemaVersion:data:)``
/// when it reads. The privacy layer asks ``entry(named:)`` which fields are personal.
public struct EventCatalog: Sendable {
    /// What the catalog knows about one (type name, schema version).
    public struct Entry: Sendable, CustomStringConvertible {
        /// The stored type name (`FirstOpen`).
        public let eventType: String
        /// The schema version.
        public let schemaVersion: Int
        /// What the event is about.
        public let category: EventCategory
        /// The category of the streams it is appended to.
        public let streamCategory: StreamCategory
        /// Dotted JSON paths of its personal fields (see ``LedgerEvent/personalFields``).
        public let personalFields: [String]
        /// Whether it ends its stream (``LedgerEvent/endsStream``).
        public let endsStream: Bool
        /// The Swift type that encodes and decodes it.
        public let swiftType: any LedgerEvent.Type

        init<Event: LedgerEvent>(_ type: Event.Type) {
            eventType = Event.eventType
            schemaVersion = Event.schemaVersion
            category = Event.category
            streamCategory = Event.streamCategory
            personalFields = Event.personalFields
            endsStream = Event.endsStream
            swiftType = type
        }

        /// `FirstOpen v1 (device)`.
        public var description: String { "\(eventType) v\(schemaVersion) (\(category.rawValue))" }
    }

    /// The largest `data` accepted: 1 MiB of JSON. Larger payloads (a huge custom dictionary, a
    /// runaway response body) are refused rather than bloating every replay.
    public static let maximumDataSize = 1_048_576

    /// Every entry, sorted by type name, then schema version.
    public let entries: [Entry]
    private let byName: [String: [Int: Entry]]
    /// This catalog value's identity (copies share it): what lets a store trust bytes this very
    /// catalog encoded instead of checking them a second time.
    public let identity = UUID()

    /// A catalog of `types`. When two types share a name and schema version, the first is kept
    /// (the standard catalog's tests make sure it has no such pair).
    public init(_ types: [any LedgerEvent.Type]) {
        var byName: [String: [Int: Entry]] = [:]
        for type in types {
            let entry = Entry(type)
            if byName[entry.eventType]?[entry.schemaVersion] == nil {
                byName[entry.eventType, default: [:]][entry.schemaVersion] = entry
            }
        }
        self.byName = byName
        entries = byName.values.flatMap(\.values).sorted {
            ($0.eventType, $0.schemaVersion) < ($1.eventType, $1.schemaVersion)
        }
    }

    /// The newest schema version of the type called `name`, or `nil` if there is no such type.
    public func entry(named name: String) -> Entry? {
        byName[name]?.max { $0.key < $1.key }?.value
    }

    /// The names of the types that end their stream (``LedgerEvent/endsStream``): the store
    /// refuses a second one in a stream, as the database does.
    public var streamEndingTypes: Set<String> {
        Set(entries.lazy.filter(\.endsStream).map(\.eventType))
    }

    /// The entry for one schema version of a type.
    public func entry(named name: String, schemaVersion: Int) -> Entry? {
        byName[name]?[schemaVersion]
    }

    /// Checks an incoming event and decodes it. Rules, in order: known type; known schema version;
    /// at most ``maximumDataSize`` bytes; UTF-8; JSON; a JSON object; decodable (every required
    /// field present, every field of its JSON type, enumerations and formats valid); the type's
    /// domain rules (``LedgerEvent/validate()``); no field the type does not know; no U+0000 in any
    /// string (`jsonb` refuses it).
    ///
    /// Store the bytes of ``encode(_:)`` of the result, not the bytes received: they are canonical.
    /// - Throws: an ``EventValidationError`` naming the type, the field and the rule.
    public func validate(type: String, schemaVersion: Int, data: Data) throws(EventValidationError) -> any LedgerEvent {
        try validateEncoding(type: type, schemaVersion: schemaVersion, data: data).event
    }

    /// ``validate(type:schemaVersion:data:)``, returning also the event's canonical JSON, which
    /// checking it computed: the bytes ``encode(_:)`` returns for that event, without its rules
    /// checked and its JSON encoded a second time.
    public func validateEncoding(type: String, schemaVersion: Int, data: Data) throws(EventValidationError)
        -> (event: any LedgerEvent, canonical: Data)
    {
        let entry = try lookUp(type: type, schemaVersion: schemaVersion)
        return try validated(entry.swiftType, .bytes(data))
    }

    /// ``validateEncoding(type:schemaVersion:data:)`` for an event's JSON already parsed, as the
    /// HTTP API reads a request (an object with no key twice): the same rules, without writing the
    /// value out as text and parsing it back into a tree.
    public func validateEncoding(type: String, schemaVersion: Int, json: JSONValue) throws(EventValidationError)
        -> (event: any LedgerEvent, canonical: Data)
    {
        let entry = try lookUp(type: type, schemaVersion: schemaVersion)
        return try validated(entry.swiftType, .parsed(json))
    }

    /// Decodes a stored event, for reading. Unlike ``validate(type:schemaVersion:data:)`` it does not
    /// apply the domain rules, the size limit or the unknown-field check: stored history is read as
    /// it is, even if a rule was later fixed. A personal field that is absent (erased) decodes as `nil`.
    /// - Throws: ``EventValidationError`` for an unknown type or version, or data that does not decode.
    public func decode(type: String, schemaVersion: Int, data: Data) throws(EventValidationError) -> any LedgerEvent {
        let entry = try lookUp(type: type, schemaVersion: schemaVersion)
        return try decoded(entry.swiftType, data: data)
    }

    /// The canonical JSON of an event: keys sorted, slashes unescaped, dates with microseconds.
    /// The event is validated first, so what this returns is always appendable.
    /// - Throws: ``EventValidationError`` when the type is not in this catalog, a domain rule is
    ///   broken, or the JSON would exceed ``maximumDataSize``.
    public func encode<Event: LedgerEvent>(_ event: Event) throws(EventValidationError) -> Data {
        guard let entry = entry(named: Event.eventType, schemaVersion: Event.schemaVersion),
            ObjectIdentifier(entry.swiftType) == ObjectIdentifier(Event.self)
        else {
            throw EventValidationError(
                .unknownType, eventType: Event.eventType, rule: "unknown_type",
                message: "The type \(Event.self) (\(Event.eventType) v\(Event.schemaVersion)) is not in the catalog.")
        }
        do {
            try event.validate()
        } catch {
            throw ErrorMapping.ruleViolation(error, eventType: Event.eventType)
        }
        return try Self.canonicalData(event, name: Event.eventType)
    }

    /// Checks envelope metadata the way ``validate(type:schemaVersion:data:)`` checks data (errors
    /// name the type `EventMetadata`).
    public func validateMetadata(_ data: Data) throws(EventValidationError) -> EventMetadata {
        try Self.checkedDecode(EventMetadata.self, name: EventMetadata.typeName, data: data) { (metadata: EventMetadata) throws(RuleViolation) in
            try metadata.validate()
        }
    }

    /// The canonical JSON of envelope metadata.
    public func encode(metadata: EventMetadata) throws(EventValidationError) -> Data {
        do {
            try metadata.validate()
        } catch {
            throw ErrorMapping.ruleViolation(error, eventType: EventMetadata.typeName)
        }
        return try Self.canonicalData(metadata, name: EventMetadata.typeName)
    }

    // MARK: The pipeline

    private func lookUp(type: String, schemaVersion: Int) throws(EventValidationError) -> Entry {
        guard let versions = byName[type] else {
            throw EventValidationError(
                .unknownType, eventType: type, rule: "unknown_type", message: "The event type '\(type)' is not in the catalog.")
        }
        guard let entry = versions[schemaVersion] else {
            let known = versions.keys.sorted().map(String.init).joined(separator: ", ")
            throw EventValidationError(
                .unknownSchemaVersion, eventType: type, rule: "unknown_schema_version",
                message: "Schema version \(schemaVersion) of '\(type)' is not in the catalog (known: \(known)).")
        }
        return entry
    }

    /// An event's JSON as a caller gives it: text, or already parsed.
    private enum Input {
        case bytes(Data)
        case parsed(JSONValue)
    }

    private func validated<Event: LedgerEvent>(_ type: Event.Type, _ input: Input) throws(EventValidationError)
        -> (event: any LedgerEvent, canonical: Data)
    {
        let rules = { (event: Event) throws(RuleViolation) in try event.validate() }
        let checked = switch input {
        case .bytes(let data): try Self.checkedDecodeEncoding(type, name: Event.eventType, data: data, rules: rules)
        case .parsed(let json): try Self.checkedDecodeEncoding(type, name: Event.eventType, json: json, rules: rules)
        }
        return (checked.value, checked.canonical)
    }

    private func decoded<Event: LedgerEvent>(_ type: Event.Type, data: Data) throws(EventValidationError) -> any LedgerEvent {
        try Self.decodeMapped(type, name: Event.eventType, data: data)
    }

    /// Decodes with the ledger's decoder, turning a `DecodingError` into a field-naming error.
    private static func decodeMapped<Value: Decodable>(_ type: Value.Type, name: String, data: Data) throws(EventValidationError) -> Value {
        do {
            return try LedgerJSON.makeDecoder().decode(type, from: data)
        } catch let error as DecodingError {
            throw ErrorMapping.decoding(error, eventType: name)
        } catch {
            throw EventValidationError(.malformedJSON, eventType: name, rule: "json_syntax", message: "The data is not JSON.")
        }
    }

    /// Size, UTF-8, JSON object, decode, domain rules, unknown fields and U+0000.
    static func checkedDecode<Value: Codable>(
        _ type: Value.Type, name: String, data: Data, rules: (Value) throws(RuleViolation) -> Void
    ) throws(EventValidationError) -> Value {
        try checkedDecodeEncoding(type, name: name, data: data, rules: rules).value
    }

    /// ``checkedDecode(_:name:data:rules:)``, returning also the value's canonical JSON.
    static func checkedDecodeEncoding<Value: Codable>(
        _ type: Value.Type, name: String, data: Data, rules: (Value) throws(RuleViolation) -> Void
    ) throws(EventValidationError) -> (value: Value, canonical: Data) {
        try checkSize(data, name: name, described: "The data")
        guard String(validating: data, as: UTF8.self) != nil else {
            throw EventValidationError(.invalidUTF8, eventType: name, rule: "utf8", message: "The data is not valid UTF-8.")
        }
        let input: Any
        do {
            input = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            throw EventValidationError(.malformedJSON, eventType: name, rule: "json_syntax", message: "The data is not JSON.")
        }
        guard input is [String: Any] else { throw notAnObject(name) }
        return try checkedDecodeEncoding(type, name: name, data: data, input: FoundationJSONNode(input), rules: rules)
    }

    /// ``checkedDecodeEncoding(_:name:data:rules:)`` for JSON already parsed (as the HTTP API reads
    /// a request): its bytes are written by the canonical encoder, which is also what a caller's
    /// `JSONEncoder` with the ledger's settings writes, and are not parsed into a second tree.
    static func checkedDecodeEncoding<Value: Codable>(
        _ type: Value.Type, name: String, json: JSONValue, rules: (Value) throws(RuleViolation) -> Void
    ) throws(EventValidationError) -> (value: Value, canonical: Data) {
        guard case .object = json else { throw notAnObject(name) }
        let data: Data
        do {
            data = try CanonicalJSONEncoder.encode(json)
        } catch {
            throw EventValidationError(.invalidValue, eventType: name, rule: "encodable", message: "The value cannot be encoded.")
        }
        try checkSize(data, name: name, described: "The data")
        return try checkedDecodeEncoding(type, name: name, data: data, input: json, rules: rules)
    }

    /// Decode, domain rules, canonical encoding, then unknown fields and U+0000 by comparing
    /// `input` (the parsed `data`) with the canonical form.
    private static func checkedDecodeEncoding<Value: Codable>(
        _ type: Value.Type, name: String, data: Data, input: some ShapeNode, rules: (Value) throws(RuleViolation) -> Void
    ) throws(EventValidationError) -> (value: Value, canonical: Data) {
        let value = try decodeMapped(type, name: name, data: data)
        do {
            try rules(value)
        } catch {
            throw ErrorMapping.ruleViolation(error, eventType: name)
        }
        // The canonical form is checked for U+0000 as ``encode(_:)`` checks it (one scan for the
        // escape): the decoder and the input's tree need not read the same value where a key
        // repeats, and these bytes are what the store is given as checked. The input is compared
        // with the tree the encoder wrote them from, which has the keys the bytes have.
        let (canonical, canonicalTree) = try canonicalDataAndTree(value, name: name)
        if let problem = JSONShape.firstProblem(input: input, canonical: canonicalTree) {
            throw EventValidationError(problem.kind, eventType: name, field: problem.field, rule: problem.rule, message: problem.message)
        }
        return (value, canonical)
    }

    /// Refuses more than ``maximumDataSize`` bytes; `described` names them in the message.
    private static func checkSize(_ data: Data, name: String, described: String) throws(EventValidationError) {
        if data.count > maximumDataSize {
            throw EventValidationError(
                .tooLarge, eventType: name, rule: "max_\(maximumDataSize)_bytes",
                message: "\(described) is \(data.count) bytes; the limit is \(maximumDataSize) bytes (1 MiB).")
        }
    }

    private static func notAnObject(_ name: String) -> EventValidationError {
        EventValidationError(.notAnObject, eventType: name, rule: "json_object", message: "The data must be a JSON object.")
    }

    /// Encodes canonically and enforces the size limit and the U+0000 rule on the result.
    static func canonicalData(_ value: some Encodable, name: String) throws(EventValidationError) -> Data {
        try canonicalDataAndTree(value, name: name).data
    }

    /// ``canonicalData(_:name:)`` and the encoder's tree of it.
    private static func canonicalDataAndTree(_ value: some Encodable, name: String) throws(EventValidationError)
        -> (data: Data, tree: CanonicalNode)
    {
        let (data, tree) = try encodedWithinLimit(value, name: name)
        // The encoder writes U+0000 as `\u0000`: bytes without that sequence hold none, and need
        // no second parse (which cost as much as the encoding itself).
        guard holdsEscapedNUL(data) else { return (data, tree) }
        if let parsed = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]),
            let problem = JSONShape.firstProblem(input: FoundationJSONNode(parsed), canonical: nil)
        {
            throw EventValidationError(problem.kind, eventType: name, field: problem.field, rule: problem.rule, message: problem.message)
        }
        return (data, tree)
    }

    /// Whether the JSON text `data` holds the escape `\u0000`: the six bytes, their backslash not
    /// itself escaped (`\\u0000` is a backslash and the text `u0000`, which any string may hold),
    /// i.e. an odd run of backslashes ends at its own. For JSON text; the full check (or jsonb)
    /// has the last word on anything else.
    package static func holdsEscapedNUL(_ data: Data) -> Bool {
        data.withUnsafeBytes { bytes in
            escapedNUL.occurs(in: bytes) { start in
                var backslashes = 1
                while start - backslashes >= 0, bytes[start - backslashes] == UInt8(ascii: "\\") { backslashes += 1 }
                return backslashes % 2 == 1
            }
        }
    }

    /// The text `\u0000`, which no jsonb value can hold.
    package static let escapedNUL = ByteNeedle(Array("\\u0000".utf8))

    /// Encodes canonically and enforces the size limit.
    private static func encodedWithinLimit(_ value: some Encodable, name: String) throws(EventValidationError)
        -> (data: Data, tree: CanonicalNode)
    {
        let data: Data
        let tree: CanonicalNode
        do {
            (data, tree) = try CanonicalJSONEncoder.encodeWithTree(value)
        } catch let error as EncodingError {
            throw ErrorMapping.encoding(error, eventType: name)
        } catch {
            throw EventValidationError(.invalidValue, eventType: name, rule: "encodable", message: "The value cannot be encoded.")
        }
        try checkSize(data, name: name, described: "The encoded data")
        return (data, tree)
    }
}
