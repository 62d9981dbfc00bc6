import Foundation
import LedgerDomain
import LedgerFolds
import LedgerProjections
import LedgerProviders
import LedgerStore

/// Reads. Each replays the device's history from the log (its stream, its decisions and the
/// streams of its sends), so it is exact whether or not the projection runner is running, and
/// with `asOf` it answers what the ledger held at that position or time.
extension AttributionLedger {
    /// This ledger with its reads (history, device state, SKAN values, attribution) sent to
    /// `readStore`, a streaming standby of ``store``'s database, to take them off the primary;
    /// facts are still recorded through ``store``. The gap-safe rule holds on a standby as it is;
    /// what it adds is lag, so a read as of a position first waits, up to `wait`, until the
    /// standby holds the log through it.
    /// - Parameters:
    ///   - readStore: a store over the standby (`LEDGER_READ_DATABASE_URL`).
    ///   - wait: how long a read as of a position waits for the standby to replay it before it
    ///     throws `EventStoreError.readDatabaseBehind`.
    public func reading(from readStore: EventStore, waitingAtMost wait: Duration = .seconds(5)) -> AttributionLedger {
        var copy = self
        copy.readStore = readStore
        copy.readWait = wait
        return copy
    }

    /// The store a read as of `asOf` uses: ``store``, or the read database once it holds the
    /// position asked for.
    /// - Throws: `EventStoreError.readDatabaseBehind` when the read database has not replayed it
    ///   within the wait; `PostgresError`.
    func storeForReading(asOf: AsOf?) async throws -> EventStore {
        guard let readStore else { return store }
        if case .position(let position) = asOf { try await readStore.waitUntilReadable(through: position, timeout: readWait) }
        return readStore
    }

    /// The device's history in the log's order: its own events, its attribution decisions, and
    /// every event of the sends requested for it.
    /// - Parameters:
    ///   - device: the device.
    ///   - asOf: only what the ledger held at that global position or recording time (all when nil).
    ///   - types: only these event types (all when empty).
    /// - Throws: ``AttributionLedgerError`` `forbidden` when an event read records another app
    ///   (nothing is returned), `PostgresError`.
    public func history(of device: DeviceRef, asOf: AsOf? = nil, types: [String] = []) async throws -> [RecordedEvent] {
        let events = try await storeForReading(asOf: asOf)
            .readHistory(of: .deviceHistory(device.streamID.rawValue), types: types, asOf: asOf)
        try checkTenancy(events, of: device)
        // With a type filter the stream's own first event may not be among those read.
        if !types.isEmpty { try await checkStreamTenancy(of: device) }
        return events
    }

    /// The projections' per-device states, replayed from the device's history.
    /// - Throws: `PostgresError`, or a decoding error for a stored event the projections cannot read.
    public func deviceState(of device: DeviceRef, asOf: AsOf? = nil) async throws -> DeviceState {
        let events = try await history(of: device, asOf: asOf)
        let stream = device.streamID.rawValue
        func replay<Reducer: DeviceStateStorage>(_ projection: DeviceStateProjection<Reducer>) throws -> Reducer.State {
            let types = Set(projection.eventTypes)
            return try projection.replay(events.filter { types.contains($0.type) }, device: stream)
        }
        return DeviceState(
            skan: try replay(SKANDeviceProjection(SKANDeviceReducer())),
            adServices: try replay(AdServicesTokenProjection(AdServicesTokenReducer())),
            branch: try replay(BranchIdentityProjection(BranchIdentityReducer())),
            google: try replay(GoogleObligationProjection(GoogleObligationReducer())),
            lastPosition: events.map(\.position).max(), eventCount: events.count)
    }

