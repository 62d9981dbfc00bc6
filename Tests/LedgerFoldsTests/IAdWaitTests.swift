import Foundation
import LedgerDomain
import LedgerFolds
import Testing

/// Apple Search Ads Attribution API (iAd): "If you receive ADClientErrorUnknown, wait a few seconds
/// and try again"; ADClientErrorLimitAdTracking means no data will ever come.
@Suite("iAd answers and the install's wait")
struct IAdWaitTests {
    /// The install's trigger after a first open followed by `answers`, a second apart.
    func install(then answers: [IAdAttributionDetailsReceived]) throws -> AttributionProcessReducer.Trigger {
        var history = History()
        try history.add(FirstOpen(appID: try AppID("app1"), device: iosDevice()), at: History.epoch)
        for (index, answer) in answers.enumerated() { try history.add(answer, at: History.epoch.addingTimeInterval(Double(index + 1))) }
        return try #require(try history.replay(AttributionProcessReducer()).triggers.first)
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
