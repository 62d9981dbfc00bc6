import Foundation
import LedgerDomain
import LedgerStore
import LedgerTestKit
import NIOHTTP1
import Testing

/// `GET /v1/apps/{app}/devices/{device}/timeline`: one self-contained HTML page drawing the
/// device's attribution, over a real socket and a real PostgreSQL.
@Suite(.database) struct TimelineRouteTests {
    static let installTime = Date(timeIntervalSince1970: 1_795_428_000)  // 2026-11-23T10:00:00Z, the first open's time

    /// Records two decisions about the first open `open` of `device` (the second a redo that
    /// supersedes the first), as the decider would: three candidates, one winner, a Google
    /// campaign whose name is markup.
    static func recordDecisions(_ api: RunningAPI, device: String, open: UUID, position: Int64) async throws {
        let store = EventStore(pool: api.pool, catalog: .standard, logger: TestDatabase.quietLogger)
        let stream = try StreamID.device(app: try AppID(appA), device: try DeviceID(device))
        let hour: TimeInterval = 3600
        let google = AttributionTouch(source: .google, interaction: .click, time: installTime.addingTimeInterval(-2 * hour),
                                      campaignID: "123", campaignName: "<script>alert('x')</script>", adEventID: "ev-1")
        let apple = AttributionTouch(source: .appleAdServices, interaction: .view, time: installTime.addingTimeInterval(-hour),
                                     campaignID: "542370539")
        let branch = AttributionTouch(source: .branch, interaction: .click, time: installTime.addingTimeInterval(-40 * 24 * hour),
                                      campaignName: "spring")
        let first = AttributionDecided(
            decisionID: UUID(), deviceStreamID: stream, triggerEventID: open, triggerKind: .install, ruleVersion: "last-click-v1",
            winner: google, candidates: [AttributionCandidate(touch: google, outcome: .won)], organic: false,
            inputPositions: [position])
        let redo = AttributionDecided(
            decisionID: UUID(), deviceStreamID: stream, triggerEventID: open, triggerKind: .install, ruleVersion: "last-click-v1",
            winner: google,
            candidates: [AttributionCandidate(touch: google, outcome: .won), AttributionCandidate(touch: apple, outcome: .viewBeatenByClick),
                         AttributionCandidate(touch: branch, outcome: .outsideWindow)],
            organic: false, inputPositions: [position], supersedes: first.decisionID)
        for decision in [first, redo] {
            try await store.append(
                [NewEvent(type: AttributionDecided.eventType, data: try EventCatalog.standard.encode(decision), occurredAt: installTime)],
                to: "decision-\(appA)/\(device)")
        }
    }

    static func count(_ needle: String, in text: String) -> Int { text.components(separatedBy: needle).count - 1 }

    @Test("the page draws every candidate with its window, marks one winner, says why each loser lost and shows the redo")
    func drawsTheDecision() async throws {
        try await withAPI { api in
            let open = UUID()
            let appended = try await api.send(.POST, "/v1/apps/\(appA)/events", json: batch(
                firstOpenJSON(id: open, device: "t1"), skanRegisteredJSON(device: "t1"), skanUpdateJSON(device: "t1", fine: 21)))
            try #require(appended.status == 200)
            let results = try #require(try json(appended.body)["results"] as? [[String: Any]])
            let position = try #require(results.first?["position"] as? Int)
            try await Self.recordDecisions(api, device: "t1", open: open, position: Int64(position))

            let answer = try await api.exchange(.GET, "/v1/apps/\(appA)/devices/t1/timeline")
            #expect(answer.status == 200)
            #expect(answer.headers.first(name: "Content-Type")?.hasPrefix("text/html") == true)
            let page = String(decoding: answer.body, as: UTF8.self)
            // Self-contained: a policy forbidding everything external, and nothing fetched.
            #expect(page.contains(#"<meta http-equiv="Content-Security-Policy" content="default-src 'none'"#))
            #expect(!page.contains("src=") && !page.contains("href=\"http") && !page.contains("url("))
            #expect(Self.count(#"data-kind="candidate""#, in: page) == 3, "the current decision's three candidates")
            #expect(Self.count(#"data-kind="window""#, in: page) == 3, "one lookback window per candidate")
            #expect(Self.count(#"data-winner="true""#, in: page) == 1)
            #expect(page.contains(#"data-outcome="view_beaten_by_click""#) && page.contains("a click inside its window beats any view"))
            #expect(page.contains(#"data-outcome="outside_window""#) && page.contains("outside its lookback window"))
            #expect(Self.count(#"data-superseded="true""#, in: page) == 1, "the first decision, superseded by the redo")
            #expect(Self.count(#"data-kind="skan-window""#, in: page) == 3, "SKAdNetwork 4's three conversion windows")
            #expect(page.contains("fine value 21"))
            // The campaign name is shown as text, never run (checked in a browser by the CLI's test too).
            #expect(!page.contains("<script"))
            #expect(page.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"))
        }
    }

    @Test("the timeline needs this app's key: 401 without one, 403 with another app's, 404 for a device with no events")
    func accessRules() async throws {
        try await withAPI { api in
            let appended = try await api.send(.POST, "/v1/apps/\(appA)/events", json: batch(firstOpenJSON(device: "t2")))
            try #require(appended.status == 200)
            #expect(try await api.send(.GET, "/v1/apps/\(appA)/devices/t2/timeline", key: nil).status == 401)
            let other = try await api.send(.GET, "/v1/apps/\(appA)/devices/t2/timeline", key: keyB)
            #expect(other.status == 403)
            #expect(!String(decoding: other.body, as: UTF8.self).contains("<svg"))
            // App B's key on its own path names app B's device, which has no events: nothing of A's leaks.
            let ownPath = try await api.send(.GET, "/v1/apps/\(appB)/devices/t2/timeline", key: keyB)
            #expect(ownPath.status == 404)
            #expect(try apiError(ownPath.body)["rule"] as? String == "known_device")
            #expect(try await api.send(.GET, "/v1/apps/\(appA)/devices/never-seen/timeline").status == 404)
            #expect(try await api.send(.GET, "/v1/apps/\(appA)/devices/t2/timeline?as_of=yesterday").status == 400)
        }
    }

    @Test("an erased device's timeline is drawn as its history reads: its events, none of its personal fields")
    func erasedDevice() async throws {
        try await withAPI { api in
            let appended = try await api.send(.POST, "/v1/apps/\(appA)/events", json: batch(firstOpenJSON(device: "t3")))
            try #require(appended.status == 200)
            let erased = try await api.send(.POST, "/v1/apps/\(appA)/devices/t3/erase", json: #"{"requested_by": "dsar-portal"}"#)
            try #require(erased.status == 200)
            #expect(try await api.send(.GET, "/v1/apps/\(appA)/devices/t3/history").status == 200)
            let answer = try await api.send(.GET, "/v1/apps/\(appA)/devices/t3/timeline")
            #expect(answer.status == 200)
            let page = String(decoding: answer.body, as: UTF8.self)
            #expect(page.contains(#"data-kind="trigger""#))
            #expect(!page.contains("DFC5A647-9043-4699-B2A5-76F03A97064B") && !page.contains("203.0.113.7"))
        }
    }
}
