import Foundation
import LedgerDomain

/// One method per device fact. Each validates the fact (nothing written when it is refused), is
/// idempotent by `id` (the same id with the same content answers as the first time; with other
/// content it is refused as `id_conflict`), records it with the sends it causes, and returns its
/// position in the log.
extension AttributionLedger {
    /// Records the app's first launch on the device (the install): Google `first_open`, the
    /// AdServices lookup, Branch's first `v1/open` and Singular's session follow from it.
    /// - Parameters:
    ///   - open: what the device knew at the launch; its `app_id` must be `device.app`.
    ///   - device: the device.
    ///   - id: the caller's id for this fact (retry with the same id).
    ///   - occurredAt: the device's time of the launch.
    ///   - options: actor and correlation.
    /// - Throws: ``AttributionLedgerError``, `PostgresError`.
    @discardableResult
    public func recordFirstOpen(
        _ open: FirstOpen, for device: DeviceRef, id: UUID, occurredAt: Date, options: RecordingOptions = RecordingOptions()
    ) async throws -> Recorded {
        try await record(open, for: device, id: id, occurredAt: occurredAt, options: options)
    }

    /// Records a later launch of the app (a session), possibly opened by a link.
    /// - Throws: ``AttributionLedgerError``, `PostgresError`.
    @discardableResult
    public func recordSession(
        _ session: SessionStarted, for device: DeviceRef, id: UUID, occurredAt: Date, options: RecordingOptions = RecordingOptions()
    ) async throws -> Recorded {
        try await record(session, for: device, id: id, occurredAt: occurredAt, options: options)
    }

    /// Records an in-app conversion event (tutorial done, item viewed, level reached).
    /// - Throws: ``AttributionLedgerError``, `PostgresError`.
    @discardableResult
    public func recordInAppEvent(
        _ event: InAppEventRecorded, for device: DeviceRef, id: UUID, occurredAt: Date,
        options: RecordingOptions = RecordingOptions()
    ) async throws -> Recorded {
        try await record(event, for: device, id: id, occurredAt: occurredAt, options: options)
    }

    /// Records revenue (a store purchase or ad monetization); a store transaction counts once in
    /// the SKAN totals whatever id it is retried under.
    /// - Throws: ``AttributionLedgerError``, `PostgresError`.
    @discardableResult
    public func recordRevenue(
        _ revenue: RevenueRecorded, for device: DeviceRef, id: UUID, occurredAt: Date, options: RecordingOptions = RecordingOptions()
    ) async throws -> Recorded {
        try await record(revenue, for: device, id: id, occurredAt: occurredAt, options: options)
    }

    /// Records an AdServices attribution token the app fetched after its first launch.
    /// - Throws: ``AttributionLedgerError``, `PostgresError`.
    @discardableResult
    public func recordAdServicesToken(
        _ token: AdServicesToken, for device: DeviceRef, id: UUID, occurredAt: Date, options: RecordingOptions = RecordingOptions()
    ) async throws -> Recorded {
        try await record(AdServicesTokenReceived(token: token), for: device, id: id, occurredAt: occurredAt, options: options)
    }

    /// Records a link that opened the installed app, with its click ids (`gclid`, `gbraid`,
    /// `wbraid`, `link_click_id`).
    /// - Throws: ``AttributionLedgerError``, `PostgresError`.
    @discardableResult
    public func recordDeepLinkOpen(
        _ link: DeepLink, for device: DeviceRef, id: UUID, occurredAt: Date, options: RecordingOptions = RecordingOptions()
    ) async throws -> Recorded {
        try await record(DeepLinkOpened(link: link), for: device, id: id, occurredAt: occurredAt, options: options)
    }

    /// Records what Apple's legacy iAd framework answered (its details object, or its error code).
    /// - Throws: ``AttributionLedgerError``, `PostgresError`.
    @discardableResult
    public func recordIAdAttributionDetails(
        _ details: IAdAttributionDetailsReceived, for device: DeviceRef, id: UUID, occurredAt: Date,
        options: RecordingOptions = RecordingOptions()
    ) async throws -> Recorded {
        try await record(details, for: device, id: id, occurredAt: occurredAt, options: options)
    }

    /// Records the app's SKAdNetwork registration (fine value 0; the SKAN 4 windows start here).
    /// - Throws: ``AttributionLedgerError``, `PostgresError`.
    @discardableResult
    public func registerSKAN(
        _ registration: SKANRegistered = SKANRegistered(), for device: DeviceRef, id: UUID, occurredAt: Date,
        options: RecordingOptions = RecordingOptions()
    ) async throws -> Recorded {
        try await record(registration, for: device, id: id, occurredAt: occurredAt, options: options)
    }

    /// Records a SKAdNetwork conversion-value update the app made.
    /// - Throws: ``AttributionLedgerError``, `PostgresError`.
    @discardableResult
    public func updateSKANConversionValue(
        _ update: SKANConversionValueUpdated, for device: DeviceRef, id: UUID, occurredAt: Date,
        options: RecordingOptions = RecordingOptions()
    ) async throws -> Recorded {
        try await record(update, for: device, id: id, occurredAt: occurredAt, options: options)
    }

    /// Records a change of the user's tracking consent (ATT on iOS, limit ad tracking on Android).
    /// - Throws: ``AttributionLedgerError``, `PostgresError`.
    @discardableResult
    public func recordTrackingConsentChange(
        _ change: TrackingConsentChanged, for device: DeviceRef, id: UUID, occurredAt: Date,
        options: RecordingOptions = RecordingOptions()
    ) async throws -> Recorded {
        try await record(change, for: device, id: id, occurredAt: occurredAt, options: options)
    }

    /// Records the device's own user agent text, which Branch opens up to the next one carry as
    /// `user_agent` ("the user agent of the device", Branch v1/open server-to-server guide).
    /// Record it before the launch that should carry it.
    /// - Throws: ``AttributionLedgerError``, `PostgresError`.
    @discardableResult
    public func recordDeviceUserAgent(
        _ userAgent: DeviceUserAgentRecorded, for device: DeviceRef, id: UUID, occurredAt: Date,
        options: RecordingOptions = RecordingOptions()
    ) async throws -> Recorded {
        try await record(userAgent, for: device, id: id, occurredAt: occurredAt, options: options)
    }
}
