import AttributionLedger
import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import Testing

/// The facade's write path on a real PostgreSQL: validated, idempotent by the caller's id, and
/// nothing written when refused.
@Suite(.database) struct RecordingTests {
    @Test func recordsAFirstOpenAndReturnsItsPosition() async throws {
        try await withLedger { ledger, pool in
            let device = try DeviceRef(app: testApp, device: "install-1")
            let id = UUID()
            let recorded = try await ledger.recordFirstOpen(try firstOpen(), for: device, id: id, occurredAt: testEpoch)
            #expect(recorded.eventID == id)
            #expect(recorded.position > 0)
            #expect(!recorded.wasDuplicate)
            let stored = try #require(try await ledger.store.event(id: id))
            #expect(stored.streamID == "device-com.example.game/install-1")
            #expect(stored.position == recorded.position)
            #expect(stored.type == "FirstOpen")
            // The metadata names the app and the default actor.
            let metadata = try EventCatalog.standard.validateMetadata(stored.metadata)
            #expect(metadata.appID?.rawValue == testApp)
            #expect(metadata.actor == "swift-api")
            _ = pool
        }
    }

    @Test func sameIDSameContentIsADuplicateThatWritesNothing() async throws {
        try await withLedger { ledger, pool in
            let device = try DeviceRef(app: testApp, device: "install-2")
            let id = UUID()
            let first = try await ledger.registerSKAN(for: device, id: id, occurredAt: testEpoch)
            let again = try await ledger.registerSKAN(for: device, id: id, occurredAt: testEpoch)
            #expect(again.wasDuplicate)
            #expect(again.position == first.position)
            #expect(try await rows(withID: id, pool) == 1)
        }
    }

