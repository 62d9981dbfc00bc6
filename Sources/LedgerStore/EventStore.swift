import Foundation
import LedgerDomain
import LedgerPostgres
import Logging

/// The ledger's event store on PostgreSQL: immutable append, idempotency, expected versions,
/// gap-safe global reads, subscriptions and verification.
///
/// An append is one prepared statement (see `EventStore+Append.swift`): it reads the stream's
/// head, stamps and inserts the batch, or inserts nothing when an id is already stored or the
/// expected version does not hold; the store then tells an idempotent retry from a conflict. The
/// database's check of each inserted event chains its hash (schema/0016). A single event takes
/// one of two statements: the cached-head insert (``appendNextSQL``), a plain insert after the
/// head this process last saw committed (``StreamHeads``) or as a stream's first event, which
/// reads no head (only whether the id is stored); and, when there is no usable hint or the
/// insert stored nothing, the general statement (``appendOneSQL``), which reads the head. No
/// lock is shared between writers: two appends to one stream race on its
/// `(stream_id, stream_version)` key and one loses; appends to different streams never wait.
public struct EventStore: Sendable {
    /// The largest payload (`data`) accepted, in bytes of JSON.
    public static let maximumPayloadBytes = 1_048_576
    /// The largest envelope metadata accepted, in bytes of JSON.
    public static let maximumMetadataBytes = 65_536

    /// The pool appends and reads run on.
    public let pool: PostgresPool
    /// Checks payloads against the event catalog before appending (nil: envelopes only).
    public let validator: EventValidator?
    /// The catalog the validator checks with, when the store was made with one: `verify` also
    /// checks each event's stream against its type's stream category.
    public let catalog: EventCatalog?
    /// Seals personal fields on append and opens them on read (see ``PersonalDataProtection``).
    public let privacy: PersonalDataProtection
    let logger: Logger
    let notifier: AppendNotifier
    /// Each stream's last appended version and hash, as a hint for the next append.
    let heads = StreamHeads()

    /// - Parameter privacy: the personal-data protection; by default configured from the
    ///   environment for this pool's database (``PersonalDataProtection/configured(conninfo:environment:catalog:)``).
    public init(pool: PostgresPool, validator: EventValidator? = nil, privacy: PersonalDataProtection? = nil,
                logger: Logger = Logger(label: "ledger.store")) {
        self.init(pool: pool, validator: validator, catalog: nil, privacy: privacy, logger: logger)
    }

    init(pool: PostgresPool, validator: EventValidator?, catalog: EventCatalog?, privacy: PersonalDataProtection?,
         logger: Logger) {
        self.pool = pool
        self.validator = validator
        self.catalog = catalog
        self.privacy = privacy ?? .configured(conninfo: pool.configuration.conninfo)
        self.logger = logger
        self.notifier = AppendNotifier(conninfo: pool.configuration.conninfo, logger: logger)
    }

    /// Appends events to one stream, atomically.
    ///
    /// - Parameters:
    ///   - events: the batch, in order; all or none are stored.
    ///   - stream: the stream id (`device-<app>/<device>`, `send-<uuid>`).
    ///   - expected: what the stream's version must be.
    /// - Returns: each event's position and version; `wasDuplicate` when the whole batch had
    ///   already been stored (an idempotent retry), in which case nothing new was written.
    /// - Throws: ``EventStoreError`` (typed refusals), ``PostgresError`` (the database failed).
    @discardableResult
    public func append(_ events: [NewEvent], to stream: String, expected: ExpectedVersion = .any) async throws
        -> AppendResult
    {
        try await pool.withConnection { [self] connection in
            try appendSealing(events, to: stream, expected: expected, on: connection)
        }
    }

