import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import LedgerStore
import LedgerTestKit
import Testing

/// Singular's conversion-value calls need the device's SKAN registration (Singular SKAdNetwork 4
/// implementation guide): a send whose device has not registered yet waits for it instead of
/// failing at once.
extension WorkerTests {
    /// A first open without its SKAN registration, and its Singular session send's stream. The
    /// worker's clock is set to the real time: the fake Singular judges SKAN windows by it.
    func unregisteredSessionSend(_ rig: Rig) async throws -> String {
        rig.clock.set(Date())
        let open = try await install(rig)
        let send = try await enqueue(.singular, .conversionValue, cause: open, device: Self.device, key: "s:session",
                                     now: rig.clock.now(), store: rig.store)
        return StreamID.send(id: send.sendID).rawValue
    }

    // Singular SKAdNetwork 4 implementation guide: "Register (first launch only)" comes before the
    // first session's call. The registration is a fact of its own and may reach the ledger after
    // the first open's send is claimed: the send waits for it, without a call, and goes out once it
    // is recorded.
    @Test func aSingularSendWaitsForItsDevicesSKANRegistration() async throws {
        try await Self.withRig { rig in
            let stream = try await unregisteredSessionSend(rig)
            #expect(try await rig.worker.drain() == 1)
            #expect(rig.fakes.singular.requestCount == 0)
            #expect(try await streamTypes(stream, store: rig.store) == ["SendRequested", "RetryScheduled"])
            let waiting = try await retries(of: stream, rig)
            #expect(waiting.map(\.rule) == ["singular_skan_not_registered_yet"] && waiting.map(\.called) == [false])

            try await record(SKANRegistered(), to: Self.device, at: rig.clock.now(), store: rig.store)
            #expect(try await rig.worker.drain() == 0)  // due in 5 s
            rig.clock.advance(by: 5)
            #expect(try await rig.worker.drain() == 1)
            #expect(rig.fakes.singular.requestCount == 1)
            #expect(rig.fakes.singular.requests.first?.queryValue("n") == "__SESSION__")
            #expect(try await streamTypes(stream, store: rig.store) == [
                "SendRequested", "RetryScheduled", "SendAttempted", "ResponseReceived", "SendSucceeded",
            ])
        }
    }

    // Singular SKAdNetwork 4 implementation guide: a device that never registers gets no conversion
    // value. Once the waits (`ProviderSendRules.singularRegistrationWaits`, 7: about 10 minutes)
    // are over, the send fails `not_registered` as before, still without a call.
    @Test func aSingularSendWhoseDeviceNeverRegistersFailsAfterTheWait() async throws {
        try await Self.withRig { rig in
            let stream = try await unregisteredSessionSend(rig)
            let firstTry = rig.clock.now()
            var retried = 0
            while try await queueCount(rig.store) > 0, retried < 20 {
                #expect(try await rig.worker.drain() == 1)
                let due = try await retries(of: stream, rig).last?.notBefore ?? rig.clock.now()
                rig.clock.set(max(due, rig.clock.now()))
                retried += 1
            }
            #expect(rig.fakes.singular.requestCount == 0)
            let events = try await rig.store.readStream(stream)
            let failed = try LedgerJSON.makeDecoder().decode(SendFailed.self, from: try #require(events.last).data)
            #expect(failed.rule == "not_registered" && failed.attempt == nil)
            // 5, 10, 20 … s apart.
            let waits = try await retries(of: stream, rig).map { $0.notBefore.timeIntervalSince(firstTry) }
            #expect(waits.map { $0.rounded() } == [5, 15, 35, 75, 155, 315, 635])  // (stored to the microsecond)
        }
    }
}

/// What a Singular call carries when the worker is behind: the SKAN state and the device as of the
/// fact that caused the call, not as of the try.
extension WorkerTests {
    /// A purchase of `amount` USD reported by the app's backend: no IP, no user agent, and — unless
    /// given — none of the device's identifiers (`idfv` nil, `idfa` nil).
    static func backendPurchase(_ amount: String, idfv: String? = nil, idfa: String? = nil, transaction: String) throws
        -> RevenueRecorded
    {
        let device = DeviceContext(platform: .ios, idfa: idfa, idfv: idfv, limitAdTracking: false, ip: nil, userAgent: nil,
                                   osVersion: "17.1", appVersion: "1.2.3", bundleID: "com.example.app")
        return RevenueRecorded(device: device, revenue: try Money(amount: amount, currency: CurrencyCode("USD")), kind: .iap,
                               transactionID: transaction)
    }

