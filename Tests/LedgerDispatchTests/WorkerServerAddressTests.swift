import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import LedgerStore
import LedgerTestKit
import Testing

/// Google App Conversion Tracking API: `X-Forwarded-For` is "the public IPv4 or IPv6 address of
/// the device where the event was measured". An address that is one of this service's own
/// (`LEDGER_SERVER_PUBLIC_IPS`) was measured here, not on the device (a backend that recorded its
/// own address as the device's): the conversion is refused before any call, as Branch's
/// `X-IP-Override` is.
extension WorkerTests {
    @Test(arguments: ["203.0.113.7", "::ffff:203.0.113.7"])
    func aGoogleConversionFromTheServersOwnAddressIsRefused(serverAddress: String) async throws {
        try await Self.withRig(rules: { $0.serverPublicIPs = [serverAddress] }) { rig in
            let open = try await install(rig, token: nil)
            let send = try await enqueue(.google, .conversion, cause: open, device: Self.device, key: "g:server-ip",
                                         now: testEpoch, store: rig.store)
            #expect(try await rig.worker.drain() == 1)
            let stream = StreamID.send(id: send.sendID).rawValue
            #expect(try await streamTypes(stream, store: rig.store) == ["SendRequested", "SendFailed"])
            let failed = try LedgerJSON.makeDecoder().decode(
                SendFailed.self, from: try #require(try await rig.store.readStream(stream).last).data)
            #expect(failed.rule == "not_server_ip" && (failed.detail ?? "").contains("X-Forwarded-For"), "\(failed.rule): \(failed.detail ?? "")")
            #expect(rig.fakes.google.requestCount == 0)
        }
    }

    // Another device address still goes out.
    @Test func aGoogleConversionFromAnotherAddressIsSent() async throws {
        try await Self.withRig(rules: { $0.serverPublicIPs = ["198.51.100.1"] }) { rig in
            let open = try await install(rig, token: nil)
            try await enqueue(.google, .conversion, cause: open, device: Self.device, key: "g:device-ip", now: testEpoch,
                              store: rig.store)
            #expect(try await rig.worker.drain() == 1)
            #expect(rig.fakes.google.conversionRequests.first?.headerValue("X-Forwarded-For") == "203.0.113.7")
        }
    }
}
