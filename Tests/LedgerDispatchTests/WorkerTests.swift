import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import LedgerHTTPTransport
import LedgerPostgres
import LedgerProviders
import LedgerStore
import LedgerTestKit
import Testing

/// The worker end to end: real PostgreSQL, real HTTP over loopback, fake providers that follow the
/// documents (issue 6, "What it must show").
@Suite("Send worker against the fake providers", .database, .serialized)
struct WorkerTests {
    static let devToken = "dev-token-SECRET-1"
    static let branchSecret = "branch-secret-SECRET-2"
    static let branchKey = "key_live_SECRET-3"
    static let sdkKey = "singular-sdk-SECRET-4"

    /// A store, fakes, a transport and a worker on a manual clock.
    struct Rig {
        let store: EventStore
        let fakes: FakeProviders
        let worker: SendWorker
        let clock: ManualClock
    }

    /// The account the fakes stand for, and the ledger's configuration.
    static let credentials = FakeProviders.Credentials(
        googleDevToken: devToken, googleLinkID: "LINK1", branchKey: branchKey, branchSecret: branchSecret, singularSDKKey: sdkKey)

    /// Runs `body` with a rig; the fakes' anomalies end the test (`withCheckedFakeProviders`:
    /// none, or exactly those the test declares). The fake Apple keeps the worker's clock, so a
    /// token registered with its `issuedAt` lives 24 hours of that clock.
    static func withRig(
        slots: Int = 4, prefetch: Int? = nil, lease: TimeInterval = 30, branchIdentityKey: String? = nil,
        rules adjust: (inout ProviderSendRules) -> Void = { _ in },
        sourceLocation: SourceLocation = #_sourceLocation, _ body: (Rig) async throws -> Void
    ) async throws {
        try await withStore(catalog: .standard) { store, _ in
            try await withCheckedFakeProviders(configuration: .init(credentials: credentials), sourceLocation: sourceLocation) {
                fakes in
                let transport = HTTPProviderTransport()
                do {
                    fakes.branch.setRapidRepeatInterval(.zero)
                    var branch = fakes.branchConfiguration
                    branch.identityKey = branchIdentityKey
                    var rules = ProviderSendRules(
                        google: GoogleConversionRequestBuilder(link: fakes.googleLink, endpoint: fakes.googleEndpoint),
                        adServices: fakes.appleEndpoint, branch: branch, singular: fakes.singularConfiguration)
                    adjust(&rules)
                    let clock = ManualClock(testEpoch)
                    fakes.apple.setClock(clock)
                    let worker = SendWorker(
                        store: store, rules: rules, transport: transport,
                        configuration: .init(workerID: "test-worker", slots: slots, lease: lease, requestTimeout: .seconds(5),
                                             prefetch: prefetch),
                        clock: clock, jitter: { 0.5 }, logger: TestDatabase.quietLogger)
                    try await body(Rig(store: store, fakes: fakes, worker: worker, clock: clock))
                } catch {
                    await transport.shutdown()
                    throw error
                }
                await transport.shutdown()
            }
        }
    }

    static let device = "device-app1/dev1"

    /// The first open of ``device`` with an Apple token made at `time` (registered with the fake
    /// Apple as a token the device made).
    func install(_ rig: Rig, token: String? = "dG9rZW4tZm9yLXRlc3Rz", at time: Date = testEpoch) async throws -> RecordedEvent {
        if let token { rig.fakes.apple.register(token: token, issuedAt: time) }
        return try await record(FirstOpen(appID: try AppID("app1"), device: iosDevice(),
                                          adServicesToken: token.map { LedgerDomain.AdServicesToken(token: $0, issuedAt: time) }),
                                to: Self.device, at: time, store: rig.store)
    }

    /// The Apple token of ``firstOpens(_:count:prefix:tokenIssuedAt:)``'s device `index`.
    static func adServicesToken(_ prefix: String, _ index: Int) -> String {
        Data("\(prefix)-\(index)".utf8).base64EncodedString()
    }

