import Foundation
import LedgerDecisions
// The facts a backend records and the values in them: `import AttributionLedger` is all it needs.
@_exported import LedgerDomain
import LedgerPostgres
import LedgerStore
import Logging

/// The attribution ledger as a backend service calls it: record what a device did, read what the
/// ledger knows about it.
///
/// Every recording call validates the fact (a typed ``AttributionLedgerError`` names the field and
/// the rule; nothing is written), is idempotent by the caller's `id` (the same id with the same
/// content answers as the first time and writes nothing), and goes through the facade's own
/// recorder, which appends the fact and the provider sends it causes in one transaction. Reads replay the device's history from the log, so they are exact and work as of
/// any earlier time or position.
///
/// ```swift
/// let ledger = AttributionLedger(conninfo: "postgresql://ledger_app@db.internal/ledger")
/// let device = try DeviceRef(app: "com.example.game", device: "install-7f3a")
/// let recorded = try await ledger.recordFirstOpen(open, for: device, id: requestID, occurredAt: launchTime)
/// let skan = try await ledger.skanValues(of: device)
/// ```
///
/// A value type holding only `Sendable` references: share it freely between tasks.
public struct AttributionLedger: Sendable {
    /// The event store facts are appended to and histories read from.
    public let store: EventStore
    /// The write path every fact goes through.
    let recorder: DeviceFactRecorder
    /// Which providers each app uses and its lookback windows, as the running configuration says
    /// (a reload replaces them): what reads that draw windows need.
    public var settings: AttributionSettings { recorder.settings }
    /// The clock that stamps the ledger's own times (the enqueue time of the sends a fact causes).
    public let clock: any WallClock
    /// Who appears as `actor` in the metadata of facts recorded without one.
    public let defaultActor: String
    let logger: Logger
    let metrics: LedgerFacadeMetrics
    /// Where reads go when not to ``store``: a streaming standby (``reading(from:waitingAtMost:)``).
    var readStore: EventStore?
    /// How long a read as of a position waits for ``readStore`` to replay it.
    var readWait: Duration = .seconds(5)

    /// A ledger over `pool`, checking every payload against the standard event catalog.
    ///
    /// - Parameters:
    ///   - pool: the PostgreSQL pool (a migrated ledger database).
    ///   - settings: which providers are enabled per app, and their windows.
    ///   - clock: the ledger's clock (a `ManualClock` in tests).
    ///   - defaultActor: the metadata `actor` when a call names none (1–100 characters).
    ///   - logger: where the facade logs (no credentials; device ids only at debug level).
    public init(
        pool: PostgresPool, settings: AttributionSettings = AttributionSettings(), clock: any WallClock = SystemClock(),
        defaultActor: String = "swift-api", logger: Logger = Logger(label: "ledger.api")
    ) {
        self.init(store: EventStore(pool: pool, catalog: .standard, logger: logger), settings: settings, clock: clock,
                  defaultActor: defaultActor, logger: logger)
    }

    /// A ledger over the database at `conninfo`, with a pool of sessions of its own: how a backend
    /// makes one, needing none of the PostgreSQL wrapper's types. ``close()`` ends the sessions.
    ///
    /// - Parameters:
    ///   - conninfo: a libpq conninfo string or `postgresql://` URI of a migrated ledger database.
    ///   - maxConnections: the most sessions open at once; calls beyond that wait in line.
    ///   - settings, clock, defaultActor, logger: as for ``init(pool:settings:clock:defaultActor:logger:)``.
    public init(
        conninfo: String, maxConnections: Int = 4, settings: AttributionSettings = AttributionSettings(),
        clock: any WallClock = SystemClock(), defaultActor: String = "swift-api", logger: Logger = Logger(label: "ledger.api")
    ) {
        self.init(pool: PostgresPool(conninfo: conninfo, maxConnections: maxConnections, logger: logger), settings: settings,
                  clock: clock, defaultActor: defaultActor, logger: logger)
    }