    /// Appends on a connection the caller holds, inside the caller's transaction if one is open,
    /// so that events for several streams (a fact and the sends it causes) commit together.
    @discardableResult
    public func append(_ events: [NewEvent], to stream: String, expected: ExpectedVersion = .any,
                       on connection: PostgresConnection) throws -> AppendResult
    {
        try appendSealing(events, to: stream, expected: expected, on: connection)
    }

    /// Seals, validates and appends. The first append of personal data for a subject whose key is
    /// not known yet makes the key in a statement of its own just before the append, on the same
    /// connection; the key's commit does not wait for a flush, the append's does, and that flush
    /// covers the key too (``DataKeys/acquire(subject:protection:on:beforeAppend:)``). The key is
    /// remembered only once the append has committed. (Inside a caller's transaction, the key
    /// simply commits with it.) Traced as one `append events` span (``traced(events:streams:_:)``).
    func appendSealing(_ events: [NewEvent], to stream: String, expected: ExpectedVersion,
                       on connection: PostgresConnection) throws -> AppendResult
    {
        try traced(events: events.count, streams: 1) {
            try appendSealingUntraced(events, to: stream, expected: expected, on: connection)
        }
    }

    private func appendSealingUntraced(_ events: [NewEvent], to stream: String, expected: ExpectedVersion,
                                       on connection: PostgresConnection) throws -> AppendResult
    {
        let need = privacy.sealingNeed(stream: stream, events: events)
        let keyCommitsWithAppend = need == .sealMayCreateKey && !connection.isInTransaction
        let sealer = need == .none
            ? nil : privacy.sealer(stream: stream, events: events, on: connection, keyCommitsWithAppend: keyCommitsWithAppend)
        let payload = try Self.preparePayload(events, stream: stream, validator: validator, sealer: sealer)
        let result = try appendPrepared(payload, to: stream, expected: expected, on: connection)
        // A stored duplicate wrote (and flushed) nothing: a key made just now may not be durable yet.
        if !result.wasDuplicate { sealer?.appendCommitted() }
        return result
    }

    // MARK: Validation and encoding

