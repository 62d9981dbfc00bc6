import AttributionLedger
import Foundation
import HTTPTypes
import Hummingbird
import LedgerDecisions
import LedgerDomain
import LedgerStore
import LedgerTimeline
import NIOCore

/// `GET /v1/apps/{app}/devices/{device}/timeline`: the device's attribution drawn as one
/// self-contained HTML page (docs/http-api.md), the page `ledger explain --html` writes.
extension Handlers {
    /// The page, after the same checks as the history route: this app's key, the device's events
    /// recorded for this app (a stream holding another app's event is refused whole), and 404 when
    /// the ledger holds no event of the device as of the time or position asked.
    func timeline(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let (device, asOf) = try readTarget(request, context)
        let events = try await ledger.history(of: device, asOf: asOf)
        guard events.contains(where: { $0.streamID == device.streamID.rawValue }) else {
            throw APIError(.notFound, code: .notFound, field: "device", rule: "known_device",
                           message: "The ledger holds no event of this device\(asOf == nil ? "" : " as of the time or position asked").")
        }
        let windows = ledger.settings.forApp(device.app.rawValue).windows
        let page = try await DeviceTimeline.load(device: device.streamID.rawValue, asOf: asOf, store: ledger.store, windows: windows)
        return Response(
            status: .ok,
            headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
                      .contentSecurityPolicy: DeviceTimeline.contentSecurityPolicy],
            body: ResponseBody(byteBuffer: ByteBuffer(string: page.html())))
    }
}
