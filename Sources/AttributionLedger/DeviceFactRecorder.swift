import Foundation
import LedgerDecisions
import LedgerDispatch
import LedgerDomain
import LedgerPostgres
import LedgerStore
import Logging
import Synchronization

/// What recording a device fact did.
struct RecordedFact: Sendable, Hashable {
    /// The fact's event id (the caller's id).
    public var eventID: UUID
    /// The fact's global position (the first time's position on an idempotent retry).
    public var position: Int64
    /// The device stream it went to.
    public var streamID: StreamID
    /// True when this id had been recorded before with the same content: nothing new was written.
    public var wasDuplicate: Bool
    /// The sends the fact requested, in the same transaction (empty on a duplicate).
    public var sends: [UUID]

    /// Creates a result.
    public init(eventID: UUID, position: Int64, streamID: StreamID, wasDuplicate: Bool, sends: [UUID]) {
        self.eventID = eventID
        self.position = position
        self.streamID = streamID
        self.wasDuplicate = wasDuplicate
        self.sends = sends
    }
}

/// One device fact to record, as ``DeviceFactRecorder/record(_:now:)`` takes a batch of them.
struct FactToRecord: Sendable {
    /// The fact.
    public var fact: any LedgerEvent
    /// The app the fact belongs to (the caller's app).
    public var app: AppID
    /// The app's device.
    public var device: DeviceID
    /// The caller's id of the fact (idempotency).
    public var id: UUID
    /// The device's time of the fact.
    public var occurredAt: Date
    /// The envelope's metadata; its `app_id` must be `app`.
    public var metadata: EventMetadata
    /// The fact's canonical JSON when the catalog checked it from JSON
    /// (`EventCatalog.validateEncoding`): then it is not checked and encoded a second time.
    var canonical: Data?

    /// A fact to record.
    public init(_ fact: any LedgerEvent, app: AppID, device: DeviceID, id: UUID, occurredAt: Date, metadata: EventMetadata) {
        self.fact = fact
        self.app = app
        self.device = device
        self.id = id
        self.occurredAt = occurredAt
        self.metadata = metadata
    }
}

/// The facade's write path of device facts (internal: backends record through ``AttributionLedger``): validates them, appends each to its device's stream and, in
/// the same transaction, the `SendRequested` events it causes (the transactional outbox). A batch
/// commits in one transaction: every fact with its sends, or nothing.
///
/// Concurrent writers to one device never see each other: losing the race for a stream's next
/// version (or a deadlock between two batches) rolls the transaction back and runs it again, from
/// the second try under a transaction-scoped advisory lock per stream taken in stream order, so
/// retries queue instead of racing. The callers' ids keep every retry exact.
///
/// Every write checks that the device stream belongs to the caller's app: the app recorded on the
/// stream's first event must be the fact's app (``TenancyViolation`` otherwise), so even a stream
/// id that named another app's stream could not be written through.
struct DeviceFactRecorder: Sendable {
    /// The store facts are appended to.
    public let store: EventStore
    /// Which providers are enabled per app, and their windows; replaceable while the process runs.
    public let reloadableSettings: Reloadable<AttributionSettings>
    /// The settings as of now.
    public var settings: AttributionSettings { reloadableSettings.value }
    /// How many times a batch runs before a lost race is reported (`wrongExpectedVersion`).
    public let maximumAttempts: Int
    let logger: Logger
    let verifiedStreams: VerifiedStreams

    /// Creates a recorder.
    public init(store: EventStore, settings: AttributionSettings = AttributionSettings(), maximumAttempts: Int = 64,
                logger: Logger = Logger(label: "ledger.attribution")) {
        self.init(store: store, reloadableSettings: Reloadable(settings), maximumAttempts: maximumAttempts, logger: logger)
    }

    /// A recorder whose settings the caller may replace while it runs.
    public init(store: EventStore, reloadableSettings: Reloadable<AttributionSettings>, maximumAttempts: Int = 64,
                logger: Logger = Logger(label: "ledger.attribution")) {
        self.store = store
        self.reloadableSettings = reloadableSettings
        self.maximumAttempts = max(1, maximumAttempts)
        self.logger = logger
        self.verifiedStreams = VerifiedStreams()
    }

