import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import LedgerStore
import LedgerTestKit
import Testing

/// Limit-ad-tracking applies when the device says so in either of its two ways: its
/// `limit_ad_tracking` flag, or an App Tracking Transparency status of `denied` or `restricted`
/// (the user, or the device's management, refused tracking). The Google App Conversion Tracking
/// API's `lat` is then `1`; the Branch v1/open server-to-server guide's `ad_tracking_enabled` is
/// then omitted.
extension WorkerTests {
    /// A first open of `device-app1/<name>` whose device has `limit_ad_tracking` false and this ATT
    /// status, from an address of its own.
    func openWithATT(_ rig: Rig, _ status: ATTStatus, name: String, ip: String) async throws -> (String, RecordedEvent) {
        let device = "device-app1/\(name)"
        var context = iosDevice(idfv: deviceUUID(name, 0, kind: "F"), idfa: deviceUUID(name, 0, kind: "A"), ip: ip)
        context.attStatus = status
        let open = try await record(FirstOpen(appID: try AppID("app1"), device: context), to: device, at: testEpoch, store: rig.store)
        return (device, open)
    }

    @Test(arguments: [(ATTStatus.denied, "1"), (.restricted, "1"), (.authorized, "0")])
    func limitAdTrackingFollowsTheATTStatusToo(status: ATTStatus, lat: String) async throws {
        try await Self.withRig { rig in
            let (device, open) = try await openWithATT(rig, status, name: status.rawValue, ip: "203.0.113.9")
            try await enqueue(.google, .conversion, cause: open, device: device, key: "g:att", now: testEpoch, store: rig.store)
            try await enqueue(.branch, .open, cause: open, device: device, key: "b:att", now: testEpoch, store: rig.store)
            #expect(try await rig.worker.drain() == 2)
            let google = try #require(rig.fakes.google.conversionRequests.first)
            #expect(google.queryValue("lat") == lat)
            let branch = try #require(rig.fakes.branch.requests.first)
            let body = try #require(try JSONSerialization.jsonObject(with: branch.body) as? [String: Any])
            #expect((body["ad_tracking_enabled"] as? Bool) == (lat == "0" ? true : nil), "\(branch.bodyText)")
            #expect(try await queueCount(rig.store) == 0)
        }
    }
}
