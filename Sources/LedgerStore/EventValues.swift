import Foundation
import LedgerDomain

/// An event to append: what happened, as JSON, with the ledger's envelope around it.
public struct NewEvent: Sendable, Hashable {
    /// The event's identity. Appending the same id again stores nothing new (idempotency), so
    /// callers derive it from their own request id where they can.
    public var id: UUID
    /// The event type's name in the catalog (`FirstOpen`, `SendAttempted`).
    public var type: String
    /// The version of that type's JSON shape.
    public var schemaVersion: Int
    /// The payload: a JSON object, UTF-8, at most ``EventStore/maximumPayloadBytes``.
    public var data: Data
    /// Envelope facts (correlation and causation ids, actor, app id): a JSON object.
    public var metadata: Data
    /// When it happened, by the clock of whoever saw it (the device's, for device events).
    public var occurredAt: Date
    /// Set by ``init(_:catalog:id:metadata:occurredAt:)``: the catalog that made `data` from a
    /// typed event. Not part of the event's value (equality ignores it).
    var encodedBy: CatalogEncoding?
    /// Set by ``setMetadata(_:catalog:)``: the catalog that wrote `metadata` from an
    /// ``EventMetadata`` it checked, and the bytes it wrote. Not part of the event's value.
    var metadataEncodedBy: MetadataEncoding?

    /// An event whose payload the caller encoded; the store's validator checks it.
    public init(id: UUID = .randomVersion4(), type: String, schemaVersion: Int = 1, data: Data, metadata: Data = Data("{}".utf8),
                occurredAt: Date) {
        self.id = id
        self.type = type
        self.schemaVersion = schemaVersion
        self.data = data
        self.metadata = metadata
        self.occurredAt = occurredAt
    }

    /// A typed event, encoded by `catalog`: its domain rules checked, its canonical JSON.
    ///
    /// A store whose validator is that catalog's (``EventStore/catalogValidator(_:)``) trusts these
    /// bytes rather than decoding and re-encoding them a second time — the worker and the Swift API
    /// append only such events, and the second check was a tenth of a send's CPU. Changing
    /// `type`, `schemaVersion` or `data` afterwards makes the store check the event again.
    /// - Throws: ``EventValidationError`` when the event breaks a rule or is not in `catalog`.
    public init<Event: LedgerEvent>(_ event: Event, catalog: EventCatalog = .standard, id: UUID = .randomVersion4(),
                                    metadata: Data = Data("{}".utf8), occurredAt: Date) throws(EventValidationError) {
        let data = try catalog.encode(event)
        self.init(id: id, type: Event.eventType, schemaVersion: Event.schemaVersion, data: data, metadata: metadata,
                  occurredAt: occurredAt)
        encodedBy = CatalogEncoding(catalog: catalog.identity, type: Event.eventType, schemaVersion: Event.schemaVersion,
                                    data: data)
    }

    /// An event `catalog` checked from JSON: `canonical` is what
    /// ``LedgerDomain/EventCatalog/validateEncoding(type:schemaVersion:data:)`` returned with
    /// `event`, so the store trusts it as it trusts ``init(_:catalog:id:metadata:occurredAt:)``'s
    /// bytes, and nothing is checked or encoded twice. Within the package only: the bytes must be
    /// that call's.
    package init(validated event: any LedgerEvent, canonical: Data, catalog: EventCatalog = .standard, id: UUID,
                 metadata: Data = Data("{}".utf8), occurredAt: Date) {
        let type = Swift.type(of: event)
        self.init(id: id, type: type.eventType, schemaVersion: type.schemaVersion, data: canonical, metadata: metadata,
                  occurredAt: occurredAt)
        encodedBy = CatalogEncoding(catalog: catalog.identity, type: type.eventType, schemaVersion: type.schemaVersion,
                                    data: canonical)
    }

    /// Sets the envelope to `metadata` as `catalog` encodes it (its rules checked), so that a store
    /// whose validator is that catalog's trusts the bytes rather than parsing and checking them
    /// again. Within the package only, as ``init(validated:canonical:catalog:id:metadata:occurredAt:)``.
    /// - Throws: ``EventValidationError`` naming the metadata's field and rule.
    package mutating func setMetadata(_ metadata: EventMetadata, catalog: EventCatalog = .standard) throws(EventValidationError) {
        let encoded = try catalog.encode(metadata: metadata)
        self.metadata = encoded
        metadataEncodedBy = MetadataEncoding(catalog: catalog.identity, metadata: encoded)
    }

    /// True when `catalog` wrote exactly this metadata (``setMetadata(_:catalog:)``).
    func metadataWasEncoded(by catalog: EventCatalog) -> Bool {
        guard let metadataEncodedBy else { return false }
        return metadataEncodedBy.catalog == catalog.identity && metadataEncodedBy.metadata == metadata
    }

    /// True when `catalog` made exactly this type, version and payload.
    func wasEncoded(by catalog: EventCatalog) -> Bool {
        guard let encodedBy else { return false }
        return encodedBy.catalog == catalog.identity && encodedBy.type == type && encodedBy.schemaVersion == schemaVersion
            && encodedBy.data == data
    }

    public static func == (lhs: NewEvent, rhs: NewEvent) -> Bool {
        lhs.id == rhs.id && lhs.type == rhs.type && lhs.schemaVersion == rhs.schemaVersion && lhs.data == rhs.data
            && lhs.metadata == rhs.metadata && lhs.occurredAt == rhs.occurredAt
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(type)
        hasher.combine(schemaVersion)
        hasher.combine(data)
        hasher.combine(metadata)
        hasher.combine(occurredAt)
    }
}

/// What a catalog encoded for a ``NewEvent``, kept to recognise the bytes unchanged.
struct CatalogEncoding: Sendable {
    var catalog: UUID
    var type: String
    var schemaVersion: Int
    var data: Data
}

