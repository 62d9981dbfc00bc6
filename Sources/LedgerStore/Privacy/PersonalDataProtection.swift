import Crypto
import Foundation
import LedgerDomain
import LedgerPostgres
import Synchronization

/// Crypto-shredding for the event store: the personal fields of each event (as its catalog entry
/// declares them, ``LedgerEvent/personalFields``) are sealed with AES-256-GCM under a data key of
/// the event's data subject (its device) before the event is appended, and opened again when it is
/// read. Erasing a device destroys its keys: its events stay in the log, hashes and all, but their
/// personal fields can never be opened again and read as erased.
///
/// The stored form of an event with personal data (see docs/privacy.md): the personal paths are
/// removed from `data`, and `data.ledger_personal` holds `{"v":1,"key":<key id>,"fields":[paths],
/// "box":<base64 nonce‖ciphertext‖tag>}`. Read back, an event whose key exists is exactly the
/// event appended; one whose key was destroyed has its personal paths absent and
/// `data.ledger_erased` listing them (``erasedMarkerKey``).
///
/// Keys: see ``MasterKeys`` for the configuration. Unwrapped data keys are cached per process for
/// appends only (``writeCacheLifetime``); reads fetch and unwrap the keys once per batch, so an
/// erasure is seen by every reader at once.
public final class PersonalDataProtection: Sendable {
    /// The `data` key under which an event keeps its sealed personal fields.
    public static let sealedKey = "ledger_personal"
    /// The `data` key that marks an event whose personal fields were erased: the list of their paths.
    public static let erasedMarkerKey = "ledger_erased"
    /// How long an append may reuse a data key without asking the database again (seconds).
    public static let writeCacheLifetime: TimeInterval = 60

    let keys: Result<MasterKeys, PrivacyError>
    let catalog: EventCatalog
    /// Whose personal data each stream holds.
    public let dataSubjects: DataSubjects
    /// False only for ``disabled`` (benchmark baselines).
    public let isEnabled: Bool
    let writeCache = Mutex<[String: CachedKey]>([:])
    /// Counts ``forgetCachedKeys(of:)`` calls (``forgetGeneration``).
    let forgettings = Atomic<Int>(0)
    let subjects = Mutex<[String: String]>([:])
    /// Per event type and version of the catalog that declares personal fields: its sealing plan.
    /// Made once, with the protection: every append looks its type up here, without a lock.
    let plans: [TypeVersion: SealingPlan]

    struct TypeVersion: Hashable {
        var type: String
        var schemaVersion: Int
    }

    /// How to seal one event type and version: its personal paths and the splitter for them.
    struct SealingPlan: Sendable {
        var paths: [String]
        var splitter: PersonalJSONSplitter
    }

    struct CachedKey {
        var key: DataKey
        var expires: Date
    }

    /// Protection with explicit master keys.
    public init(masterKeys: MasterKeys, catalog: EventCatalog = .standard, dataSubjects: DataSubjects = .ledger) {
        self.keys = .success(masterKeys)
        self.catalog = catalog
        self.dataSubjects = dataSubjects
        self.isEnabled = true
        self.plans = Self.sealingPlans(of: catalog)
    }

    init(keys: Result<MasterKeys, PrivacyError>, catalog: EventCatalog, isEnabled: Bool,
         dataSubjects: DataSubjects = .ledger) {
        self.keys = keys
        self.catalog = catalog
        self.dataSubjects = dataSubjects
        self.isEnabled = isEnabled
        self.plans = Self.sealingPlans(of: catalog)
    }

    /// Protection configured from the environment for the database at `conninfo` (see
    /// ``MasterKeys/resolve(environment:conninfo:)``). A missing or malformed key is reported by
    /// the first append or read that needs it, as a ``PrivacyError``.
    public static func configured(conninfo: String,
                                  environment: [String: String] = ProcessInfo.processInfo.environment,
                                  catalog: EventCatalog = .standard) -> PersonalDataProtection {
        PersonalDataProtection(keys: Result { () throws(PrivacyError) -> MasterKeys in
            try MasterKeys.resolve(environment: environment, conninfo: conninfo)
        }, catalog: catalog, isEnabled: true)
    }

    /// The protection static reads use when given none: from the environment, the development key
    /// file allowed when `LEDGER_DATABASE_URL` is unset (the private cluster is the database).
    public static let processDefault: PersonalDataProtection = {
        let environment = ProcessInfo.processInfo.environment
        let url = environment["LEDGER_DATABASE_URL"] ?? ""
        let directory = MasterKeys.developmentClusterDirectory(environment: environment)
        return configured(conninfo: url.isEmpty ? "host=\(directory)/run " : url, environment: environment)
    }()

    /// No encryption at all: personal fields are stored in clear. For the benchmark's baseline
    /// only; never use it for a ledger that holds real data.
    public static let disabled = PersonalDataProtection(keys: .failure(.masterKeyMissing), catalog: .standard,
                                                        isEnabled: false)

    /// The master keys, or why there are none.
    public func masterKeys() throws(PrivacyError) -> MasterKeys { try keys.get() }