    @Test func sameIDOtherContentIsAConflictThatWritesNothing() async throws {
        try await withLedger { ledger, pool in
            let device = try DeviceRef(app: testApp, device: "install-3")
            let id = UUID()
            try await ledger.updateSKANConversionValue(SKANConversionValueUpdated(fineValue: 5), for: device, id: id,
                                                       occurredAt: testEpoch)
            let before = try await eventCount(pool)
            let error = try await #require(throws: AttributionLedgerError.self) {
                try await ledger.updateSKANConversionValue(SKANConversionValueUpdated(fineValue: 6), for: device, id: id,
                                                           occurredAt: testEpoch)
            }
            #expect(error.code == .idConflict)
            #expect(error.eventID == id)
            #expect(try await eventCount(pool) == before)
        }
    }

    // Issue 37: a lone fact that causes no send, to a device already checked to be the app's,
    // is one append outside a transaction. The append itself must then answer a retry as a
    // duplicate, refuse other content under the same id, and let concurrent facts of one device
    // take consecutive versions.
    @Test func aLoneFactToAKnownDeviceKeepsItsRulesOutsideATransaction() async throws {
        try await withLedger { ledger, pool in
            let device = try DeviceRef(app: testApp, device: "install-lone")
            // The first fact starts the stream; the second finds it the app's (tenancy checked).
            try await ledger.registerSKAN(for: device, id: UUID(), occurredAt: testEpoch)
            try await ledger.updateSKANConversionValue(SKANConversionValueUpdated(fineValue: 1), for: device, id: UUID(),
                                                       occurredAt: testEpoch)
            let id = UUID()
            let first = try await ledger.updateSKANConversionValue(SKANConversionValueUpdated(fineValue: 5), for: device, id: id,
                                                                   occurredAt: testEpoch)
            let again = try await ledger.updateSKANConversionValue(SKANConversionValueUpdated(fineValue: 5), for: device, id: id,
                                                                   occurredAt: testEpoch)
            #expect(!first.wasDuplicate)
            #expect(again.wasDuplicate)
            #expect(again.position == first.position)
            let before = try await eventCount(pool)
            let conflict = try await #require(throws: AttributionLedgerError.self) {
                try await ledger.updateSKANConversionValue(SKANConversionValueUpdated(fineValue: 6), for: device, id: id,
                                                           occurredAt: testEpoch)
            }
            #expect(conflict.code == .idConflict)
            #expect(conflict.eventID == id)
            #expect(try await eventCount(pool) == before)
            let concurrent = try await withThrowingTaskGroup(of: Recorded.self) { group in
                for value in 0..<8 {
                    group.addTask {
                        try await ledger.updateSKANConversionValue(SKANConversionValueUpdated(fineValue: value), for: device,
                                                                   id: UUID(), occurredAt: testEpoch)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(concurrent.allSatisfy { !$0.wasDuplicate })
            let versions = try await pool.query("""
                SELECT stream_version FROM events WHERE stream_id = \(device.streamID.rawValue) ORDER BY stream_version
                """).map { try $0.decode(Int64.self, at: 0) }
            #expect(versions == Array(1...11))
        }
    }

    @Test func invalidFactNamesTheFieldAndRuleAndWritesNothing() async throws {
        try await withLedger { ledger, pool in
            let device = try DeviceRef(app: testApp, device: "install-4")
            let error = try await #require(throws: AttributionLedgerError.self) {
                try await ledger.recordFirstOpen(try firstOpen(idfa: "not-a-uuid"), for: device, id: UUID(), occurredAt: testEpoch)
            }
            #expect(error.code == .invalid)
            #expect(error.eventType == "FirstOpen")
            #expect(error.field == "device.idfa")
            #expect(error.rule == "uuid")
            // The message never quotes the value (an IDFA is personal).
            #expect(!error.message.contains("not-a-uuid"))
            // SKAN 4: a fine value lies in 0–63 (Apple's updatePostbackConversionValue).
            let skan = try await #require(throws: AttributionLedgerError.self) {
                try await ledger.updateSKANConversionValue(SKANConversionValueUpdated(fineValue: 64), for: device, id: UUID(),
                                                           occurredAt: testEpoch)
            }
            #expect(skan.field == "fine_value")
            #expect(skan.rule == "range_0_63")
            #expect(try await eventCount(pool) == 0)
        }
    }

    @Test func firstOpenMustBeForTheDevicesApp() async throws {
        try await withLedger { ledger, pool in
            let device = try DeviceRef(app: "com.example.other", device: "install-5")
            let error = try await #require(throws: AttributionLedgerError.self) {
                try await ledger.recordFirstOpen(try firstOpen(), for: device, id: UUID(), occurredAt: testEpoch)
            }
            #expect(error.field == "app_id")
            #expect(error.rule == "matches_device_app")
            #expect(try await eventCount(pool) == 0)
        }
    }

    @Test func onlyDeviceFactsAreRecorded() async throws {
        try await withLedger { ledger, pool in
            let device = try DeviceRef(app: testApp, device: "install-6")
            let decision = AttributionDecided(
                decisionID: UUID(), deviceStreamID: device.streamID, triggerEventID: UUID(), triggerKind: .install,
                ruleVersion: "last-click-v1", winner: nil, candidates: [], organic: true, inputPositions: [1])
            let error = try await #require(throws: AttributionLedgerError.self) {
                try await ledger.record(decision, for: device, id: UUID(), occurredAt: testEpoch)
            }
            #expect(error.field == "type")
            #expect(error.rule == "device_fact")
            #expect(try await eventCount(pool) == 0)
        }
    }

    @Test func deviceIDsThatCannotNameAStreamAreRefused() throws {
        let error = try #require(throws: AttributionLedgerError.self) { try DeviceRef(app: testApp, device: "has space") }
        #expect(error.field == "device_id")
        #expect(error.rule == "stream_safe_characters")
        let app = try #require(throws: AttributionLedgerError.self) { try DeviceRef(app: "", device: "d") }
        #expect(app.field == "app_id")
        #expect(app.rule == "non_empty")
    }

    @Test func jsonFactsAreCheckedByTheCatalog() async throws {
        try await withLedger { ledger, pool in
            let device = try DeviceRef(app: testApp, device: "install-7")
            let unknownField = try #require(throws: AttributionLedgerError.self) {
                try ledger.prepare(type: "SKANRegistered", data: Data(#"{"skan_version":"4.0","surprise":1}"#.utf8), for: device,
                                   id: UUID(), occurredAt: testEpoch)
            }
            #expect(unknownField.field == "surprise")
            #expect(unknownField.rule == "unknown_field")
            let unknownType = try #require(throws: AttributionLedgerError.self) {
                try ledger.prepare(type: "NoSuchEvent", data: Data("{}".utf8), for: device, id: UUID(), occurredAt: testEpoch)
            }
            #expect(unknownType.field == "type")
            #expect(unknownType.rule == "unknown_type")
            let version = try #require(throws: AttributionLedgerError.self) {
                try ledger.prepare(type: "SKANRegistered", schemaVersion: 9, data: Data("{}".utf8), for: device, id: UUID(),
                                   occurredAt: testEpoch)
            }
            #expect(version.field == "schema_version")
            let prepared = try ledger.prepare(type: "SKANRegistered", data: Data(#"{"skan_version":"4.0"}"#.utf8), for: device,
                                              id: UUID(), occurredAt: testEpoch, options: RecordingOptions(actor: "checkout-backend"))
            let recorded = try await ledger.record(prepared)
            let stored = try #require(try await ledger.store.event(id: recorded.eventID))
            #expect(try EventCatalog.standard.validateMetadata(stored.metadata).actor == "checkout-backend")
            #expect(try await eventCount(pool) >= 1)
        }
    }

    @Test func aBatchWithARepeatedOrConflictingIDWritesNothing() async throws {
        try await withLedger { ledger, pool in
            let device = try DeviceRef(app: testApp, device: "install-8")
            let stored = UUID()
            try await ledger.registerSKAN(for: device, id: stored, occurredAt: testEpoch)
            let before = try await eventCount(pool)
            let fresh = try ledger.prepare(SKANConversionValueUpdated(fineValue: 1), for: device, id: UUID(), occurredAt: testEpoch)
            let repeated = try await #require(throws: AttributionLedgerError.self) {
                try await ledger.recordBatch([fresh, fresh])
            }
            #expect(repeated.index == 1)
            #expect(repeated.rule == "unique_in_batch")
            // The stored id reused with other content (another time): refused before the first fact is written.
            let clash = try ledger.prepare(SKANRegistered(), for: device, id: stored, occurredAt: testEpoch.addingTimeInterval(1))
            let conflict = try await #require(throws: AttributionLedgerError.self) {
                try await ledger.recordBatch([fresh, clash])
            }
            #expect(conflict.code == .idConflict)
            #expect(conflict.index == 1)
            #expect(try await eventCount(pool) == before)
            // The same batch with the stored fact as it was: the stored one is a duplicate, the new one is written.
            let same = try ledger.prepare(SKANRegistered(), for: device, id: stored, occurredAt: testEpoch)
            let results = try await ledger.recordBatch([same, fresh])
            try #require(results.map(\.wasDuplicate) == [true, false])
            #expect(results[1].position > results[0].position)
        }
    }
    // Issue 37: a batch over several devices is stored by one statement, in one transaction:
    // each device's facts in the batch's order with consecutive versions, a device's facts side
    // by side in the log, and every fact with the sends it causes. Retried whole, every fact
    // answers as a duplicate at its first position.
    @Test func aBatchOverSeveralDevicesIsStoredByOneStatement() async throws {
        try await withLedger { ledger, _ in
            let a = try DeviceRef(app: testApp, device: "batch-a")
            let b = try DeviceRef(app: testApp, device: "batch-b")
            let c = try DeviceRef(app: testApp, device: "batch-c")
            let facts = [
                try ledger.prepare(try firstOpen(), for: a, id: UUID(), occurredAt: testEpoch),
                try ledger.prepare(try firstOpen(), for: b, id: UUID(), occurredAt: testEpoch),
                try ledger.prepare(SKANRegistered(), for: a, id: UUID(), occurredAt: testEpoch),
                try ledger.prepare(SKANConversionValueUpdated(fineValue: 3), for: a, id: UUID(), occurredAt: testEpoch),
                try ledger.prepare(SKANRegistered(), for: c, id: UUID(), occurredAt: testEpoch),
            ]
            let recorded = try await ledger.recordBatch(facts)
            #expect(recorded.allSatisfy { !$0.wasDuplicate })
            #expect(recorded.map(\.sendIDs.count) == [3, 3, 0, 0, 0])
            var stored: [RecordedEvent] = []
            for fact in facts { stored.append(try #require(try await ledger.store.event(id: fact.id))) }
            #expect(stored.map(\.position) == recorded.map(\.position))
            #expect(Set(stored.map(\.transactionID)).count == 1, "one transaction")
            #expect(stored.map(\.streamVersion) == [1, 1, 2, 3, 1])
            // One statement, a part per device in the order the batch first names them: a's three
            // facts lie before b's, though b's came second (fact by fact, b's would lie between).
            let positions = [stored[0], stored[2], stored[3], stored[1], stored[4]].map(\.position)
            #expect(positions == positions.sorted())
            for send in recorded.flatMap(\.sendIDs) {
                let requested = try #require(try await ledger.store.readStream(StreamID.send(id: send).rawValue).first)
                #expect(requested.type == SendRequested.eventType)
                #expect(requested.transactionID == stored[0].transactionID)
            }

            let again = try await ledger.recordBatch(facts)
            #expect(again.allSatisfy { $0.wasDuplicate })
            #expect(again.map(\.position) == recorded.map(\.position))
        }
    }
}