    /// `count` devices `device-app1/<prefix><n>`, each with a first open whose Apple token was
    /// issued at `tokenIssuedAt` (registered with the fake Apple): the devices and their opens.
    func firstOpens(_ rig: Rig, count: Int, prefix: String, tokenIssuedAt: Date = testEpoch) async throws
        -> [(device: String, cause: RecordedEvent)]
    {
        var opens: [(device: String, cause: RecordedEvent)] = []
        for index in 0..<count {
            let device = "device-app1/\(prefix)\(index)"
            rig.fakes.apple.register(token: Self.adServicesToken(prefix, index), issuedAt: tokenIssuedAt)
            let token = LedgerDomain.AdServicesToken(token: Self.adServicesToken(prefix, index), issuedAt: tokenIssuedAt)
            let ids = iosDevice(idfv: deviceUUID(prefix, index, kind: "F"), idfa: deviceUUID(prefix, index, kind: "A"))
            opens.append((device, try await record(FirstOpen(appID: try AppID("app1"), device: ids, adServicesToken: token),
                                                   to: device, at: testEpoch, store: rig.store)))
        }
        return opens
    }

    // Apple AdServices attribution API: after a 404, "initiate retries at intervals of 5 seconds,
    // with a maximum of three attempts": three 404s, whatever came before them. Two 500s first
    // (retried with their own back-off) leave the lookup its three 404 attempts.
    @Test func apple404sAreCountedApartFromEarlierServerErrors() async throws {
        try await Self.withRig { rig in
            let cause = try await install(rig)
            rig.fakes.apple.enqueue(.status(500), .status(500), .status(404), .status(404), .status(404))
            let send = try await enqueue(.appleAdServices, .tokenLookup, cause: cause, device: Self.device, key: "apple:500",
                                         now: testEpoch, store: rig.store)
            let stream = StreamID.send(id: send.sendID).rawValue
            for _ in 0..<8 where try await queueCount(rig.store) > 0 {
                _ = try await rig.worker.drain()
                rig.clock.advance(by: 300)
            }
            #expect(rig.fakes.apple.requestCount == 5)
            let failed = try LedgerJSON.makeDecoder().decode(SendFailed.self, from: try #require(try await rig.store.readStream(stream).last).data)
            #expect(failed.rule == "adservices_404_gave_up" && failed.attempt == 5)
        }
    }

    // Apple AdServices attribution API: 404 means "too soon" — retry every 5 s, at most 3 attempts;
    // the third try's 200 settles it.
    @Test func apple404404200SucceedsOnTheThirdTry() async throws {
        try await Self.withRig { rig in
            let cause = try await install(rig)
            rig.fakes.apple.enqueue(.status(404), .status(404))
            let send = try await enqueue(.appleAdServices, .tokenLookup, cause: cause, device: Self.device, key: "apple:1",
                                         now: testEpoch, store: rig.store)
            let stream = StreamID.send(id: send.sendID).rawValue
            #expect(try await rig.worker.drain() == 1)
            #expect(try await rig.worker.drain() == 0)  // the retry is not due yet
            rig.clock.advance(by: 5)
            #expect(try await rig.worker.drain() == 1)
            rig.clock.advance(by: 5)
            #expect(try await rig.worker.drain() == 1)
            #expect(try await streamTypes(stream, store: rig.store) == [
                "SendRequested", "SendAttempted", "ResponseReceived", "RetryScheduled", "SendAttempted", "ResponseReceived",
                "RetryScheduled", "SendAttempted", "ResponseReceived", "SendSucceeded",
            ])
            let retries = try await rig.store.readStream(stream).filter { $0.type == RetryScheduled.eventType }
            let first = try LedgerJSON.makeDecoder().decode(RetryScheduled.self, from: try #require(retries.first).data)
            #expect(first.notBefore == testEpoch.addingTimeInterval(5))
            #expect(rig.fakes.apple.requestCount == 3)
            #expect(try await queueCount(rig.store) == 0)
        }
    }