/// What a catalog wrote as a ``NewEvent``'s metadata, kept to recognise the bytes unchanged.
struct MetadataEncoding: Sendable {
    var catalog: UUID
    var metadata: Data
}

/// What an append may assume about the stream's current version.
public enum ExpectedVersion: Sendable, Hashable, CustomStringConvertible {
    /// Append whatever the version is.
    case any
    /// The stream must not exist yet.
    case noStream
    /// The stream must be exactly at this version (its last event's version).
    case exact(Int64)

    var sqlValue: Int64? {
        switch self {
        case .any: nil
        case .noStream: 0
        case .exact(let version): version
        }
    }

    public var description: String {
        switch self {
        case .any: "any"
        case .noStream: "no stream"
        case .exact(let version): "\(version)"
        }
    }
}

/// A place in the global log, in the order readers see it: by writing transaction, then position.
///
/// Positions come from a sequence and commit out of order under concurrency; readers take only
/// events whose transaction is older than every transaction still running, in
/// (transaction id, position) order, so nothing can later appear behind a checkpoint.
public struct GlobalCheckpoint: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// The writing transaction's id (`xid8`).
    public var transactionID: UInt64
    /// The event's global position.
    public var position: Int64

    public init(transactionID: UInt64, position: Int64) {
        self.transactionID = transactionID
        self.position = position
    }

    /// Before the first event.
    public static let start = GlobalCheckpoint(transactionID: 0, position: 0)

    public static func < (lhs: Self, rhs: Self) -> Bool {
        (lhs.transactionID, lhs.position) < (rhs.transactionID, rhs.position)
    }

    public var description: String { "\(transactionID)/\(position)" }
}

/// An event as the ledger stored it.
public struct RecordedEvent: Sendable, Hashable {
    /// The global position (unique, increasing in order of assignment, not of commit).
    public var position: Int64
    /// The writing transaction; with ``position`` it orders the global log for readers.
    public var transactionID: UInt64
    public var streamID: String
    /// 1 for the stream's first event, then consecutive.
    public var streamVersion: Int64
    public var id: UUID
    public var type: String
    public var schemaVersion: Int
    /// The payload as stored (jsonb's canonical text).
    public var data: Data
    public var metadata: Data
    public var occurredAt: Date
    /// When the ledger stored it.
    public var recordedAt: Date
    /// sha256(previous event's hash in the stream || this event's canonical bytes).
    public var hash: Data

    /// An event as read from the log (the store and readers that scan the log themselves build these).
    public init(position: Int64, transactionID: UInt64, streamID: String, streamVersion: Int64, id: UUID, type: String,
                schemaVersion: Int, data: Data, metadata: Data, occurredAt: Date, recordedAt: Date, hash: Data) {
        self.position = position
        self.transactionID = transactionID
        self.streamID = streamID
        self.streamVersion = streamVersion
        self.id = id
        self.type = type
        self.schemaVersion = schemaVersion
        self.data = data
        self.metadata = metadata
        self.occurredAt = occurredAt
        self.recordedAt = recordedAt
        self.hash = hash
    }

    /// Where a reader that has handled this event stands.
    public var checkpoint: GlobalCheckpoint { GlobalCheckpoint(transactionID: transactionID, position: position) }

    /// Decodes the payload.
    public func decode<T: Decodable>(_ type: T.Type, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        try decoder.decode(T.self, from: data)
    }
}

/// One event's place after an append.
public struct AppendedEvent: Sendable, Hashable {
    public var id: UUID
    public var position: Int64
    public var streamVersion: Int64
    public var transactionID: UInt64
    public var recordedAt: Date
    public var hash: Data
}

/// The outcome of an append.
public struct AppendResult: Sendable, Hashable {
    /// The events in order, with the places the ledger gave them.
    public var events: [AppendedEvent]
    /// True when every event was already stored (an idempotent retry): nothing new was written.
    public var wasDuplicate: Bool
    /// The stream's version after the append.
    public var streamVersion: Int64 { events.last?.streamVersion ?? 0 }
}

/// A moment in the past to read the ledger as of: what it held then.
public enum AsOf: Sendable, Hashable {
    /// Events at or before this global position.
    case position(Int64)
    /// Events the ledger had recorded by this time.
    case recordedAt(Date)
}

/// Which events a global read returns.
public struct EventFilter: Sendable, Hashable {
    /// Only these types (all when empty).
    public var types: [String]
    /// Only streams of these categories (the part of the stream id before the first `-`).
    public var categories: [String]
    /// Only the events of this app (all apps when nil), as ``EventStore/appStreams(of:)`` defines
    /// them: what an app's catch-up subscription may send it.
    public var app: String?

    public init(types: [String] = [], categories: [String] = [], app: String? = nil) {
        self.types = types
        self.categories = categories
        self.app = app
    }

    /// Every event.
    public static let all = EventFilter()
}

extension UUID {
    /// A random (version 4) UUID from the system's generator (`getrandom`).
    ///
    /// The default id of a ``NewEvent``. Foundation's `UUID()` opens, reads and closes
    /// `/dev/urandom` on every call on Linux: three system calls per event, a tenth of a
    /// 100-event batch's client time; this takes two `getrandom` calls and no file.
    public static func randomVersion4() -> UUID {
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        var bytes = (high.bigEndian, low.bigEndian)
        return withUnsafeMutableBytes(of: &bytes) { raw in
            raw[6] = (raw[6] & 0x0F) | 0x40  // version 4
            raw[8] = (raw[8] & 0x3F) | 0x80  // RFC 4122 variant
            return UUID(uuid: raw.load(as: uuid_t.self))
        }
    }
}
