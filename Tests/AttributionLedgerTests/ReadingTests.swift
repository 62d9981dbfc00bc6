import AttributionLedger
import Foundation
import LedgerDomain
import LedgerFolds
import LedgerPostgres
import LedgerProjections
import LedgerStore
import LedgerTestKit
import Testing

/// The facade's reads: history, SKAN values, attribution and state, now and as of earlier.
@Suite(.database) struct ReadingTests {
    @Test func historyAsOfAPositionOrATimeShowsOnlyWhatWasHeldThen() async throws {
        try await withLedger { ledger, _ in
            let device = try DeviceRef(app: testApp, device: "install-h")
            let open = try await ledger.recordFirstOpen(try firstOpen(), for: device, id: UUID(), occurredAt: testEpoch)
            let register = try await ledger.registerSKAN(for: device, id: UUID(), occurredAt: testEpoch)
            let update = try await ledger.updateSKANConversionValue(
                SKANConversionValueUpdated(fineValue: 12, coarseValue: .medium), for: device, id: UUID(),
                occurredAt: testEpoch.addingTimeInterval(3600))

            let now = try await ledger.history(of: device, types: ["FirstOpen", "SKANRegistered", "SKANConversionValueUpdated"])
            #expect(now.map(\.position) == [open.position, register.position, update.position])

            let then = try await ledger.history(of: device, asOf: .position(register.position))
            #expect(then.map(\.id).contains(open.eventID))
            #expect(then.map(\.id).contains(register.eventID))
            #expect(!then.map(\.id).contains(update.eventID))

            // As of the time the registration was recorded: the update came later.
            let registered = try #require(try await ledger.store.event(id: register.eventID))
            let byTime = try await ledger.history(of: device, asOf: .recordedAt(registered.recordedAt))
            #expect(!byTime.map(\.id).contains(update.eventID))
            #expect(byTime.map(\.id).contains(register.eventID))

            // SKAN values follow the same cut: registered then, value 12/medium now.
            let skanThen = try await ledger.skanValues(of: device, asOf: .position(register.position))
            #expect(skanThen.registered)
            #expect(skanThen.fineValue == 0)
            let skanNow = try await ledger.skanValues(of: device)
            #expect(skanNow.fineValue == 12)
            #expect(skanNow.windows[0].coarseValue == .medium)
            // The ledger clock is at the registration: SKAN 4's first window is [0, 48 h).
            #expect(skanNow.currentWindow == .p0)
            #expect(skanNow.updatesApplied == 1)
            #expect(skanNow.nextConversionValue == nil)
        }
    }

    @Test func skanRevenueIsCountedOncePerStoreTransaction() async throws {
        try await withLedger { ledger, _ in
            let device = try DeviceRef(app: testApp, device: "install-r")
            try await ledger.registerSKAN(for: device, id: UUID(), occurredAt: testEpoch)
            let revenue = RevenueRecorded(device: iosDevice(), revenue: try Money(amount: "4.99", currency: CurrencyCode("EUR")),
                                          kind: .iap, transactionID: "tx-1")
            try await ledger.recordRevenue(revenue, for: device, id: UUID(), occurredAt: testEpoch.addingTimeInterval(60))
            // Singular's snippet: "In case of retrying an event, avoid calling this method" — the
            // same store transaction under a new id is not counted twice.
            try await ledger.recordRevenue(revenue, for: device, id: UUID(), occurredAt: testEpoch.addingTimeInterval(61))
            let skan = try await ledger.skanValues(of: device)
            #expect(skan.totalIAPRevenue == ["EUR": Decimal(string: "4.99")!])
            #expect(skan.windows[0].iapRevenue == ["EUR": Decimal(string: "4.99")!])
            let state = try await ledger.deviceState(of: device)
            #expect(state.skan.revenueNotCounted["duplicate_transaction"] == 1)
            #expect(state.eventCount >= 3)
        }
    }

    @Test("after an erasure no projection keeps a digest of the store transaction id or the AdServices token")
    func erasureLeavesNoDigest() async throws {
        try await withLedger { ledger, _ in
            let device = try DeviceRef(app: testApp, device: "install-erased")
            try await ledger.registerSKAN(for: device, id: UUID(), occurredAt: testEpoch)
            let token = "dG9rZW4tb2YtYS1kZXZpY2UtdGhhdC13aWxsLWJlLWVyYXNlZA=="
            try await ledger.recordAdServicesToken(LedgerDomain.AdServicesToken(token: token, issuedAt: testEpoch), for: device,
                                                   id: UUID(), occurredAt: testEpoch)
            let revenue = RevenueRecorded(device: iosDevice(), revenue: try Money(amount: "4.99", currency: CurrencyCode("EUR")),
                                          kind: .iap, transactionID: "2000000123456789")
            try await ledger.recordRevenue(revenue, for: device, id: UUID(), occurredAt: testEpoch.addingTimeInterval(60))
            let before = try await ledger.deviceState(of: device)
            #expect(before.skan.countedTransactions.count == 1)
            #expect(before.adServices.tokens.count == 1)
            let digests = Set(before.skan.countedTransactions.keys).union(before.adServices.tokens.keys)

            _ = try await ledger.erase(device, requestedBy: "dsar-portal", requestedAt: testEpoch.addingTimeInterval(120))
            let after = try await ledger.deviceState(of: device)
            #expect(after.skan.countedTransactions.isEmpty)
            #expect(after.adServices.tokens.count == 1, "the token's state is kept")
            let encoded = String(decoding: try JSONEncoder().encode([after.skan.countedTransactions.keys.sorted(),
                                                                      after.adServices.tokens.keys.sorted(),
                                                                      Array(after.adServices.tokenOfEvent.values)]), as: UTF8.self)
            for digest in digests { #expect(!encoded.contains(digest.prefix(16)), "a digest survived the erasure") }
            #expect(try await ledger.skanValues(of: device).totalIAPRevenue == ["EUR": Decimal(string: "4.99")!],
                    "what was counted stays counted")
        }
    }

    @Test func attributionReadsTheNewestDecision() async throws {
        try await withLedger { ledger, _ in
            let device = try DeviceRef(app: testApp, device: "install-a")
            #expect(try await ledger.attribution(of: device).latest == nil)
            let open = try await ledger.recordFirstOpen(try firstOpen(), for: device, id: UUID(), occurredAt: testEpoch)
            func decision(supersedes: UUID?) -> AttributionDecided {
                AttributionDecided(
                    decisionID: UUID(), deviceStreamID: device.streamID, triggerEventID: open.eventID, triggerKind: .install,
                    ruleVersion: "last-click-v1", winner: nil, candidates: [], organic: true, inputPositions: [open.position],
                    supersedes: supersedes)
            }
            let first = decision(supersedes: nil)
            let second = decision(supersedes: first.decisionID)
            for made in [first, second] {
                try await ledger.store.append(
                    [NewEvent(type: AttributionDecided.eventType, data: try EventCatalog.standard.encode(made), occurredAt: testEpoch)],
                    to: device.decisionStreamID.rawValue)
            }
            let attribution = try await ledger.attribution(of: device)
            #expect(attribution.latest?.decisionID == second.decisionID)
            #expect(attribution.decisionCount == 2)
            let earlier = try await ledger.attribution(of: device, asOf: .position(try #require(attribution.position) - 1))
            #expect(earlier.latest?.decisionID == first.decisionID)
            #expect(earlier.decisionCount == 1)
        }
    }
}