    /// Appends `fact` to `device-<app>/<device>` under the caller's `id` (idempotent: the same id
    /// with the same content answers as the first time), with the sends it causes.
    ///
    /// - Parameters:
    ///   - occurredAt: the device's time of the fact.
    ///   - now: the ledger's time (enqueue time of the sends it causes).
    /// - Throws: `EventValidationError` or `RuleViolation` (invalid fact), ``TenancyViolation``,
    ///   `EventStoreError`, `PostgresError`.
    public func record<Fact: LedgerEvent>(
        _ fact: Fact, app: AppID, device: DeviceID, id: UUID, occurredAt: Date, metadata: EventMetadata, now: Date
    ) async throws -> RecordedFact {
        try await record([FactToRecord(fact, app: app, device: device, id: id, occurredAt: occurredAt, metadata: metadata)],
                         now: now)[0]
    }

    /// Records `facts` in order, in one transaction: every fact and the sends it causes, or none
    /// of them. Facts already recorded with the same content answer as duplicates.
    ///
    /// - Returns: one ``RecordedFact`` per fact, in order.
    /// - Throws: `EventValidationError` or `RuleViolation` (an invalid fact; nothing written),
    ///   ``TenancyViolation``, `EventStoreError` (`eventIDConflict`), `PostgresError`.
    public func record(_ facts: [FactToRecord], now: Date) async throws -> [RecordedFact] {
        try await record(planned: facts.map { try plan($0) }, now: now)
    }

    /// Records facts ``plan(_:)`` checked and encoded, as ``record(_:now:)`` does: a caller that
    /// must refuse a whole batch before writing any of it (the Swift API) plans each fact first,
    /// and nothing is checked or encoded twice.
    ///
    /// A lone fact that causes no send, to a stream already checked to be its app's, is one
    /// append statement outside any transaction: one statement is atomic by itself, and `BEGIN`
    /// and `COMMIT` would add two round trips that change nothing.
    public func record(planned: [PlannedFact], now: Date) async throws -> [RecordedFact] {
        var attempt = 0
        while true {
            attempt += 1
            let queued = attempt > 1
            do {
                if !queued, let lone = planned.first, planned.count == 1, lone.requests.isEmpty,
                    verifiedStreams.contains(lone.stream.rawValue, app: lone.app.rawValue)
                {
                    return [try await store.pool.withConnection { [self] connection in
                        try append(lone, now: now, on: connection)
                    }]
                }
                return try await store.pool.withTransaction { [self] connection in
                    if queued { try Self.lockStreams(planned.map(\.stream.rawValue), on: connection) }
                    try checkTenancy(of: planned, on: connection)
                    if planned.count > 1, let recorded = try appendTogether(planned, now: now, on: connection) {
                        return recorded
                    }
                    return try planned.map { try append($0, now: now, on: connection) }
                }
            } catch let error where attempt < maximumAttempts && Self.isLostRace(error) {
                continue
            }
        }
    }

    /// A fact's event and the sends it causes, checked and encoded once, before any statement is
    /// sent (``plan(_:)``).
    public struct PlannedFact: Sendable {
        var id: UUID
        var app: AppID
        var stream: StreamID
        var event: NewEvent
        var requests: [SendRequested]
    }

    /// Checks `item` and encodes it with the sends it causes, writing nothing: the catalog's rules
    /// for the fact (its encoding checks them), the metadata's, and the metadata's app.
    /// - Throws: `EventValidationError` or `RuleViolation` naming the field and the rule.
    public func plan(_ item: FactToRecord) throws -> PlannedFact {
        guard item.metadata.appID == nil || item.metadata.appID == item.app else {
            throw RuleViolation(field: "metadata.app_id", rule: "matches_device_app",
                                message: "The metadata's app_id must be the app of the device the fact is recorded for.")
        }
        let stream = try StreamID.device(app: item.app, device: item.device)
        var event = try item.canonical.map {
            NewEvent(validated: item.fact, canonical: $0, id: item.id, occurredAt: item.occurredAt)
        } ?? NewEvent(item.fact, id: item.id, occurredAt: item.occurredAt)
        try event.setMetadata(item.metadata)
        let requests = SendPlanner(settings: settings.forApp(item.app.rawValue)).plan(item.fact, eventID: item.id).map { send in
            SendRequested(
                sendID: Outbox.sendID(forKey: send.key), provider: send.provider, kind: send.kind, causeEventID: item.id,
                causeStreamID: stream, deviceStreamID: stream, idempotencyKey: send.key, parameters: send.parameters)
        }
        for request in requests { try request.validate() }
        return PlannedFact(id: item.id, app: item.app, stream: stream, event: event, requests: requests)
    }

