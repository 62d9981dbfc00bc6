import AsyncHTTPClient
import Foundation
import LedgerDomain
import LedgerHTTPAPI
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import NIOCore
import NIOHTTP1
import Synchronization
import Testing

/// `GET /v1/apps/{app}/events/stream`: an app's events as Server-Sent Events, caught up from a
/// position and then live, gap-safe, resumable with `Last-Event-ID`.
@Suite("Event stream (Server-Sent Events)", .database)
struct EventStreamTests {
    /// `app`'s events in the log's gap-safe order (transaction id, then position), read directly:
    /// what a stream from the start must send, in this order. Its devices' streams, their
    /// decisions, and the sends requested for them (a first open plans some).
    static func logEntries(_ api: RunningAPI, app: String) async throws -> [(position: Int64, type: String, stream: String)] {
        try await api.pool.query("""
            SELECT position, event_type, stream_id FROM events
            WHERE stream_id LIKE \("device-\(app)/%") OR stream_id LIKE \("decision-\(app)/%")
                OR stream_id IN (SELECT stream_id FROM events WHERE event_type = 'SendRequested'
                                 AND data ->> 'device_stream_id' LIKE \("device-\(app)/%"))
            ORDER BY transaction_id, position
            """).map { (try $0.decode(Int64.self, at: 0), try $0.decode(String.self, at: 1), try $0.decode(String.self, at: 2)) }
    }

    /// The positions of ``logEntries(_:app:)``.
    static func logOrder(_ api: RunningAPI, app: String) async throws -> [Int64] {
        try await logEntries(api, app: app).map(\.position)
    }