    /// `^[A-Za-z0-9][A-Za-z0-9._:/-]{0,255}$` (`StreamID`'s syntax).
    static func isValidStreamID(_ id: String) -> Bool {
        let bytes = Array(id.utf8)
        guard let first = bytes.first, bytes.count <= 256, isAlphanumeric(first) else { return false }
        return bytes.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_")
            || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "/") }
    }

    /// `^[A-Za-z][A-Za-z0-9_.]{0,127}$`, as the events table's check says.
    static func isValidTypeName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= 128, isLetter(first) else { return false }
        return bytes.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".") }
    }

    private static func isLetter(_ byte: UInt8) -> Bool { (65...90).contains(byte) || (97...122).contains(byte) }
    private static func isAlphanumeric(_ byte: UInt8) -> Bool { isLetter(byte) || (48...57).contains(byte) }

    /// Checks every rule that can be checked here and returns the texts the append statement
    /// takes; `sealer` replaces each validated payload's personal fields by their sealed form.
    static func preparePayload(_ events: [NewEvent], stream: String, validator: EventValidator?,
                               sealer: PersonalDataProtection.BatchSealer? = nil) throws -> PreparedBatch {
        guard !stream.isEmpty else { throw EventStoreError.invalidStreamID(stream, rule: "non_empty") }
        guard isValidStreamID(stream) else {
            throw EventStoreError.invalidStreamID(stream, rule: "letters_digits_._:-/_max_256")
        }
        guard !events.isEmpty else { throw EventStoreError.emptyBatch }
        var seen = Set<UUID>()
        var terminal = false
        var texts: [PreparedBatch.Texts] = []
        texts.reserveCapacity(events.count)
        for (index, event) in events.enumerated() {
            func refuse(_ field: String, _ rule: String, _ message: String) -> EventStoreError {
                .invalidEvent(index: index, eventType: event.type, field: field, rule: rule, message: message)
            }
            guard events.count == 1 || seen.insert(event.id).inserted else {
                throw refuse("id", "unique_in_batch", "the id appears twice in the batch")
            }
            guard isValidTypeName(event.type) else {
                throw refuse("type", "type_name", "an event type is a letter then up to 127 letters, digits, _ or .")
            }
            if terminalSendEventTypes.contains(event.type) {
                // The database refuses a second terminal event too, but here it is refused before
                // anything is sent, naming the event and the rule.
                guard !terminal else {
                    throw refuse("type", "one_terminal_per_send", "a send stream takes one terminal event; this is the batch's second")
                }
                terminal = true
            }
            guard event.schemaVersion > 0 else { throw refuse("schema_version", "positive", "must be 1 or more") }
            // The column is an integer: a larger version would not fit it (nor the statements' binds).
            guard event.schemaVersion <= Int(Int32.max) else {
                throw refuse("schema_version", "integer", "must be at most \(Int32.max)")
            }
            var data = try payloadText(event.data, field: "data", limit: maximumPayloadBytes, refuse: refuse)
            let metadata = try payloadText(event.metadata, field: "metadata", limit: maximumMetadataBytes, refuse: refuse)
            try validator?(index, event)
            if let sealed = try sealer?.seal(event) { data = sealed }
            texts.append(PreparedBatch.Texts(data: data, metadata: metadata))
        }
        return PreparedBatch(events: events, texts: texts)
    }

    /// The payload as text, after the checks that cost next to nothing: the size limit, UTF-8,
    /// an object (`{` first), and no `\u0000` (which jsonb cannot store). Full JSON syntax is
    /// checked by PostgreSQL's jsonb parser; when it refuses, ``diagnoseRefusedBatch(_:)`` names
    /// the event and nothing is stored.
    static func payloadText(_ bytes: Data, field: String, limit: Int,
                            refuse: (String, String, String) -> EventStoreError) throws -> String
    {
        guard bytes.count <= limit else {
            throw refuse(field, "max_\(limit)_bytes", "is \(bytes.count) bytes; the limit is \(limit)")
        }
        // Through the contiguous bytes: `String(validating:)` on `Data` itself reads it byte by byte.
        guard let text = bytes.withUnsafeBytes({ String(validating: $0.assumingMemoryBound(to: UInt8.self), as: UTF8.self) }) else {
            throw refuse(field, "utf8", "is not valid UTF-8")
        }
        guard bytes.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }) == UInt8(ascii: "{") else {
            throw refuse(field, "json_object", "must be a JSON object")
        }
        let scan = scanObject(bytes)
        guard scan.endsWithItsFirstObject else {
            throw refuse(field, "json_object", "must be one JSON object, with nothing after its closing brace")
        }
        // `\u0000` needs a backslash: most payloads have none and skip the search.
        if scan.holdsBackslash, EventCatalog.holdsEscapedNUL(bytes) {
            throw refuse(field, "no_nul_character", "contains \\u0000, which PostgreSQL cannot store")
        }
        return text
    }

    /// Whether the object that opens `bytes` closes at its last non-blank byte, and not before
    /// (`endsWithItsFirstObject`), and, when it does, whether a backslash appears anywhere in
    /// `bytes` (`holdsBackslash`; when it does not, the scan may stop early).
    ///
    /// The batch is one JSON array with each payload's text placed in its slot, so text such as
    /// `{"n":1},"event_type":"x"` would close its slot early and set the envelope's fields (jsonb
    /// keeps the last of duplicate keys), and `{"n":1` could pair with the metadata after it into
    /// something that parses. Counting brackets outside strings is enough: if jsonb accepts the
    /// whole batch, it reads the slot's strings and brackets exactly as this scan does, so the
    /// object it finds in the slot is all of the slot. Everything else about the syntax is left
    /// to jsonb's parser.
    static func scanObject(_ bytes: Data) -> (endsWithItsFirstObject: Bool, holdsBackslash: Bool) {
        bytes.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) -> (Bool, Bool) in
            var depth = 0
            var inString = false
            var escaped = false
            var closed = false
            var backslash = false
            for byte in buffer {
                if closed {
                    guard byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { return (false, backslash) }
                } else if inString {
                    if escaped {
                        escaped = false
                    } else if byte == UInt8(ascii: "\\") {
                        escaped = true
                        backslash = true
                    } else if byte == UInt8(ascii: "\"") {
                        inString = false
                    }
                } else {
                    switch byte {
                    case UInt8(ascii: "\""): inString = true
                    case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                    case UInt8(ascii: "}"), UInt8(ascii: "]"):
                        depth -= 1
                        if depth == 0 { closed = true }
                    case UInt8(ascii: "\\"): backslash = true
                    default: break
                    }
                }
            }
            return (closed, backslash)
        }
    }

    /// After PostgreSQL refused a batch's JSON: the first event whose payload or metadata does not
    /// parse, as a typed error.
    static func diagnoseRefusedBatch(_ events: [NewEvent]) -> EventStoreError? {
        for (index, event) in events.enumerated() {
            for (field, bytes) in [("data", event.data), ("metadata", event.metadata)] {
                guard let object = try? JSONSerialization.jsonObject(with: bytes), object is [String: Any] else {
                    return .invalidEvent(index: index, eventType: event.type, field: field, rule: "json_object",
                                         message: "must be a JSON object")
                }
            }
        }
        return nil
    }

    /// The stored form of a batch, if every event of it is stored in `stream` with the same content.
    static func readBack(_ events: [NewEvent], stream: String, privacy: PersonalDataProtection,
                         on connection: PostgresConnection) throws -> AppendResult? {
        let stored = try EventStore.fetchByIDs(events.map(\.id), privacy: privacy, on: connection)
        guard stored.count == events.count else { return nil }
        var appended: [AppendedEvent] = []
        for (event, record) in zip(events, stored) {
            guard record.streamID == stream, record.type == event.type, record.schemaVersion == event.schemaVersion,
                jsonEqual(record.data, event.data), sameMetadata(record.metadata, event.metadata),
                abs(record.occurredAt.timeIntervalSince(event.occurredAt)) < 0.000_001
            else { return nil }
            appended.append(AppendedEvent(id: record.id, position: record.position, streamVersion: record.streamVersion,
                                          transactionID: record.transactionID, recordedAt: record.recordedAt,
                                          hash: record.hash))
        }
        return AppendResult(events: appended, wasDuplicate: true)
    }

    /// Whether two metadata texts are the same but for their `traceparent`: where a fact was
    /// first recorded in a trace, a retry of it from another trace (a new span of the same
    /// caller) is still the same fact, answered as a duplicate; the first trace stays recorded.
    static func sameMetadata(_ lhs: Data, _ rhs: Data) -> Bool {
        let decoder = JSONDecoder()
        guard case .object(var left)? = try? decoder.decode(JSONValue.self, from: lhs),
              case .object(var right)? = try? decoder.decode(JSONValue.self, from: rhs)
        else { return jsonEqual(lhs, rhs) }
        left[TraceContext.key] = nil
        right[TraceContext.key] = nil
        return left == right
    }

    /// Whether two JSON texts hold the same value: key order, whitespace and number spelling
    /// (`1.0` and `1`) aside, as jsonb compares. Compared as typed ``JSONValue``s: Foundation's
    /// `NSDictionary` equality on Linux never finds a top-level `false` equal to itself, which
    /// made an idempotent retry of such an event look like a conflict.
    static func jsonEqual(_ lhs: Data, _ rhs: Data) -> Bool {
        let decoder = JSONDecoder()
        guard let left = try? decoder.decode(JSONValue.self, from: lhs), let right = try? decoder.decode(JSONValue.self, from: rhs)
        else { return false }
        return left == right
    }
}