    // A cause whose sealed fields cannot be opened (a damaged box) fails only its own send: the
    // other sends of the same claim are tried and settled; the damaged one is left to its lease.
    @Test func aDamagedCauseHoldsBackOnlyItsOwnSend() async throws {
        try await Self.withRig { rig in
            try #require(rig.store.privacy.isEnabled)  // the test cluster has a master key: causes are sealed
            let good = try await install(rig)
            let other = "device-app1/dev2"
            let damaged = try await record(
                FirstOpen(appID: try AppID("app1"), device: iosDevice(idfv: "5E8C35A1-4F1B-4F0E-9E3A-2D8D7A9C6B11",
                                                                     idfa: "0B7E9C2D-1A3F-4E5D-8C6B-9A8F7E6D5C4B"),
                          adServicesToken: LedgerDomain.AdServicesToken(token: "dG9rZW4tdHdv", issuedAt: testEpoch)),
                to: other, at: testEpoch, store: rig.store)
            let goodSend = try await enqueue(.appleAdServices, .tokenLookup, cause: good, device: Self.device, key: "apple:good",
                                             now: testEpoch, store: rig.store)
            let damagedSend = try await enqueue(.appleAdServices, .tokenLookup, cause: damaged, device: other,
                                                key: "apple:damaged", now: testEpoch, store: rig.store)
            let admin = try PostgresConnection(conninfo: rig.store.pool.configuration.conninfo, logger: TestDatabase.quietLogger)
            try admin.run(script: "ALTER TABLE events DISABLE TRIGGER events_immutable")
            try admin.execute("""
                UPDATE events SET data = jsonb_set(data, '{ledger_personal,box}', to_jsonb(repeat('A', 64)))
                WHERE event_id = \(damaged.id)
                """)
            try admin.run(script: "ALTER TABLE events ENABLE TRIGGER events_immutable")
            #expect(try await rig.worker.drain() == 2)
            #expect(try await streamTypes(StreamID.send(id: goodSend.sendID).rawValue, store: rig.store)
                    == ["SendRequested", "SendAttempted", "ResponseReceived", "SendSucceeded"])
            #expect(try await streamTypes(StreamID.send(id: damagedSend.sendID).rawValue, store: rig.store) == ["SendRequested"])
            #expect(rig.fakes.apple.requestCount == 1)
            let left = try await rig.store.pool.query("SELECT state FROM send_queue").map { try $0.decode(String.self, at: 0) }
            #expect(left == ["running"])
        }
    }

    // Apple AdServices attribution API: a token is good for 24 hours; first tried after that, it is
    // expired — no call is made.
    @Test func aTokenFirstTriedAfter24HoursExpiresWithoutACall() async throws {
        try await Self.withRig { rig in
            let cause = try await install(rig)
            let send = try await enqueue(.appleAdServices, .tokenLookup, cause: cause, device: Self.device, key: "apple:late",
                                         now: testEpoch, store: rig.store)
            rig.clock.advance(by: 86_400)
            #expect(try await rig.worker.drain() == 1)
            let stream = StreamID.send(id: send.sendID).rawValue
            #expect(try await streamTypes(stream, store: rig.store) == ["SendRequested", "SendFailed"])
            let failed = try LedgerJSON.makeDecoder().decode(
                SendFailed.self, from: try #require(try await rig.store.readStream(stream).last).data)
            #expect(failed.attempt == nil && failed.rule.contains("expired"))
            #expect(rig.fakes.apple.requestCount == 0)
        }
    }

    // Branch v1/open server-to-server guide: with server_to_server_identity, a device's second open
    // carries the randomized_bundle_token from the first answer, even when both opens were queued
    // together.
    @Test func branchSecondOpenCarriesTheFirstAnswersToken() async throws {
        try await Self.withRig { rig in
            let cause = try await install(rig, token: nil)
            let session = try await record(SessionStarted(device: iosDevice()), to: Self.device,
                                           at: testEpoch.addingTimeInterval(60), store: rig.store)
            try await enqueue(.branch, .open, cause: cause, device: Self.device, key: "branch:1", now: testEpoch, store: rig.store)
            try await enqueue(.branch, .open, cause: session, device: Self.device, key: "branch:2", now: testEpoch, store: rig.store)
            #expect(try await rig.worker.drain() == 2)
            let opens = rig.fakes.branch.requests
            try #require(opens.count == 2)
            let issued = try #require(rig.fakes.branch.issuedBundleTokens.first)
            #expect(opens[1].bodyText.contains(issued))
            #expect(!opens[0].bodyText.contains("randomized_bundle_token"))
            #expect(rig.fakes.anomalies.isEmpty)
        }
    }

    // Branch v1/open server-to-server guide: a 429 backs off that device only; another device's
    // open goes out.
    @Test func branch429DelaysOnlyThatDevice() async throws {
        try await Self.withRig { rig in
            let cause = try await install(rig, token: nil)
            let other = "device-app1/dev2"
            let otherDevice = iosDevice(idfv: "5B0AE9F4-1F3A-4C52-9B34-7D3C8E2B9A11", idfa: "8C1D3F0A-6E52-4B7C-A1D9-3E4F5A6B7C8D")
            let otherCause = try await record(FirstOpen(appID: try AppID("app1"), device: otherDevice), to: other, at: testEpoch,
                                              store: rig.store)
            rig.fakes.branch.enqueue(.status(429, body: "", headers: [Header("Retry-After", "120")]))
            let limited = try await enqueue(.branch, .open, cause: cause, device: Self.device, key: "b:limited", now: testEpoch,
                                            store: rig.store)
            let fine = try await enqueue(.branch, .open, cause: otherCause, device: other, key: "b:fine", now: testEpoch,
                                         store: rig.store)
            _ = try await rig.worker.drain()
            let limitedTypes = try await streamTypes(StreamID.send(id: limited.sendID).rawValue, store: rig.store)
            let fineTypes = try await streamTypes(StreamID.send(id: fine.sendID).rawValue, store: rig.store)
            #expect(limitedTypes.last == "RetryScheduled" || fineTypes.last == "RetryScheduled")
            #expect(limitedTypes.last == "SendSucceeded" || fineTypes.last == "SendSucceeded")
            #expect(try await queueCount(rig.store) == 1)
            rig.clock.advance(by: 130)
            _ = try await rig.worker.drain()
            #expect(try await queueCount(rig.store) == 0)
        }
    }

    // Issue 6 and ARCHITECTURE "Secrets never enter the log": no stored request carries a credential.
    @Test func noStoredRequestContainsACredential() async throws {
        try await Self.withRig { rig in
            let cause = try await install(rig)
            try await record(SKANRegistered(), to: Self.device, at: testEpoch, store: rig.store)
            var sends: [Outbox.Enqueued] = []
            sends.append(try await enqueue(.google, .conversion, cause: cause, device: Self.device, key: "g:1", now: testEpoch,
                                           store: rig.store))
            sends.append(try await enqueue(.appleAdServices, .tokenLookup, cause: cause, device: Self.device, key: "a:1",
                                           now: testEpoch, store: rig.store))
            sends.append(try await enqueue(.branch, .open, cause: cause, device: Self.device, key: "b:1", now: testEpoch,
                                           store: rig.store))
            sends.append(try await enqueue(.singular, .conversionValue, cause: cause, device: Self.device, key: "s:1",
                                           now: testEpoch, store: rig.store))
            #expect(try await rig.worker.drain() == 4)
            for send in sends {
                let events = try await rig.store.readStream(StreamID.send(id: send.sendID).rawValue)
                #expect(events.map(\.type).contains("SendAttempted"),
                        "\(String(decoding: events.last?.data ?? Data(), as: UTF8.self))")
            }
            #expect(rig.fakes.google.requestCount == 1 && rig.fakes.branch.requestCount == 1 && rig.fakes.singular.requestCount == 1)
            // The fakes saw the credentials; the ledger kept none of them.
            #expect(rig.fakes.google.requests.first?.queryValue("dev_token") == Self.devToken)
            for secret in [Self.devToken, Self.branchSecret, Self.branchKey, Self.sdkKey] {
                let found = try await rig.store.pool.query(
                    "SELECT count(*) FROM events WHERE data::text LIKE \("%" + secret + "%") OR metadata::text LIKE \("%" + secret + "%")"
                ).single().decode(Int.self, at: 0)
                #expect(found == 0, "a stored event contains \(secret.prefix(8))…")
            }
            let attempts = try await rig.store.pool.query(
                "SELECT count(*) FROM events WHERE event_type = 'SendAttempted'").single().decode(Int.self, at: 0)
            #expect(attempts == 4)
            #expect(try await queueCount(rig.store) == 0)
        }
    }

    // Issue 6: a worker whose lease ran out (a stalled provider) loses the try to a rescue; its late
    // answer never writes a second outcome, and the send still ends with exactly one terminal event.
    @Test func aLateAnswerAfterARescueWritesNothing() async throws {
        try await Self.withRig { rig in
            let cause = try await install(rig)
            let stalled = FakeGate()
            rig.fakes.apple.enqueue(.held(by: stalled))
            let send = try await enqueue(.appleAdServices, .tokenLookup, cause: cause, device: Self.device, key: "a:stall",
                                         now: testEpoch, store: rig.store)
            let stream = StreamID.send(id: send.sendID).rawValue
            async let drained = rig.worker.drain()
            #expect(await stalled.waitUntilHolding(1))
            // The lease (30 s on the worker's clock) runs out while the provider holds its answer.
            rig.clock.advance(by: 31)
            let rescued = try await rig.store.pool.withConnection {
                try SendQueue.rescue(now: rig.clock.now(), store: rig.store, on: $0)
            }
            #expect(rescued == 1)
            #expect(stalled.held == 1, "the rescue came while the call was in flight")
            stalled.open()
            _ = try await drained
            #expect(try await streamTypes(stream, store: rig.store).prefix(3) == ["SendRequested", "SendAttempted", "SendOutcomeUnknown"])
            _ = try await rig.worker.drain()
            let types = try await streamTypes(stream, store: rig.store)
            #expect(types.filter { ["SendSucceeded", "SendFailed"].contains($0) }.count == 1)
            #expect(types.filter { $0 == "SendAttempted" }.count == rig.fakes.apple.requestCount)
            #expect(try await queueCount(rig.store) == 0)
        }
    }

    // Issue 6 (the worker's slots): a slot is a provider call in flight. It is given back when the
    // answer is in, before the outcome's group commit, yet the provider never sees more calls at
    // once than the worker has slots, and every send still gets its one outcome.
    @Test func theWorkerNeverHasMoreCallsInFlightThanSlots() async throws {
        try await Self.withRig(slots: 3) { rig in
            for (device, cause) in try await firstOpens(rig, count: 24, prefix: "s") {
                try await enqueue(.appleAdServices, .tokenLookup, cause: cause, device: device, key: device, now: testEpoch, store: rig.store)
            }
            // The first answers wait until every slot has a call out: the slots are used side by side.
            let full = FakeGate()
            rig.fakes.apple.hold(full)
            let running = Task { try await rig.worker.run() }
            #expect(await full.waitUntilHolding(3))
            #expect(rig.fakes.requestsInFlight == 3)
            rig.fakes.apple.hold(nil)
            full.open()
            try await waitUntil { try await queueCount(rig.store) == 0 }
            running.cancel()
            try await running.value
            #expect(try await queueCount(rig.store) == 0)
            #expect(rig.fakes.apple.requestCount == 24)
            #expect(full.everHeld == 3)
            #expect(rig.fakes.mostRequestsInFlight == 3)
            let succeeded = try await rig.store.pool.query(
                "SELECT count(*) FROM events WHERE event_type = 'SendSucceeded'").single().decode(Int.self, at: 0)
            #expect(succeeded == 24)
        }
    }

    // Issue 6: terminate the worker's database backends while it runs: the pool replaces them, the
    // listener re-listens, and the worker finishes the queue.
    @Test func workerRecoversFromTerminatedBackends() async throws {
        try await Self.withRig(slots: 2) { rig in
            let opens = try await firstOpens(rig, count: 20, prefix: "t")
            rig.fakes.apple.setDelay(.milliseconds(30))
            let running = Task { try await rig.worker.run() }
            for (device, cause) in opens {
                try await enqueue(.appleAdServices, .tokenLookup, cause: cause, device: device, key: device, now: testEpoch, store: rig.store)
            }
            #expect(await rig.fakes.apple.waitForRequests(3, timeout: .seconds(10)))
            let killer = try PostgresConnection(conninfo: rig.store.pool.configuration.conninfo, logger: TestDatabase.quietLogger)
            let killed = try killer.query("""
                SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid()
                """).single().decode(Int.self, at: 0)
            #expect(killed > 0)
            // A try whose database session died mid-way keeps its claim until the lease runs out
            // (the worker itself is alive): move the worker's clock past the lease.
            rig.clock.advance(by: 31)
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline {
                let left = try? await queueCount(rig.store)
                if left == 0 { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            running.cancel()
            try await running.value
            #expect(try await queueCount(rig.store) == 0)
            let terminals = try await rig.store.pool.query(
                "SELECT count(*) FROM events WHERE event_type IN ('SendSucceeded', 'SendFailed')").single().decode(Int.self, at: 0)
            #expect(terminals == 20)
            let succeeded = try await rig.store.pool.query(
                "SELECT count(*) FROM events WHERE event_type = 'SendSucceeded'").single().decode(Int.self, at: 0)
            let failures = try await rig.store.pool.query(
                "SELECT data::text FROM events WHERE event_type IN ('SendFailed', 'ResponseReceived')").map { try $0.decode(String.self, at: 0) }
            #expect(succeeded == 20, "\(failures.prefix(4))")
        }
    }
}