    // Singular SKAdNetwork 4 implementation guide: the snippet adds a purchase's revenue to the
    // totals when the purchase happens ("revenue tracking must precede conversion value updates"),
    // and each call carries the totals as they are then. A session recorded before a purchase is
    // sent, when the worker catches up, with the totals as of the session: without the purchase.
    @Test func aSingularSessionDrainedAfterALaterPurchaseCarriesNoneOfItsRevenue() async throws {
        try await Self.withRig { rig in
            let clock = rig.clock
            rig.fakes.singular.setClock { clock.now() }
            try await record(SKANRegistered(), to: Self.device, at: testEpoch, store: rig.store)
            let session = try await record(SessionStarted(device: iosDevice()), to: Self.device,
                                           at: testEpoch.addingTimeInterval(60), store: rig.store)
            let purchase = try await record(
                Self.backendPurchase("4.99", idfv: iosDevice().idfv, transaction: "tx-later"), to: Self.device,
                at: testEpoch.addingTimeInterval(120), store: rig.store)
            try await enqueue(.singular, .conversionValue, cause: session, device: Self.device, key: "s:session", now: testEpoch,
                              store: rig.store)
            try await enqueue(.singular, .conversionValue, cause: purchase, device: Self.device, key: "s:purchase",
                              now: testEpoch, store: rig.store)
            rig.clock.advance(by: 600)  // the worker is ten minutes behind
            #expect(try await rig.worker.drain() == 2)  // the lane: the purchase's call after the session's answer
            let calls = rig.fakes.singular.requests
            try #require(calls.count == 2)
            #expect(calls[0].queryValue("n") == "__SESSION__")
            #expect(calls[0].queryValue("skan_total_revenue_by_currency") == nil,
                    "the session's call carries the later purchase: \(calls[0].queryValue("skan_total_revenue_by_currency") ?? "")")
            #expect(calls[0].queryValue("p0_total_iap_revenue") == nil)
            #expect(calls[1].queryValue("n") == ProviderSendRules.singularIAPEventName)
            #expect(calls[1].queryValue("skan_total_revenue_by_currency") == #"{"USD":4.99}"#)
            // The purchase's call carries what the session's answer set (the fake's fine value 1).
            #expect(calls[1].queryValue("skan_current_conversion_value") == "1")
        }
    }

    // Singular SKAdNetwork 4 implementation guide: `idfv` is a required parameter of the
    // conversion value API. A purchase reported by the app's backend without the device's
    // identifiers is sent with those the device's first open recorded (as its IP and user agent
    // already were); Google App Conversion Tracking API's `rdid` the same way.
    @Test func aBackendPurchaseWithoutTheIDFVIsSentWithTheFirstOpensIdentifiers() async throws {
        try await Self.withRig { rig in
            let clock = rig.clock
            rig.fakes.singular.setClock { clock.now() }
            let open = iosDevice()
            _ = try await install(rig, token: nil)
            try await record(SKANRegistered(), to: Self.device, at: testEpoch, store: rig.store)
            let purchase = try await record(Self.backendPurchase("4.99", transaction: "tx-backend"), to: Self.device,
                                            at: testEpoch.addingTimeInterval(60), store: rig.store)
            let singular = try await enqueue(.singular, .conversionValue, cause: purchase, device: Self.device, key: "s:backend",
                                             now: testEpoch, store: rig.store)
            let google = try await enqueue(.google, .conversion, cause: purchase, device: Self.device, key: "g:backend",
                                           now: testEpoch, store: rig.store)
            #expect(try await rig.worker.drain() == 2)
            for send in [singular, google] {
                let events = try await rig.store.readStream(StreamID.send(id: send.sendID).rawValue)
                #expect(events.last?.type == "SendSucceeded", "\(String(decoding: events.last?.data ?? Data(), as: UTF8.self))")
            }
            let call = try #require(rig.fakes.singular.requests.first)
            #expect(call.queryValue("idfv") == open.idfv)
            #expect(call.queryValue("idfa") == open.idfa)
            #expect(rig.fakes.google.requests.first?.queryValue("rdid") == open.idfa)
        }
    }

    // Google App Conversion Tracking API: `lat` and `rdid`. An advertising id is used only while the
    // device allows tracking: a purchase reported with tracking limited is not completed with the
    // IDFA an earlier launch had. The IDFV, which does not depend on tracking consent, still is.
    @Test func aPurchaseWithTrackingLimitedGetsNoAdvertisingIDFromHistory() async throws {
        try await Self.withRig { rig in
            let clock = rig.clock
            rig.fakes.singular.setClock { clock.now() }
            let open = iosDevice()
            _ = try await install(rig, token: nil)
            try await record(SKANRegistered(), to: Self.device, at: testEpoch, store: rig.store)
            var limited = try Self.backendPurchase("1.00", transaction: "tx-limited")
            limited.device.limitAdTracking = true
            limited.device.attStatus = .denied
            let purchase = try await record(limited, to: Self.device, at: testEpoch.addingTimeInterval(60), store: rig.store)
            try await enqueue(.singular, .conversionValue, cause: purchase, device: Self.device, key: "s:limited", now: testEpoch,
                              store: rig.store)
            #expect(try await rig.worker.drain() == 1)
            let call = try #require(rig.fakes.singular.requests.first)
            #expect(call.queryValue("idfv") == open.idfv)
            #expect(call.queryValue("idfa") == nil)
        }
    }
}
