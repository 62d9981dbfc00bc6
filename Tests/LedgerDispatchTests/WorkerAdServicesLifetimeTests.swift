import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import LedgerStore
import LedgerTestKit
import Testing

/// Apple AdServices attribution API: "The token has a time to live (TTL) of 24 hours". The
/// device reports when it made the token (`issued_at`, by the device's clock); the ledger knows
/// when it received it (the fact's `recorded_at`, by its own clock). A token cannot have been made
/// after the ledger received it, so a device clock running ahead cannot stretch the lifetime: the
/// token is dead 24 hours after the earlier of the two.
extension WorkerTests {
    /// A first open whose device clock runs two hours ahead: its token was made when the ledger
    /// received it, yet reports being made two hours later. The fake Apple knows the token's real
    /// making time. The worker's clock is put at 24 h and one minute after the ledger received it.
    func openFromAClockRunningAhead(_ rig: Rig) async throws -> RecordedEvent {
        let token = "dG9rZW4tZnJvbS1hLWZhc3QtY2xvY2s="
        let madeAt = Date()
        rig.fakes.apple.register(token: token, issuedAt: madeAt)
        let open = try await record(
            FirstOpen(appID: try AppID("app1"), device: iosDevice(),
                      adServicesToken: LedgerDomain.AdServicesToken(token: token, issuedAt: madeAt.addingTimeInterval(2 * 3_600))),
            to: Self.device, at: madeAt, store: rig.store)
        rig.clock.set(open.recordedAt.addingTimeInterval(86_400 + 60))
        return open
    }

    // The lookup is not made: the token is past its 24 h, counted from when the ledger received it.
    @Test func aTokenFromAClockRunningAheadExpiresByWhenItWasReceived() async throws {
        try await Self.withRig { rig in
            let open = try await openFromAClockRunningAhead(rig)
            let send = try await enqueue(.appleAdServices, .tokenLookup, cause: open, device: Self.device, key: "a:ahead",
                                         now: rig.clock.now(), store: rig.store)
            #expect(try await rig.worker.drain() == 1)
            let stream = StreamID.send(id: send.sendID).rawValue
            #expect(try await streamTypes(stream, store: rig.store) == ["SendRequested", "SendFailed"])
            let failed = try LedgerJSON.makeDecoder().decode(
                SendFailed.self, from: try #require(try await rig.store.readStream(stream).last).data)
            #expect(failed.attempt == nil && failed.rule == "adservices_token_expired", "\(failed.rule)")
            #expect(rig.fakes.apple.requestCount == 0)
        }
    }

    // Branch v1/open server-to-server guide: `apple_attribution_token` goes only within the
    // token's 24 h, counted the same way: the first open is sent without it.
    @Test func branchLeavesOutATokenPastItsLifetimeByWhenItWasReceived() async throws {
        try await Self.withRig { rig in
            let open = try await openFromAClockRunningAhead(rig)
            try await enqueue(.branch, .open, cause: open, device: Self.device, key: "b:ahead", now: rig.clock.now(),
                              store: rig.store)
            #expect(try await rig.worker.drain() == 1)
            let request = try #require(rig.fakes.branch.requests.first)
            let body = try #require(try JSONSerialization.jsonObject(with: request.body) as? [String: Any])
            #expect(body["first_session"] as? Bool == true, "\(request.bodyText)")
            #expect(body["apple_attribution_token"] == nil, "\(request.bodyText)")
        }
    }
}
