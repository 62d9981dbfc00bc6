import Foundation
import LedgerDomain
import LedgerStore
import Logging

/// The tenant checks of the facade's reads: what a caller of one app reads must be recorded for
/// that app in the log itself, not only be reached through a stream id built from its app.
///
/// Stream ids already keep apps apart (`device-<app>/<device>`: no app id or device id holds `/`).
/// These checks make a slip in that encoding, or a stream written under an older one, refuse the
/// read instead of answering with another app's events.
extension AttributionLedger {
    /// Refuses `events` (read for `device`) when one of them records another app than the
    /// device's: its metadata's `app_id`, or the app of its per-app stream id.
    /// - Throws: ``AttributionLedgerError`` `forbidden` (`recorded_app_matches`).
    func checkTenancy(_ events: [RecordedEvent], of device: DeviceRef) throws(AttributionLedgerError) {
        let app = device.app.rawValue
        for event in events {
            if let recorded = Self.recordedApp(in: event.metadata), recorded != app {
                throw refusal(event.streamID, app: app, recordedApp: recorded)
            }
            if let stream = try? StreamID(event.streamID), stream.category != StreamCategory.send.rawValue {
                guard let tenant = stream.tenant else { throw refusal(event.streamID, app: app, recordedApp: "(unknown)") }
                if tenant.app != device.app { throw refusal(event.streamID, app: app, recordedApp: tenant.app.rawValue) }
            }
        }
    }

    /// Refuses to act on `device` when the first event of its stream records another app.
    /// - Throws: ``AttributionLedgerError`` `forbidden`, `PostgresError`.
    func checkStreamTenancy(of device: DeviceRef) async throws {
        if let recorded = try await store.recordedApp(ofStream: device.streamID.rawValue), recorded != device.app.rawValue {
            throw AttributionLedgerError.otherApp(
                TenancyViolation(stream: device.streamID.rawValue, app: device.app.rawValue, recordedApp: recorded))
        }
    }

    private func refusal(_ stream: String, app: String, recordedApp: String) -> AttributionLedgerError {
        // Not a caller's mistake: the log holds another app's event where this app's was expected.
        logger.critical("refused a read that reached another app's events", metadata: ["ledger.app": "\(app)"])
        // Apps only: the stream's id holds the device's install id.
        logger.debug("tenant check failed", metadata: ["ledger.app": "\(app)", "ledger.recorded_app": "\(recordedApp)"])
        return AttributionLedgerError.otherApp(TenancyViolation(stream: stream, app: app, recordedApp: recordedApp))
    }

    /// The `app_id` of an event's metadata JSON, if it names one.
    static func recordedApp(in metadata: Data) -> String? {
        struct AppOnly: Decodable { var app_id: String? }
        return (try? JSONDecoder().decode(AppOnly.self, from: metadata))?.app_id
    }
}
