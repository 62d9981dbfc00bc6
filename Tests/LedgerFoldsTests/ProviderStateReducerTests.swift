import Foundation
import LedgerDomain
import LedgerFolds
import LedgerProviders
import Testing

/// AdServices tokens (Apple AdServices attribution API), Branch identity (Branch v1/open
/// server-to-server guide) and Google obligations (Google App Conversion Tracking API), checked by
/// replaying histories through their reducers.
@Suite("Provider states")
struct ProviderStateReducerTests {
    let start = History.epoch
    static let token = "ZXhhbXBsZS1hdHRyaWJ1dGlvbi10b2tlbg=="

    func install(_ history: inout History, token: String? = token) throws -> LoggedEvent {
        try history.add(FirstOpen(appID: try AppID("app1"), device: iosDevice(),
                                  adServicesToken: token.map { LedgerDomain.AdServicesToken(token: $0, issuedAt: start) }),
                        at: start)
    }

    // Apple AdServices attribution API: a token lives 24 h; 404 is "retry every 5 s, at most 3
    // attempts"; 200 settles it.
    @Test func tokenLookup404404200IsAttributed() throws {
        var history = History()
        let cause = try install(&history)
        let send = try history.requestSend(.appleAdServices, .tokenLookup, cause: cause, at: start)
        try history.attempt(send, number: 1, status: 404, body: nil, at: start.addingTimeInterval(1))
        try history.add(RetryScheduled(attempt: 1, rule: "apple_404_too_soon", notBefore: start.addingTimeInterval(6)), stream: send,
                        at: start.addingTimeInterval(1.1))
        var state = try history.replay(AdServicesTokenReducer())
        var token = try #require(state.tokens.values.first)
        #expect(token.state == .waiting && token.attempts == 1 && token.lastStatus == 404)
        #expect(token.nextRetryAt == start.addingTimeInterval(6))

        try history.attempt(send, number: 2, status: 404, body: nil, at: start.addingTimeInterval(6))
        try history.attempt(send, number: 3, status: 200,
                            body: #"{"attribution":true,"orgId":40669820,"campaignId":542370539,"conversionType":"Download","claimType":"Click","adGroupId":542317095,"countryOrRegion":"US","keywordId":87675432,"adId":542317136}"#,
                            at: start.addingTimeInterval(11))
        try history.add(SendSucceeded(attempt: 3), stream: send, at: start.addingTimeInterval(11.1))
        state = try history.replay(AdServicesTokenReducer())
        token = try #require(state.tokens.values.first)
        #expect(token.state == .attributed && token.attempts == 3 && token.attribution?.campaignId == 542370539)
        #expect(token.nextRetryAt == nil)
    }

    // The Apple AdServices attribution API's "at most 3 attempts" counts lookups: a try that made
    // no call (its lease was too short once it waited for a slot) is not one.
    @Test func aTryThatMadeNoCallIsNoLookup() throws {
        var history = History()
        let cause = try install(&history)
        let send = try history.requestSend(.appleAdServices, .tokenLookup, cause: cause, at: start)
        try history.add(SendAttempted(attempt: 1, request: RecordedRequest(method: "POST", url: "https://example.test/", headers: [])),
                        stream: send, at: start.addingTimeInterval(1))
        try history.add(RetryScheduled(attempt: 1, rule: "lease_too_short_for_call", notBefore: start.addingTimeInterval(1),
                                       called: false), stream: send, at: start.addingTimeInterval(1.1))
        try history.attempt(send, number: 2, status: 404, body: nil, at: start.addingTimeInterval(2))
        let token = try #require(try history.replay(AdServicesTokenReducer()).tokens.values.first)
        #expect(token.attempts == 1 && token.lastStatus == 404)
    }

    // Apple AdServices attribution API: 24 h TTL — at 23:59:59 a waiting token is still waiting; at
    // 24:00:00 it has expired.
    @Test func tokenExpiryEdge() throws {
        var history = History()
        _ = try install(&history)
        let token = try #require(try history.replay(AdServicesTokenReducer()).tokens.values.first)
        #expect(token.expiresAt == start.addingTimeInterval(86_400))
        #expect(token.effectiveState(at: start.addingTimeInterval(86_399)) == .waiting)
        #expect(token.effectiveState(at: start.addingTimeInterval(86_400)) == .expired)
    }

    // Apple AdServices attribution API: 400 means an invalid token, terminal; the same token sent
    // twice (cached ~5 min) is one token.
    @Test func invalidTokenAndTheSameTokenTwice() throws {
        var history = History()
        let cause = try install(&history)
        try history.add(AdServicesTokenReceived(token: LedgerDomain.AdServicesToken(token: Self.token, issuedAt: start)),
                        at: start.addingTimeInterval(60))
        let send = try history.requestSend(.appleAdServices, .tokenLookup, cause: cause, at: start)
        try history.attempt(send, number: 1, status: 400, body: nil, at: start.addingTimeInterval(1))
        try history.add(SendFailed(attempt: 1, rule: "apple_400_invalid_token"), stream: send, at: start.addingTimeInterval(1.1))
        let state = try history.replay(AdServicesTokenReducer())
        #expect(state.tokens.count == 1)
        #expect(state.tokens.values.first?.state == .invalid)
    }

    // Apple AdServices attribution API: a failure past the TTL is `expired`; the worker fails it
    // without a call.
    @Test func tokenFailedAfterTTLIsExpired() throws {
        var history = History()
        let cause = try install(&history)
        let send = try history.requestSend(.appleAdServices, .tokenLookup, cause: cause, at: start)
        try history.add(SendFailed(attempt: nil, rule: "apple_token_expired"), stream: send, at: start.addingTimeInterval(86_400))
        #expect(try history.replay(AdServicesTokenReducer()).tokens.values.first?.state == .expired)
    }