    /// Ends the sessions of the ledger's pool; calls after it fail.
    public func close() { store.pool.close() }

    /// A ledger over an existing store (for callers that configure it themselves: its catalog,
    /// its personal-data protection); facts are appended to it and reads go to it.
    ///
    /// - Parameters:
    ///   - store: the event store.
    ///   - settings, clock, defaultActor, logger: as for ``init(pool:settings:clock:defaultActor:logger:)``.
    public init(
        store: EventStore, settings: AttributionSettings = AttributionSettings(), clock: any WallClock = SystemClock(),
        defaultActor: String = "swift-api", logger: Logger = Logger(label: "ledger.api")
    ) {
        self.init(store: store, reloadableSettings: Reloadable(settings), clock: clock, defaultActor: defaultActor, logger: logger)
    }

    /// A ledger over an existing store whose settings the caller may replace while it runs
    /// (`ledger serve` reloads the apps file on `SIGHUP`: a new app's providers apply to its next
    /// fact).
    ///
    /// - Parameters:
    ///   - store: the event store.
    ///   - reloadableSettings: which providers are enabled per app, and their windows, as of each fact.
    ///   - clock, defaultActor, logger: as for ``init(pool:settings:clock:defaultActor:logger:)``.
    public init(
        store: EventStore, reloadableSettings: Reloadable<AttributionSettings>, clock: any WallClock = SystemClock(),
        defaultActor: String = "swift-api", logger: Logger = Logger(label: "ledger.api")
    ) {
        self.store = store
        self.recorder = DeviceFactRecorder(store: store, reloadableSettings: reloadableSettings, logger: logger)
        self.clock = clock
        self.defaultActor = defaultActor
        self.logger = logger
        self.metrics = LedgerFacadeMetrics()
    }

    /// Whether the database answers and holds the ledger's schema (the `events` table): what a
    /// readiness probe asks.
    /// - Throws: `PostgresError` when the database cannot be reached.
    public func isReady() async throws -> Bool { try await store.holdsLog() }
}

/// One device of one app: the key of everything the ledger records and reads about a device
/// (its stream is `device-<app>/<device>`).
public struct DeviceRef: Sendable, Hashable, CustomStringConvertible {
    /// The app.
    public let app: AppID
    /// The app's own install id for the device (pseudonymous; never an IDFA or GAID).
    public let device: DeviceID
    /// The device's stream id, `device-<app>/<device>`.
    public let streamID: StreamID

    /// A device of `app`.
    /// - Throws: ``AttributionLedgerError`` naming `device_id` when the device id cannot be part of
    ///   a stream id (only ASCII letters, digits, `.`, `_`, `:` and `-`).
    public init(app: AppID, device: DeviceID) throws(AttributionLedgerError) {
        self.app = app
        self.device = device
        do {
            streamID = try StreamID.device(app: app, device: device)
        } catch {
            throw .invalid(field: "device_id", rule: error.rule, message: error.message)
        }
    }

    /// A device of `app`, from text.
    /// - Throws: ``AttributionLedgerError`` naming `app_id` or `device_id` and the rule broken.
    public init(app: String, device: String) throws(AttributionLedgerError) {
        let appID: AppID
        let deviceID: DeviceID
        do { appID = try AppID(app) } catch { throw .invalid(field: "app_id", rule: error.rule, message: error.message) }
        do { deviceID = try DeviceID(device) } catch { throw .invalid(field: "device_id", rule: error.rule, message: error.message) }
        try self.init(app: appID, device: deviceID)
    }

    /// The stream of the attribution decisions about this device, `decision-<app>/<device>`.
    public var decisionStreamID: StreamID {
        // Same characters as the device stream, so this cannot fail once `streamID` was made.
        (try? StreamID.decisions(app: app, device: device)) ?? streamID
    }

    /// The app alone, the device id left out: safe for info-level logs and error messages.
    public var description: String { "\(app.rawValue)/(device)" }
}
