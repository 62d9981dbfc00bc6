import Foundation
import LedgerPostgres
import LedgerTestKit
import NIOHTTP1
import Testing

/// The device's own user agent text (`DeviceUserAgentRecorded`) through the HTTP append: what is
/// accepted is what the Branch open can send as `user_agent` ("the user agent of the device",
/// Branch v1/open server-to-server guide); anything else is refused naming the field and the rule.
@Suite(.database) struct DeviceUserAgentTests {
    /// A web view's user agent, the form of the Branch v1/open server-to-server guide's example.
    static let webViewUserAgent =
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148"

    /// A `DeviceUserAgentRecorded` as the HTTP API takes it; `userAgent` is JSON text.
    func userAgentJSON(id: UUID = UUID(), device: String, userAgentJSON: String) -> String {
        #"{"id": "\#(id.uuidString)", "type": "DeviceUserAgentRecorded", "device_id": "\#(device)", "occurred_at": "2026-11-23T09:59:59.000000Z", "data": {"user_agent": \#(userAgentJSON)}}"#
    }

    @Test func theDevicesOwnUserAgentIsAcceptedAndAMalformedOneRefusedByFieldAndRule() async throws {
        try await withAPI { api in
            let path = "/v1/apps/\(appA)/events"
            let accepted = try await api.send(.POST, path, json: batch(
                userAgentJSON(device: "install-ua", userAgentJSON: "\"\(Self.webViewUserAgent)\""), firstOpenJSON(device: "install-ua")))
            #expect(accepted.status == 200, "\(String(decoding: accepted.body, as: UTF8.self))")
            let history = try await api.send(.GET, "/v1/apps/\(appA)/devices/install-ua/history")
            let events = try #require(try json(history.body)["events"] as? [[String: Any]])
            let recorded = try #require(events.first { $0["type"] as? String == "DeviceUserAgentRecorded" }?["data"] as? [String: Any])
            #expect(recorded["user_agent"] as? String == Self.webViewUserAgent)
            // Personal, like device.user_agent: sealed per device at rest, never in clear.
            let stored = try await api.pool.query(
                "SELECT data::text FROM events WHERE event_type = 'DeviceUserAgentRecorded'").single().decode(String.self, at: 0)
            #expect(stored.contains("ledger_personal"))
            #expect(!stored.contains("AppleWebKit"))
            let before = try await api.eventCount()

            let refusals: [(json: String, rule: String)] = [
                (#""Mozilla/5.0 (iPhone)\r\nX-Injected: 1""#, "printable_ascii"),
                (#""Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 – like Mac OS X)""#, "printable_ascii"),
                (#""   ""#, "non_blank"),
                (#""""#, "non_empty"),
                ("\"\(String(repeating: "A", count: 1025))\"", "max_1024_characters"),
                ("42", "expected_string"),
                ("null", "required"),
            ]
            for refusal in refusals {
                let refused = try await api.send(.POST, path, json: batch(userAgentJSON(device: "install-ua2", userAgentJSON: refusal.json)))
                #expect(refused.status == 400)
                let error = try apiError(refused.body)
                #expect(error["field"] as? String == "events[0].data.user_agent", "\(refusal.rule)")
                #expect(error["rule"] as? String == refusal.rule)
            }
            #expect(try await api.eventCount() == before)
        }
    }
}