    /// Forgets any cached key of `subject` (called by erasure in this process).
    public func forgetCachedKeys(of subject: String) {
        forgettings.add(1, ordering: .sequentiallyConsistent)
        _ = writeCache.withLock { $0.removeValue(forKey: subject) }
    }

    /// How many times keys were forgotten so far: a key looked up before a forget must not be
    /// cached after it (see ``cache(_:for:now:unlessForgottenSince:)``).
    var forgetGeneration: Int { forgettings.load(ordering: .sequentiallyConsistent) }

    /// Caches `key` unless keys were forgotten since `generation` (an erasure in this process
    /// between the key's lookup and its append's commit: the key may be destroyed now).
    func cache(_ key: DataKey, for subject: String, now: Date, unlessForgottenSince generation: Int) {
        writeCache.withLock { cache in
            guard forgettings.load(ordering: .sequentiallyConsistent) == generation else { return }
            if cache.count > 50_000 { cache.removeAll(keepingCapacity: true) }
            cache[subject] = CachedKey(key: key, expires: now.addingTimeInterval(Self.writeCacheLifetime))
        }
    }

    func cachedKey(for subject: String, now: Date) -> DataKey? {
        writeCache.withLock { cache in
            guard let entry = cache[subject] else { return nil }
            if entry.expires < now {
                cache[subject] = nil
                return nil
            }
            return entry.key
        }
    }

    func cache(_ key: DataKey, for subject: String, now: Date) {
        writeCache.withLock { cache in
            if cache.count > 50_000 { cache.removeAll(keepingCapacity: true) }
            cache[subject] = CachedKey(key: key, expires: now.addingTimeInterval(Self.writeCacheLifetime))
        }
    }

    /// The sealing plan of a type and version the catalog knows; nil when it declares no
    /// personal field (or the catalog does not know it).
    func sealingPlan(type: String, schemaVersion: Int) -> SealingPlan? {
        plans[TypeVersion(type: type, schemaVersion: schemaVersion)]
    }

    /// The plans of every entry of `catalog` that declares personal fields.
    static func sealingPlans(of catalog: EventCatalog) -> [TypeVersion: SealingPlan] {
        var plans: [TypeVersion: SealingPlan] = [:]
        for entry in catalog.entries where !entry.personalFields.isEmpty {
            plans[TypeVersion(type: entry.eventType, schemaVersion: entry.schemaVersion)] = SealingPlan(
                paths: entry.personalFields,
                splitter: PersonalJSONSplitter(paths: entry.personalFields, reserved: [sealedKey, erasedMarkerKey]))
        }
        return plans
    }

    /// Tells the sealer which device a send stream is about, when the caller already knows it from
    /// the send's `SendRequested` (the worker reads it with its claim): the stream's first append
    /// then skips looking it up in the log.
    public func noteSubject(_ deviceStream: String, ofSendStream stream: String) {
        guard dataSubjects.isLinked(stream), dataSubjects.isSubject(deviceStream) else { return }
        remember(subject: deviceStream, of: stream)
    }

    /// Maps a send stream to its device, in a bounded map (emptied when it grows past 100,000).
    private func remember(subject: String, of stream: String) {
        subjects.withLock { map in
            if map.count > 100_000 { map.removeAll(keepingCapacity: true) }
            map[stream] = subject
        }
    }

    /// The data subject (device stream) of `stream`, or nil when it has none: a device stream is its
    /// own subject; a send stream's is the `device_stream_id` of its `SendRequested` (in `batch`, or
    /// already stored).
    func subject(of stream: String, batch: [NewEvent], on connection: PostgresConnection) throws -> String? {
        if dataSubjects.isSubject(stream) { return stream }
        guard dataSubjects.isLinked(stream) else { return nil }
        if let known = subjects.withLock({ $0[stream] }) { return known }
        var found: String?
        for event in batch where event.type == dataSubjects.linkEventType {
            let object = try? JSONSerialization.jsonObject(with: event.data) as? [String: Any]
            found = object?[dataSubjects.linkField] as? String
        }
        if found == nil {
            found = try connection.query("""
                SELECT data ->> \(dataSubjects.linkField) FROM events
                WHERE stream_id = \(stream) AND stream_version = 1 AND event_type = \(dataSubjects.linkEventType)
                """, prepare: true).first?.decode(String?.self, at: 0)
        }
        if let found { remember(subject: found, of: stream) }
        return found
    }
}

extension PersonalDataProtection {
    /// Re-wraps every live data key that a previous master key wrapped with the current one, in
    /// one transaction (the rotation procedure in docs/privacy.md). Returns how many were re-wrapped.
    /// - Throws: ``PrivacyError/masterKeyUnavailable(masterKeyID:)`` when a key's master is not
    ///   configured (nothing is changed then).
    public func rewrapDataKeys(pool: PostgresPool) async throws -> Int {
        try await pool.withConnection { [self] connection in try DataKeys.rewrap(protection: self, on: connection) }
    }

    /// ``rewrapDataKeys(pool:)`` on a connection the caller holds.
    public func rewrapDataKeys(on connection: PostgresConnection) throws -> Int {
        try DataKeys.rewrap(protection: self, on: connection)
    }
}