    static func append(_ api: RunningAPI, _ events: String..., app: String = appA, key: String = keyA) async throws {
        let (status, body) = try await api.send(.POST, "/v1/apps/\(app)/events", key: key, json: #"{"events": ["# + events.joined(separator: ",") + "]}")
        #expect(status == 200, "\(String(decoding: body, as: UTF8.self))")
    }

    @Test("catches up from the position, then sends new events live, each with its position as id")
    func catchUpThenLive() async throws {
        try await withAPI { api in
            try await Self.append(api, firstOpenJSON(device: "d1"), skanRegisteredJSON(device: "d1"))
            let (client, _) = try await EventStreamClient.open(api, "/v1/apps/\(appA)/events/stream?after=0")
            defer { client.kill() }
            #expect(client.status == 200)
            #expect(client.headers.first(name: "Content-Type")?.hasPrefix("text/event-stream") == true)
            let log = try await Self.logEntries(api, app: appA)
            let caughtUp = try await client.waitForMessages(log.count)
            #expect(caughtUp.map(\.id) == log.map(\.position))
            #expect(caughtUp.map { $0.event["type"] as? String } == log.map(\.type))
            #expect(log.map(\.type).first == "FirstOpen" && log.map(\.type).contains("SKANRegistered"))
            #expect(caughtUp.map(\.id) == caughtUp.map { $0.event["position"] as? Int64 ?? -1 })
            // Personal fields opened for this app, as the history route shows them.
            let device = (caughtUp[0].event["data"] as? [String: Any])?["device"] as? [String: Any]
            #expect(device?["idfa"] as? String == "DFC5A647-9043-4699-B2A5-76F03A97064B")

            try await Self.append(api, skanUpdateJSON(device: "d1", fine: 7))
            let live = try await client.waitForMessages(log.count + 1)
            #expect(live.map { $0.event["type"] as? String }.last == "SKANConversionValueUpdated")
            #expect(live.map(\.id) == (try await Self.logOrder(api, app: appA)))
        }
    }

    @Test("after=POSITION starts after that event; types=A,B sends only those types")
    func afterAndTypes() async throws {
        try await withAPI { api in
            try await Self.append(api, firstOpenJSON(device: "d1"), skanRegisteredJSON(device: "d1"),
                                  skanUpdateJSON(device: "d1", fine: 3), skanUpdateJSON(device: "d1", fine: 4))
            let log = try await Self.logEntries(api, app: appA)
            let wanted: Set = ["SKANConversionValueUpdated", "FirstOpen"]
            let (client, _) = try await EventStreamClient.open(
                api, "/v1/apps/\(appA)/events/stream?after=\(log[0].position)&types=SKANConversionValueUpdated,FirstOpen")
            defer { client.kill() }
            let expected = log.dropFirst().filter { wanted.contains($0.type) }.map(\.position)
            #expect(expected.count == 2)
            #expect(try await client.waitForMessages(expected.count).map(\.id) == expected)
            let (typed, _) = try await EventStreamClient.open(api, "/v1/apps/\(appA)/events/stream?types=SKANRegistered")
            defer { typed.kill() }
            #expect(try await typed.waitForMessages(1).map(\.id) == log.filter { $0.type == "SKANRegistered" }.map(\.position))
        }
    }

    @Test("after=P of an event committed behind an older open transaction waits until P is readable, then skips nothing")
    func afterAPositionNotReadableYet() async throws {
        try await withAPI { api in
            // A transaction with an id, left open: every event committed after it began is behind
            // the read horizon until it ends, wherever on the server it runs.
            let older = try PostgresConnection(conninfo: api.pool.configuration.conninfo, logger: TestDatabase.quietLogger)
            try older.run(script: "BEGIN")
            _ = try older.query("SELECT pg_current_xact_id()")
            try await Self.append(api, firstOpenJSON(device: "d1"), skanRegisteredJSON(device: "d1"))
            let log = try await Self.logEntries(api, app: appA)
            let (client, _) = try await EventStreamClient.open(api, "/v1/apps/\(appA)/events/stream?after=\(log[0].position)")
            defer { client.kill() }
            #expect(client.status == 200, "a committed position is a valid start even while it is not readable")
            #expect(try await store(api).checkpoint(atPosition: log[0].position)?.readable == false)
            #expect(client.messages.isEmpty)
            try older.run(script: "ROLLBACK")
            let expected = log.dropFirst().map(\.position)
            #expect(try await client.waitForMessages(expected.count).map(\.id) == expected)
        }
    }

    func store(_ api: RunningAPI) -> EventStore { EventStore(pool: api.pool, logger: TestDatabase.quietLogger) }

    @Test("bad after, Last-Event-ID or types: 400 naming the field and the rule")
    func badPositions() async throws {
        try await withAPI { api in
            for (query, headers, field, rule) in [
                ("?after=abc", [], "after", "integer_min_0"), ("?after=-1", [], "after", "integer_min_0"),
                ("?after=999999", [], "after", "readable_position"),
                ("?after=0", [("Last-Event-ID", "x")], "Last-Event-ID", "integer_min_0"),
                ("?types=NoSuchType", [], "types", "unknown_type"),
            ] as [(String, [(String, String)], String, String)] {
                let (client, body) = try await EventStreamClient.open(api, "/v1/apps/\(appA)/events/stream\(query)", headers: headers)
                #expect(client.status == 400, "\(query)")
                let error = try apiError(try #require(body))
                #expect(error["field"] as? String == field, "\(query)")
                #expect(error["rule"] as? String == rule, "\(query)")
            }
        }
    }

    @Test("another app's key is refused 403; another app's events and sends never appear")
    func otherApps() async throws {
        try await withAPI { api in
            let refused = try await EventStreamClient.open(api, "/v1/apps/\(appA)/events/stream", key: keyB)
            #expect(refused.client.status == 403)
            let anonymous = try await api.send(.GET, "/v1/apps/\(appA)/events/stream", key: nil)
            #expect(anonymous.status == 401)

            let otherIDFA = "0E4C0F6A-3A6B-4C8E-9D3E-7A1B2C3D4E5F"
            try await Self.append(api, firstOpenJSON(device: "b1", app: appB, idfa: otherIDFA), app: appB, key: keyB)
            try await Self.append(api, firstOpenJSON(device: "a1"))
            // A send requested for each app's device: a send stream belongs to the device its
            // request names.
            let raw = EventStore(pool: api.pool, logger: TestDatabase.quietLogger)
            var sendStreams: [String: String] = [:]
            for (app, device) in [(appB, "b1"), (appA, "a1")] {
                let request = #"{"device_stream_id": "device-\#(app)/\#(device)", "provider": "branch"}"#
                let stream = "send-\(UUID().uuidString.lowercased())"
                sendStreams[app] = stream
                try await raw.append([NewEvent(type: "SendRequested", data: Data(request.utf8),
                                               metadata: Data(#"{"actor":"test","app_id":"\#(app)"}"#.utf8), occurredAt: Date())],
                                     to: stream)
            }
            try await Self.append(api, firstOpenJSON(device: "b2", app: appB, idfa: otherIDFA), app: appB, key: keyB)
            try await Self.append(api, skanRegisteredJSON(device: "a1"))
            let expected = try await Self.logEntries(api, app: appA)

            let (client, _) = try await EventStreamClient.open(api, "/v1/apps/\(appA)/events/stream")
            defer { client.kill() }
            let messages = try await client.waitForMessages(expected.count)
            #expect(messages.map(\.id) == expected.map(\.position))
            let streams = messages.map { $0.event["stream_id"] as? String ?? "" }
            #expect(streams.contains(try #require(sendStreams[appA])))
            #expect(!streams.contains(try #require(sendStreams[appB])))
            for message in messages {
                let streamID = message.event["stream_id"] as? String ?? ""
                #expect(!streamID.contains(appB))
                #expect(!"\(message.event)".contains(otherIDFA))
                if message.event["type"] as? String == "SendRequested" {
                    let device = (message.event["data"] as? [String: Any])?["device_stream_id"] as? String
                    #expect(device?.hasPrefix("device-\(appA)/") == true, "a send of another app's device")
                }
            }
            // B's next event, appended while A's stream is live, does not reach it either.
            try await Self.append(api, skanRegisteredJSON(device: "b1"), app: appB, key: keyB)
            try await Self.append(api, skanUpdateJSON(device: "a1", fine: 1))
            let live = try await client.waitForMessages(expected.count + 1)
            #expect(live.map(\.id) == (try await Self.logOrder(api, app: appA)))
        }
    }

    @Test("a heartbeat comment every configured interval keeps an idle stream open")
    func heartbeats() async throws {
        try await withAPI(configure: { $0.eventStreamHeartbeat = .milliseconds(100) }) { api in
            let (client, _) = try await EventStreamClient.open(api, "/v1/apps/\(appA)/events/stream")
            defer { client.kill() }
            #expect(try await waitUntil(timeout: .seconds(10)) {
                client.received.filter { $0 == .comment("keep-alive") }.count >= 3
            })
        }
    }

    @Test("an erased device's events are sent as the history route shows them")
    func erasedDevice() async throws {
        try await withAPI { api in
            try await Self.append(api, firstOpenJSON(device: "e1"))
            let (status, body) = try await api.send(.POST, "/v1/apps/\(appA)/devices/e1/erase", json: #"{"requested_by": "dsar-portal"}"#)
            #expect(status == 200, "\(String(decoding: body, as: UTF8.self))")
            let history = try json(try await api.send(.GET, "/v1/apps/\(appA)/devices/e1/history").body)
            let events = try #require(history["events"] as? [[String: Any]])
            let (client, _) = try await EventStreamClient.open(api, "/v1/apps/\(appA)/events/stream")
            defer { client.kill() }
            let streamed = try await client.waitForMessages(events.count)
            #expect(streamed.count == events.count)
            for (message, event) in zip(streamed, events) {
                #expect(NSDictionary(dictionary: message.event) == NSDictionary(dictionary: event), "\(event["type"] ?? "")")
            }
            #expect(!client.received.description.contains("DFC5A647-9043-4699-B2A5-76F03A97064B"), "the IDFA is gone")
        }
    }
}