    /// Appends a batch's facts in one statement, a part per device stream with its facts in
    /// order, then the sends each causes: one round trip for the facts where one append each took
    /// as many. Nil, with nothing written, when the statement stopped: a fact already stored (a
    /// retry, which ``append(_:now:on:)`` then answers fact by fact, as a duplicate or a
    /// conflict) or an id given twice.
    func appendTogether(_ facts: [PlannedFact], now: Date, on connection: PostgresConnection) throws -> [RecordedFact]? {
        var parts: [StreamAppend] = []
        var partOfStream: [String: Int] = [:]
        for fact in facts {
            if let index = partOfStream[fact.stream.rawValue] {
                parts[index].events.append(fact.event)
            } else {
                partOfStream[fact.stream.rawValue] = parts.count
                parts.append(StreamAppend([fact.event], to: fact.stream.rawValue))
            }
        }
        guard let results = try store.appendAllOrNothing(parts, on: connection) else { return nil }
        var positions: [UUID: Int64] = [:]
        for event in results.lazy.flatMap(\.events) { positions[event.id] = event.position }
        return try facts.map { fact in
            guard let position = positions[fact.id] else {
                throw PostgresError(code: .unexpectedResponse, message: "the append returned no row for a fact of the batch")
            }
            return RecordedFact(eventID: fact.id, position: position, streamID: fact.stream, wasDuplicate: false,
                                sends: try enqueueSends(of: fact, now: now, on: connection))
        }
    }

    /// Enqueues the sends `fact` causes (the outbox), returning the ids of those not enqueued before.
    func enqueueSends(of fact: PlannedFact, now: Date, on connection: PostgresConnection) throws -> [UUID] {
        try fact.requests.compactMap { request in
            let enqueued = try Outbox.enqueue(request, store: store, now: now, on: connection)
            return enqueued.wasDuplicate ? nil : enqueued.sendID
        }
    }

    func append(_ fact: PlannedFact, now: Date, on connection: PostgresConnection) throws -> RecordedFact {
        let result = try store.append([fact.event], to: fact.stream.rawValue, expected: .any, on: connection)
        let position = result.events.first?.position ?? 0
        guard !result.wasDuplicate else {
            return RecordedFact(eventID: fact.id, position: position, streamID: fact.stream, wasDuplicate: true, sends: [])
        }
        return RecordedFact(eventID: fact.id, position: position, streamID: fact.stream, wasDuplicate: false,
                            sends: try enqueueSends(of: fact, now: now, on: connection))
    }

    /// Refuses the batch when a stream it writes was started by another app. A stream checked
    /// once is remembered: the first event of a stream never changes.
    func checkTenancy(of facts: [PlannedFact], on connection: PostgresConnection) throws {
        var checked = Set<String>()
        var unverified: [PlannedFact] = []
        for fact in facts where !verifiedStreams.contains(fact.stream.rawValue, app: fact.app.rawValue) {
            if checked.insert(fact.stream.rawValue).inserted { unverified.append(fact) }
        }
        // One statement for the whole batch's streams.
        let recordedApps = try EventStore.recordedApps(ofStreams: unverified.map(\.stream.rawValue), on: connection)
        for fact in unverified {
            guard let recorded = recordedApps[fact.stream.rawValue] else { continue }
            guard recorded == fact.app.rawValue else {
                logger.error("refused a write into a stream of another app", metadata: ["ledger.app": "\(fact.app)"])
                throw TenancyViolation(stream: fact.stream.rawValue, app: fact.app.rawValue, recordedApp: recorded)
            }
            verifiedStreams.insert(fact.stream.rawValue, app: recorded)
        }
    }

    /// Takes a transaction-scoped advisory lock per stream, in stream order (no two lockers can
    /// wait on each other).
    static func lockStreams(_ streams: [String], on connection: PostgresConnection) throws {
        for stream in Set(streams).sorted() {
            try connection.execute("SELECT pg_advisory_xact_lock(hashtextextended(\(stream), 7238))")
        }
    }

    /// Whether `error` only says another writer got there first: the batch can simply run again.
    static func isLostRace(_ error: any Error) -> Bool {
        switch error {
        case EventStoreError.wrongExpectedVersion(_, .any, _):
            return true
        case let error as PostgresError:
            // deadlock_detected, serialization_failure, unique_violation (a key taken meanwhile)
            return ["40P01", "40001", "23505"].contains(error.sqlState ?? "")
        default:
            return false
        }
    }
}

/// The streams whose first event was checked to be of an app (bounded; cleared when full).
final class VerifiedStreams: Sendable {
    private let streams = Mutex<[String: String]>([:])
    private static let limit = 100_000

    func contains(_ stream: String, app: String) -> Bool {
        streams.withLock { $0[stream] == app }
    }

    func insert(_ stream: String, app: String) {
        streams.withLock { streams in
            if streams.count >= Self.limit { streams.removeAll(keepingCapacity: true) }
            streams[stream] = app
        }
    }
}
