import AttributionLedger
import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import Testing

/// Each typed `record…` method of the facade, called as a backend calls it: the fact is stored on
/// the device's stream as its catalog type, reads back as the same typed value, and a retry with
/// the same id answers as the first time.
@Suite(.database) struct TypedRecordingTests {
    /// Checks what `record` stored for `fact` on `device`, then retries it and expects the stored answer.
    static func expectRecorded<Fact: LedgerEvent>(
        _ fact: Fact, on device: DeviceRef, by ledger: AttributionLedger,
        _ record: (UUID) async throws -> Recorded
    ) async throws {
        let id = UUID()
        let recorded = try await record(id)
        #expect(recorded.eventID == id && recorded.position > 0 && !recorded.wasDuplicate)
        let stored = try #require(try await ledger.store.event(id: id))
        #expect(stored.streamID == device.streamID.rawValue)
        #expect(stored.type == Fact.eventType && stored.schemaVersion == Fact.schemaVersion)
        #expect(stored.position == recorded.position)
        let decoded = try EventCatalog.standard.decode(type: Fact.eventType, schemaVersion: Fact.schemaVersion, data: stored.data)
        #expect(AnyHashable(decoded) == AnyHashable(fact))
        let retry = try await record(id)
        #expect(retry.wasDuplicate && retry.position == recorded.position && retry.sendIDs.isEmpty)
    }

    @Test("a ledger made from a connection string records and reads; close ends its sessions")
    func ledgerFromAConnectionString() async throws {
        try await TestDatabase.with { database throws in
            let ledger = AttributionLedger(conninfo: database.conninfo, maxConnections: 2, clock: ManualClock(testEpoch),
                                           logger: TestDatabase.quietLogger)
            defer { ledger.close() }
            #expect(try await ledger.isReady())
            let device = try DeviceRef(app: testApp, device: "from-conninfo")
            let registration = SKANRegistered()
            try await Self.expectRecorded(registration, on: device, by: ledger) { id in
                try await ledger.registerSKAN(registration, for: device, id: id, occurredAt: testEpoch)
            }
            #expect(try await ledger.skanValues(of: device).registered)
        }
    }

    @Test func recordFirstOpen() async throws {
        try await withLedger { ledger, _ in
            let device = try DeviceRef(app: testApp, device: "typed-first-open")
            let open = try firstOpen()
            try await Self.expectRecorded(open, on: device, by: ledger) { id in
                try await ledger.recordFirstOpen(open, for: device, id: id, occurredAt: testEpoch)
            }
        }
    }

    @Test func recordSession() async throws {
        try await withLedger { ledger, _ in
            let device = try DeviceRef(app: testApp, device: "typed-session")
            let session = SessionStarted(device: iosDevice(), deepLink: DeepLink(url: "https://example.com/open", gclid: "g-1"))
            try await Self.expectRecorded(session, on: device, by: ledger) { id in
                try await ledger.recordSession(session, for: device, id: id, occurredAt: testEpoch)
            }
        }
    }

    @Test func recordInAppEvent() async throws {
        try await withLedger { ledger, _ in
            let device = try DeviceRef(app: testApp, device: "typed-in-app")
            let event = InAppEventRecorded(device: iosDevice(), name: "tutorial_complete",
                                           customData: ["level": .number(3)])
            try await Self.expectRecorded(event, on: device, by: ledger) { id in
                try await ledger.recordInAppEvent(event, for: device, id: id, occurredAt: testEpoch)
            }
        }
    }

    @Test func recordRevenue() async throws {
        try await withLedger { ledger, _ in
            let device = try DeviceRef(app: testApp, device: "typed-revenue")
            let revenue = RevenueRecorded(device: iosDevice(), revenue: try Money(amount: "4.99", currency: CurrencyCode("EUR")),
                                          kind: .iap, transactionID: "tx-typed-1")
            try await Self.expectRecorded(revenue, on: device, by: ledger) { id in
                try await ledger.recordRevenue(revenue, for: device, id: id, occurredAt: testEpoch)
            }
        }
    }

    @Test func recordAdServicesToken() async throws {
        try await withLedger { ledger, _ in
            let device = try DeviceRef(app: testApp, device: "typed-adservices")
            let token = LedgerDomain.AdServicesToken(token: String(repeating: "A", count: 120), issuedAt: testEpoch)
            try await Self.expectRecorded(AdServicesTokenReceived(token: token), on: device, by: ledger) { id in
                try await ledger.recordAdServicesToken(token, for: device, id: id, occurredAt: testEpoch)
            }
        }
    }

    @Test func recordDeepLinkOpen() async throws {
        try await withLedger { ledger, _ in
            let device = try DeviceRef(app: testApp, device: "typed-deep-link")
            let link = DeepLink(url: "https://example.com/promo", gclid: "gclid-typed")
            try await Self.expectRecorded(DeepLinkOpened(link: link), on: device, by: ledger) { id in
                try await ledger.recordDeepLinkOpen(link, for: device, id: id, occurredAt: testEpoch)
            }
        }
    }

    @Test func recordIAdAttributionDetails() async throws {
        try await withLedger { ledger, _ in
            let device = try DeviceRef(app: testApp, device: "typed-iad")
            let details = IAdAttributionDetailsReceived(errorCode: 1)
            try await Self.expectRecorded(details, on: device, by: ledger) { id in
                try await ledger.recordIAdAttributionDetails(details, for: device, id: id, occurredAt: testEpoch)
            }
        }
    }

    @Test func registerSKAN() async throws {
        try await withLedger { ledger, _ in
            let device = try DeviceRef(app: testApp, device: "typed-skan-register")
            let registration = SKANRegistered(skanVersion: "4.0")
            try await Self.expectRecorded(registration, on: device, by: ledger) { id in
                try await ledger.registerSKAN(registration, for: device, id: id, occurredAt: testEpoch)
            }
        }
    }

    @Test func updateSKANConversionValue() async throws {
        try await withLedger { ledger, _ in
            let device = try DeviceRef(app: testApp, device: "typed-skan-update")
            let update = SKANConversionValueUpdated(fineValue: 12, coarseValue: .medium)
            try await Self.expectRecorded(update, on: device, by: ledger) { id in
                try await ledger.updateSKANConversionValue(update, for: device, id: id, occurredAt: testEpoch)
            }
        }
    }

    @Test func recordTrackingConsentChange() async throws {
        try await withLedger { ledger, _ in
            let device = try DeviceRef(app: testApp, device: "typed-consent")
            let change = TrackingConsentChanged(attStatus: .denied, limitAdTracking: true)
            try await Self.expectRecorded(change, on: device, by: ledger) { id in
                try await ledger.recordTrackingConsentChange(change, for: device, id: id, occurredAt: testEpoch)
            }
        }
    }
}
