import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import LedgerStore
import LedgerTestKit
import Testing

/// Branch's `user_agent` through the worker and the fake Branch over HTTP.
extension WorkerTests {
    /// A web view's user agent, the form of the Branch v1/open server-to-server guide's example.
    static let webViewUserAgent =
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148"

    /// The `user_agent` of each open the fake Branch received, in order.
    func sentUserAgents(_ rig: Rig) throws -> [String?] {
        try rig.fakes.branch.requests.map { request in
            let body = try #require(try JSONSerialization.jsonObject(with: request.body) as? [String: Any])
            return body["user_agent"] as? String
        }
    }

    // Branch v1/open server-to-server guide: `user_agent` is "The user agent of the device". When
    // the device recorded its own (`DeviceUserAgentRecorded`), each open carries exactly the latest
    // one recorded up to the open's cause: the first open and a later session the one before them,
    // the session after an update the new one.
    @Test func branchOpensCarryTheDevicesOwnUserAgent() async throws {
        try await Self.withRig { rig in
            let updated = Self.webViewUserAgent.replacingOccurrences(of: "17_1", with: "17_2")
            try await record(DeviceUserAgentRecorded(userAgent: Self.webViewUserAgent), to: Self.device, at: testEpoch,
                             store: rig.store)
            let open = try await install(rig, token: nil)
            let session = try await record(SessionStarted(device: iosDevice()), to: Self.device,
                                           at: testEpoch.addingTimeInterval(60), store: rig.store)
            try await record(DeviceUserAgentRecorded(userAgent: updated), to: Self.device, at: testEpoch.addingTimeInterval(120),
                             store: rig.store)
            let later = try await record(SessionStarted(device: iosDevice()), to: Self.device,
                                         at: testEpoch.addingTimeInterval(180), store: rig.store)
            for (index, cause) in [open, session, later].enumerated() {
                try await enqueue(.branch, .open, cause: cause, device: Self.device, key: "b:ua:\(index)", now: testEpoch,
                                  store: rig.store)
            }
            #expect(try await rig.worker.drain() == 3)
            #expect(try sentUserAgents(rig) == [Self.webViewUserAgent, Self.webViewUserAgent, updated])
        }
    }

    // Branch v1/open server-to-server guide, `user_agent`: without the device's own user agent up to
    // the open's cause (none, or one recorded only after it), the open carries the device's app
    // user agent written from its parts, as before.
    @Test func branchOpensWithoutTheDevicesOwnUserAgentCarryTheOneWrittenFromItsParts() async throws {
        try await Self.withRig { rig in
            let open = try await install(rig, token: nil)
            try await record(DeviceUserAgentRecorded(userAgent: Self.webViewUserAgent), to: Self.device,
                             at: testEpoch.addingTimeInterval(60), store: rig.store)
            try await enqueue(.branch, .open, cause: open, device: Self.device, key: "b:ua:parts", now: testEpoch, store: rig.store)
            #expect(try await rig.worker.drain() == 1)
            #expect(try sentUserAgents(rig) == ["App/1.2.3 (iOS 17.1; en_US; iPhone15,2; Build/21B74)"])
        }
    }
}
