import Foundation
import LedgerAttribution
import LedgerDomain
import LedgerProjections
import LedgerStore
import Testing

/// Apple Search Ads Attribution API (iAd): "If you receive ADClientErrorUnknown, wait a few seconds
/// and try again"; ADClientErrorLimitAdTracking means no data will ever come.
@Suite("iAd answers and the install's wait")
struct IAdWaitTests {
    static let device = "device-app1/dev1"
    static let start = Date(timeIntervalSince1970: 1_763_000_000)

    /// The install's trigger after a first open followed by `answers`.
    func install(then answers: [IAdAttributionDetailsReceived]) throws -> AttributionProcessReducer.Trigger {
        var events: [RecordedEvent] = []
        func add<E: LedgerEvent>(_ event: E) throws {
            let at = Self.start.addingTimeInterval(Double(events.count))
            events.append(RecordedEvent(
                position: Int64(events.count + 1), transactionID: UInt64(1000 + events.count), streamID: Self.device,
                streamVersion: Int64(events.count + 1), id: UUID(), type: E.eventType, schemaVersion: E.schemaVersion,
                data: try EventCatalog.standard.encode(event), metadata: Data("{}".utf8), occurredAt: at, recordedAt: at,
                hash: Data()))
        }
        try add(FirstOpen(appID: try AppID("app1"), device: DecisionEndToEndTests.iosDevice()))
        for answer in answers { try add(answer) }
        let state = try DeviceStateProjection(AttributionProcessReducer()).replay(events, device: Self.device)
        return try #require(state.triggers.first)
    }

    @Test func anUnknownErrorKeepsTheInstallWaitingForTheNextAnswer() throws {
        let unknown = IAdAttributionDetailsReceived(errorCode: IAdAttributionDetailsReceived.errorUnknown)
        #expect(try install(then: [unknown]).iAdReceived == false)
        let answer = IAdAttributionDetailsReceived(details: .object(["Version3.1": .object(["iad-attribution": .string("false")])]))
        #expect(try install(then: [unknown, answer]).iAdReceived == true)
        let limited = IAdAttributionDetailsReceived(errorCode: IAdAttributionDetailsReceived.errorLimitAdTracking)
        #expect(try install(then: [limited]).iAdReceived == true, "no data will ever come")
    }
}
