import Foundation
import LedgerDomain
import LedgerFolds
import Testing

@testable import LedgerDecisions

/// The last-click rule, table-driven. Windows: Apple AdServices "tap-through 30 days; view-through
/// 24 hours after the view; clicks beat views; pre-orders 90 days (click) / 61 days (view)" (Apple
/// AdServices attribution API); Google's default install lookback, 30 days; Google's ad event
/// `timestamp` is the one to use for last click (Google App Conversion Tracking API); iAd "tapped
/// within 30 days before download" (Apple Search Ads Attribution API).
@Suite struct LastClickRuleTests {
    static let install = Date(timeIntervalSince1970: 1_700_000_000)
    static let hour: TimeInterval = 3600
    static let day: TimeInterval = 86_400

    static func touch(_ source: AttributionSource, _ interaction: AttributionInteraction = .click, ago: TimeInterval,
                      campaign: String = "c1", preOrder: Bool = false, position: Int64 = 1) -> TouchCandidate {
        TouchCandidate(
            touch: AttributionTouch(source: source, interaction: interaction, time: install.addingTimeInterval(-ago),
                                    campaignID: campaign, adEventID: source == .google ? "ae-\(campaign)" : nil),
            isPreOrder: preOrder, position: position)
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var candidates: [TouchCandidate]
        /// The winner's index in `candidates`, nil for organic.
        var winner: Int?
        var outcomes: [CandidateOutcome]
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "Google click later than Apple click: Google wins, Apple loses as an earlier click",
             candidates: [touch(.appleAdServices, ago: 3 * day), touch(.google, ago: 1 * day)],
             winner: 1, outcomes: [.earlierClick, .won]),
        Case(name: "Apple click inside 30 days vs a Google click outside its 30-day window: Apple wins",
             candidates: [touch(.appleAdServices, ago: 29 * day), touch(.google, ago: 31 * day)],
             winner: 0, outcomes: [.won, .outsideWindow]),
        Case(name: "Apple view vs Google click: clicks beat views, even a later view",
             candidates: [touch(.appleAdServices, .view, ago: 1 * hour), touch(.google, ago: 5 * day)],
             winner: 1, outcomes: [.viewBeatenByClick, .won]),
        Case(name: "Apple view alone within 24 h wins",
             candidates: [touch(.appleAdServices, .view, ago: 23 * hour)],
             winner: 0, outcomes: [.won]),
        Case(name: "Apple view alone after 24 h: organic",
             candidates: [touch(.appleAdServices, .view, ago: 25 * hour)],
             winner: nil, outcomes: [.outsideWindow]),
        Case(name: "Apple view exactly 24 h before the install is inside (the window is inclusive)",
             candidates: [touch(.appleAdServices, .view, ago: 24 * hour)],
             winner: 0, outcomes: [.won]),
        Case(name: "Apple pre-order click at 60 days: inside the 90-day pre-order window",
             candidates: [touch(.appleAdServices, ago: 60 * day, preOrder: true)],
             winner: 0, outcomes: [.won]),
        Case(name: "Apple click at 60 days, not a pre-order: outside 30 days",
             candidates: [touch(.appleAdServices, ago: 60 * day)],
             winner: nil, outcomes: [.outsideWindow]),
        Case(name: "Apple pre-order view at 60 days: inside 61 days; at 62 days: outside",
             candidates: [touch(.appleAdServices, .view, ago: 60 * day, preOrder: true),
                          touch(.appleAdServices, .view, ago: 62 * day, campaign: "c2", preOrder: true)],
             winner: 0, outcomes: [.won, .outsideWindow]),
        Case(name: "Branch link click wins alone",
             candidates: [touch(.branch, ago: 2 * hour)],
             winner: 0, outcomes: [.won]),
        Case(name: "Branch link click later than a Google click wins",
             candidates: [touch(.google, ago: 2 * day), touch(.branch, ago: 2 * hour)],
             winner: 1, outcomes: [.earlierClick, .won]),
        Case(name: "legacy iAd only: the iAd tap within 30 days wins",
             candidates: [touch(.appleIAd, ago: 10 * day)],
             winner: 0, outcomes: [.won]),
        Case(name: "no candidates: organic", candidates: [], winner: nil, outcomes: []),
        Case(name: "equal timestamps: Apple AdServices before Google in the tie-break order",
             candidates: [touch(.google, ago: 1 * day), touch(.appleAdServices, ago: 1 * day)],
             winner: 1, outcomes: [.tieLost, .won]),
        Case(name: "equal timestamps, same source: the smaller campaign id wins",
             candidates: [touch(.google, ago: 1 * day, campaign: "c9"), touch(.google, ago: 1 * day, campaign: "c1")],
             winner: 1, outcomes: [.tieLost, .won]),
        Case(name: "a touch stamped after the install cannot have caused it",
             candidates: [touch(.google, ago: -1 * hour), touch(.branch, ago: 3 * day)],
             winner: 1, outcomes: [.outsideWindow, .won]),
        Case(name: "two Google ad events of one answer: the later wins, the other is an earlier click",
             candidates: [touch(.google, ago: 4 * day, campaign: "a"), touch(.google, ago: 2 * day, campaign: "b")],
             winner: 1, outcomes: [.earlierClick, .won]),
    ]

    @Test(arguments: cases)
    func decides(_ testCase: Case) {
        let outcome = LastClickRule.decide(
            triggerTime: Self.install, candidates: testCase.candidates, windows: AttributionWindows())
        #expect(outcome.winner == testCase.winner.map { testCase.candidates[$0].touch })
        #expect(outcome.candidates.map(\.outcome) == testCase.outcomes)
        #expect(outcome.candidates.map(\.touch) == testCase.candidates.map(\.touch))
    }

    @Test func theOrderCandidatesArriveInDoesNotChangeTheWinner() {
        let candidates = [
            Self.touch(.google, ago: 1 * Self.day), Self.touch(.appleAdServices, ago: 1 * Self.day),
            Self.touch(.branch, ago: 1 * Self.day), Self.touch(.appleAdServices, .view, ago: 1 * Self.hour),
        ]
        let forward = LastClickRule.decide(triggerTime: Self.install, candidates: candidates, windows: AttributionWindows())
        let backward = LastClickRule.decide(triggerTime: Self.install, candidates: candidates.reversed(), windows: AttributionWindows())
        #expect(forward.winner == backward.winner)
        #expect(forward.winner?.source == .appleAdServices)
    }

    /// Apple's standard payload certifies a tap within 30 days without a date: it wins alone, and
    /// loses to any dated click in the window.
    @Test func undatedAppleTapWinsAloneAndLosesToADatedClick() {
        var undated = Self.touch(.appleAdServices, ago: 0)
        undated.undated = true
        let alone = LastClickRule.decide(triggerTime: Self.install, candidates: [undated], windows: AttributionWindows())
        #expect(alone.winner?.source == .appleAdServices)
        #expect(alone.winner?.time == Self.install.addingTimeInterval(-30 * Self.day))
        let both = LastClickRule.decide(
            triggerTime: Self.install, candidates: [undated, Self.touch(.google, ago: 29 * Self.day)], windows: AttributionWindows())
        #expect(both.winner?.source == .google)
        #expect(both.candidates.map(\.outcome) == [.earlierClick, .won])
    }

    @Test func windowsAreConfigurablePerApp() {
        var windows = AttributionWindows()
        windows.googleClick = 7 * Self.day
        let outcome = LastClickRule.decide(
            triggerTime: Self.install, candidates: [Self.touch(.google, ago: 8 * Self.day)], windows: windows)
        #expect(outcome.winner == nil)
        #expect(outcome.candidates.first?.outcome == .outsideWindow)
    }
}