    static let branchAnswer = #"{"session_id":"123","randomized_bundle_token":"RBT-1","randomized_device_token":"RDT-1","identity":"user-9","link":"https://x.app.link/?%24identity_id=1","data":"{\"+clicked_branch_link\":true,\"+is_first_session\":true}"}"#

    // Branch v1/open server-to-server guide: the first randomized_bundle_token wins; a different
    // later one is an anomaly, never an overwrite.
    @Test func branchFirstTokenWinsAndConflictsAreRecorded() throws {
        var history = History()
        let cause = try install(&history)
        let first = try history.requestSend(.branch, .open, cause: cause, at: start)
        var state = try history.replay(BranchIdentityReducer())
        #expect(state.openSendsInFlight == [first])
        try history.attempt(first, number: 1, status: 200, body: Self.branchAnswer, at: start.addingTimeInterval(1))
        try history.add(SendSucceeded(attempt: 1), stream: first, at: start.addingTimeInterval(1.1))
        let session = try history.add(SessionStarted(device: iosDevice()), at: start.addingTimeInterval(3_600))
        let second = try history.requestSend(.branch, .open, cause: session, at: start.addingTimeInterval(3_600))
        try history.attempt(second, number: 1, status: 200,
                            body: Self.branchAnswer.replacingOccurrences(of: "RBT-1", with: "RBT-2"),
                            at: start.addingTimeInterval(3_601))
        state = try history.replay(BranchIdentityReducer())
        #expect(state.randomizedBundleToken == "RBT-1" && state.tokenSendStreamID == first)
        #expect(state.anomalies.map(\.token) == ["RBT-2"])
        #expect(state.openSendsInFlight == [second])
        #expect(state.identity == "user-9" && state.randomizedDeviceToken == "RDT-1")
        #expect(state.lastClickedBranchLink == true)
    }

    static let googleAffirmative = #"{"ad_events":[{"ad_event_id":"Q0owS0NRandom","conversion_metric":"conversion","interaction_type":null,"campaign_type":"UAC","campaign_id":123456789,"campaign_name":"My UAC campaign","ad_type":"ClickToDownload","external_customer_id":123456789,"location":21144,"network_type":"Search","network_subtype":"GoogleSearch","video_id":null,"keyword":null,"match_type":null,"placement":null,"ad_group_id":null,"creative_id":null,"timestamp":1432681913.123456}],"errors":[],"attributed":true}"#

    // Google App Conversion Tracking API: an affirmative answer opens an obligation per
    // ad_event_id; the cross-network send closes it on Google's 200 — here after a first
    // cross-network send that failed for good.
    @Test func obligationSurvivesAFailedCrossNetworkSendAndClosesOn200() throws {
        var history = History()
        let cause = try install(&history, token: nil)
        let conversion = try history.requestSend(.google, .conversion, cause: cause, at: start,
                                                 parameters: ["app_event_type": "first_open"])
        try history.attempt(conversion, number: 1, status: 200, body: Self.googleAffirmative, at: start.addingTimeInterval(1))
        var state = try history.replay(GoogleObligationReducer())
        var obligation = try #require(state.obligations["Q0owS0NRandom"])
        #expect(obligation.state == .open && obligation.causeEventID == cause.id && obligation.campaignType == "UAC")
        #expect(obligation.adEventAt == Date(timeIntervalSince1970: 1_432_681_913.123456))

        let decision = try history.add(SessionStarted(device: iosDevice()), at: start.addingTimeInterval(2))
        let firstReport = try history.requestSend(.google, .crossNetwork, cause: decision, at: start.addingTimeInterval(2),
                                                  parameters: ["ad_event_id": "Q0owS0NRandom", "attributed": "1"])
        #expect(try history.replay(GoogleObligationReducer()).obligations["Q0owS0NRandom"]?.state == .requested)
        try history.attempt(firstReport, number: 1, status: 500, body: nil, at: start.addingTimeInterval(3))
        try history.add(SendFailed(attempt: 1, rule: "retries_exhausted"), stream: firstReport, at: start.addingTimeInterval(3.1))
        state = try history.replay(GoogleObligationReducer())
        obligation = try #require(state.obligations["Q0owS0NRandom"])
        #expect(obligation.state == .open && obligation.failures == ["retries_exhausted"])

        let secondReport = try history.requestSend(.google, .crossNetwork, cause: decision, at: start.addingTimeInterval(4),
                                                   parameters: ["ad_event_id": "Q0owS0NRandom", "attributed": "1"])
        try history.attempt(secondReport, number: 1, status: 200, body: nil, at: start.addingTimeInterval(5))
        state = try history.replay(GoogleObligationReducer())
        obligation = try #require(state.obligations["Q0owS0NRandom"])
        #expect(obligation.state == .closed && obligation.closedAt == start.addingTimeInterval(5.05))
        #expect(obligation.crossNetworkSends == [firstReport, secondReport] && obligation.attributed == "1")
    }

    // Google App Conversion Tracking API: a negative answer (no ad events) opens nothing.
    @Test func negativeGoogleAnswerOpensNoObligation() throws {
        var history = History()
        let cause = try install(&history, token: nil)
        let conversion = try history.requestSend(.google, .conversion, cause: cause, at: start)
        try history.attempt(conversion, number: 1, status: 200, body: #"{"ad_events":[],"errors":[],"attributed":false}"#,
                            at: start.addingTimeInterval(1))
        #expect(try history.replay(GoogleObligationReducer()).obligations.isEmpty)
    }
}