    /// The device's SKAdNetwork values: windows, conversion values, revenue totals and, once
    /// Singular answered, the next conversion value.
    /// - Parameter asOf: as the ledger held them then; with a time, the current window is
    ///   computed for that time, otherwise for the ledger clock's now.
    /// - Throws: `PostgresError`.
    public func skanValues(of device: DeviceRef, asOf: AsOf? = nil) async throws -> SKANValues {
        let projection = SKANDeviceProjection(SKANDeviceReducer())
        let events = try await history(of: device, asOf: asOf, types: projection.eventTypes)
        let state = try projection.replay(events, device: device.streamID.rawValue)
        let at: Date
        if case .recordedAt(let time) = asOf { at = time } else { at = clock.now() }
        return Self.skanValues(state, at: at)
    }

    /// The attribution decisions about the device: the newest in full, and how many there were.
    /// - Throws: `PostgresError`, or a decoding error for a stored decision that cannot be read.
    public func attribution(of device: DeviceRef, asOf: AsOf? = nil) async throws -> DeviceAttribution {
        let newest = try await storeForReading(asOf: asOf)
            .readStream(device.decisionStreamID.rawValue, backward: true, limit: 1, asOf: asOf).first
        if let newest { try checkTenancy([newest], of: device) }
        guard let newest else { return DeviceAttribution(latest: nil, position: nil, decidedAt: nil, decisionCount: 0) }
        let decoded = try EventCatalog.standard.decode(type: newest.type, schemaVersion: newest.schemaVersion, data: newest.data)
        return DeviceAttribution(latest: decoded as? AttributionDecided, position: newest.position, decidedAt: newest.recordedAt,
                                 decisionCount: newest.streamVersion)
    }

    /// The facade's view of the SKAN projection's state at `now`.
    static func skanValues(_ state: SKANDeviceReducer.State, at now: Date) -> SKANValues {
        let skan = state.skan
        func time(_ seconds: Int64?) -> Date? { seconds.map { Date(timeIntervalSince1970: TimeInterval($0)) } }
        func coarse(_ value: LedgerProviders.SKANCoarseValue?) -> LedgerDomain.SKANCoarseValue? {
            switch value {
            case .low: .low
            case .medium: .medium
            case .high: .high
            case nil: nil
            }
        }
        let windows = [
            SKANWindowValues(window: .p0, coarseValue: coarse(skan.p0Coarse), lockedAt: time(skan.p0WindowLock),
                             iapRevenue: skan.p0TotalIAPRevenue, adRevenue: skan.p0TotalAdMonRevenue),
            SKANWindowValues(window: .p1, coarseValue: coarse(skan.p1Coarse), lockedAt: time(skan.p1WindowLock),
                             iapRevenue: skan.p1TotalIAPRevenue, adRevenue: skan.p1TotalAdMonRevenue),
            SKANWindowValues(window: .p2, coarseValue: coarse(skan.p2Coarse), lockedAt: time(skan.p2WindowLock),
                             iapRevenue: skan.p2TotalIAPRevenue, adRevenue: skan.p2TotalAdMonRevenue),
        ]
        let next = state.lastSingularAnswer.map { answer in
            NextConversionValue(
                fineValue: answer.conversionValue, coarseValue: coarse(answer.coarseValue.flatMap { LedgerProviders.SKANCoarseValue(rawValue: $0) }),
                lockWindow: answer.lockWindow, postbackSequenceIndex: answer.postbackSequenceIndex, answeredAt: answer.answeredAt,
                confirmedByDevice: answer.confirmedByDevice)
        }
        return SKANValues(
            registered: skan.isRegistered, registeredAt: time(skan.firstCallTimestamp), lastCallAt: time(skan.lastCallTimestamp),
            currentWindow: skan.isRegistered ? SKANWindowName(rawValue: skan.window(at: now).rawValue) ?? .over : .over,
            windowAt: now, fineValue: skan.conversionValue, windows: windows, totalIAPRevenue: skan.totalRevenueByCurrency,
            totalAdRevenue: skan.totalAdMonRevenueByCurrency, nextConversionValue: next, updatesApplied: state.updatesApplied,
            updatesIgnored: state.updatesIgnored)
    }
}
