import AsyncHTTPClient
import Foundation
import LedgerHTTPAPI
import LedgerTestKit
import NIOCore
import NIOHTTP1
import Prometheus
import Testing

/// The HTTP API over a real socket on 127.0.0.1 and a real PostgreSQL: append, read back, keys
/// per app, and refusals that write nothing.
@Suite(.database) struct HTTPAPITests {
    @Test func anExactRetryOfAFirstOpenWithAnAdServicesTokenIsADuplicate() async throws {
        try await withAPI { api in
            let open = UUID()
            let token = #", "adservices_token": {"token": "dG9rZW4tb25l", "issued_at": "2026-11-23T09:59:58.123456Z"}}}"#
            let fact = firstOpenJSON(id: open, device: "install-token")
            let withToken = String(fact.dropLast(2)) + token
            let first = try await api.send(.POST, "/v1/apps/\(appA)/events", json: batch(withToken))
            #expect(first.status == 200, "\(String(decoding: first.body, as: UTF8.self))")
            let before = try await api.eventCount()
            let again = try await api.send(.POST, "/v1/apps/\(appA)/events", json: batch(withToken))
            #expect(again.status == 200, "\(String(decoding: again.body, as: UTF8.self))")
            #expect(try json(again.body)["duplicates"] as? Int == 1)
            #expect(try await api.eventCount() == before)
        }
    }

    @Test func appendThenReadBackStateSKANAndHistory() async throws {
        try await withAPI { api in
            let open = UUID()
            let registration = UUID()
            let update = UUID()
            let body = batch(firstOpenJSON(id: open, device: "install-1"), skanRegisteredJSON(id: registration, device: "install-1"),
                             skanUpdateJSON(id: update, device: "install-1", fine: 21))
            let appended = try await api.send(.POST, "/v1/apps/\(appA)/events", json: body)
            #expect(appended.status == 200)
            let answer = try json(appended.body)
            let results = try #require(answer["results"] as? [[String: Any]])
            try #require(results.count == 3)
            #expect(results[0]["id"] as? String == open.uuidString.lowercased())
            let positions = results.compactMap { $0["position"] as? Int }
            try #require(positions.count == 3)
            #expect(positions == positions.sorted())
            #expect(answer["appended"] as? Int == 3)

            // Idempotent: the same events again write nothing and answer the same positions (the
            // update's `"lock_window": false` included).
            let before = try await api.eventCount()
            let again = try await api.send(.POST, "/v1/apps/\(appA)/events", json: body)
            #expect(again.status == 200, "\(String(decoding: again.body, as: UTF8.self))")
            let retried = try #require(try json(again.body)["results"] as? [[String: Any]])
            #expect(retried.compactMap { $0["position"] as? Int } == positions)
            #expect(try json(again.body)["duplicates"] as? Int == 3)
            #expect(try await api.eventCount() == before)

            let skan = try await api.send(.GET, "/v1/apps/\(appA)/devices/install-1/skan")
            #expect(skan.status == 200)
            let values = try json(skan.body)
            #expect(values["registered"] as? Bool == true)
            #expect(values["fine_value"] as? Int == 21)

            let history = try await api.send(.GET, "/v1/apps/\(appA)/devices/install-1/history")
            #expect(history.status == 200)
            let events = try #require(try json(history.body)["events"] as? [[String: Any]])
            let types = events.compactMap { $0["type"] as? String }
            #expect(types.starts(with: ["FirstOpen", "SKANRegistered", "SKANConversionValueUpdated"])
                    || Set(["FirstOpen", "SKANRegistered", "SKANConversionValueUpdated"]).isSubset(of: types))
            let firstData = try #require(events.first { $0["type"] as? String == "FirstOpen" }?["data"] as? [String: Any])
            #expect(firstData["app_id"] as? String == appA)

            // As of the registration's position: the update is not there yet.
            let asOf = try await api.send(.GET, "/v1/apps/\(appA)/devices/install-1/skan?as_of_position=\(positions[1])")
            #expect(asOf.status == 200)
            #expect(try json(asOf.body)["fine_value"] as? Int == 0)

            let state = try await api.send(.GET, "/v1/apps/\(appA)/devices/install-1/state")
            #expect(state.status == 200)
            let skanState = try #require(try json(state.body)["skan"] as? [String: Any])
            #expect(skanState["updatesApplied"] as? Int == 1 || skanState["updates_applied"] as? Int == 1)

            let attribution = try await api.send(.GET, "/v1/apps/\(appA)/devices/install-1/attribution")
            #expect(attribution.status == 200)
            #expect(try json(attribution.body)["decision_count"] as? Int == 0)
        }
    }

    @Test func aKeyOfAnotherAppCanNeitherWriteNorRead() async throws {
        try await withAPI { api in
            // Key B writes its own app.
            let own = try await api.send(.POST, "/v1/apps/\(appB)/events", key: keyB,
                                         json: batch(skanRegisteredJSON(device: "install-b")))
            #expect(own.status == 200)
            let before = try await api.eventCount()
            // Key A on app B: 403, nothing written, nothing read.
            let write = try await api.send(.POST, "/v1/apps/\(appB)/events", key: keyA,
                                           json: batch(skanRegisteredJSON(device: "install-b2")))
            #expect(write.status == 403)
            #expect(try apiError(write.body)["code"] as? String == "forbidden")
            #expect(try await api.eventCount() == before)
            for path in ["state", "skan", "attribution", "history"] {
                let read = try await api.send(.GET, "/v1/apps/\(appB)/devices/install-b/\(path)", key: keyA)
                #expect(read.status == 403, "\(path)")
                #expect(!String(decoding: read.body, as: UTF8.self).contains("skan_version"))
            }
            // No key, or an unknown key: 401.
            let anonymous = try await api.send(.GET, "/v1/apps/\(appA)/devices/install-b/skan", key: nil)
            #expect(anonymous.status == 401)
            let unknown = try await api.send(.POST, "/v1/apps/\(appA)/events", key: "guessed-key",
                                             json: batch(skanRegisteredJSON(device: "x")))
            #expect(unknown.status == 401)
            #expect(try await api.eventCount() == before)
        }
    }

    @Test func malformedJSONAndInvalidEventsAreRefusedWithNothingWritten() async throws {
        try await withAPI { api in
            let path = "/v1/apps/\(appA)/events"
            let malformed = try await api.send(.POST, path, json: #"{"events": [{"id": "#)
            #expect(malformed.status == 400)
            #expect(try apiError(malformed.body)["code"] as? String == "malformed_json")

            // The second event of the batch is invalid: the first one is not written either.
            let invalid = try await api.send(.POST, path, json: batch(skanRegisteredJSON(device: "install-2"),
                                                                      firstOpenJSON(device: "install-2", idfa: "not-a-uuid")))
            #expect(invalid.status == 400)
            let error = try apiError(invalid.body)
            #expect(error["code"] as? String == "invalid_event")
            #expect(error["field"] as? String == "events[1].data.device.idfa")
            #expect(error["rule"] as? String == "uuid")
            #expect(error["index"] as? Int == 1)
            #expect(!String(decoding: invalid.body, as: UTF8.self).contains("not-a-uuid"))

            let missing = try await api.send(.POST, path, json: #"{"events": [{"type": "SKANRegistered"}]}"#)
            #expect(missing.status == 400)
            #expect(try apiError(missing.body)["field"] as? String == "events[0].id")

            let badTime = try await api.send(.POST, path, json: batch(skanRegisteredJSON(device: "install-2", at: "yesterday")))
            #expect(try apiError(badTime.body)["field"] as? String == "events[0].occurred_at")

            let notDevice = try await api.send(.POST, path, json: #"{"events": [{"id": "\#(UUID())", "type": "SendSucceeded", "device_id": "d", "occurred_at": "2026-11-23T10:00:00Z", "data": {}}]}"#)
            #expect(notDevice.status == 400)
            #expect(try apiError(notDevice.body)["rule"] as? String == "device_fact")

            #expect(try await api.eventCount() == 0)
        }
    }

    @Test func oversizeBodiesAreRefusedWith413AndNothingWritten() async throws {
        try await withAPI(maxBodyBytes: 8 * 1024) { api in
            let path = "/v1/apps/\(appA)/events"
            let events = (0..<200).map { _ in skanRegisteredJSON(device: "install-3") }
            let body = #"{"events": ["# + events.joined(separator: ",") + "]}"
            #expect(body.utf8.count > 8 * 1024)
            // With a Content-Length: refused before the body is read.
            let declared = try await api.send(.POST, path, json: body)
            #expect(declared.status == 413)
            #expect(try apiError(declared.body)["code"] as? String == "payload_too_large")
            // Streamed without a length (chunked): refused when the limit is crossed.
            let chunks = stride(from: 0, to: body.utf8.count, by: 1024).map { start in
                ByteBuffer(bytes: Array(body.utf8).dropFirst(start).prefix(1024))
            }
            let streamed = try await api.send(.POST, path, body: .stream(chunks.async, length: .unknown))
            #expect(streamed.status == 413)
            #expect(try await api.eventCount() == 0)
        }
    }

    @Test func unknownRoutesWrongMethodsHealthReadinessAndMetrics() async throws {
        try await withAPI { api in
            let missing = try await api.send(.GET, "/v1/nothing")
            #expect(missing.status == 404)
            #expect(try apiError(missing.body)["code"] as? String == "not_found")
            let wrongMethod = try await api.send(.DELETE, "/v1/apps/\(appA)/events")
            #expect(wrongMethod.status == 405)
            #expect(try await api.send(.GET, "/health", key: nil).status == 200)
            let ready = try await api.send(.GET, "/ready", key: nil)
            #expect(ready.status == 200)
            #expect(try json(ready.body)["status"] as? String == "ready")
        }
    }

    // docs/http-api.md, GET /metrics: what the ledger emitted for this server's work — two facts
    // appended, the same two again (duplicates), a write with another app's key refused — and
    // nothing else.
    @Test func metricsShowWhatTheLedgerEmitted() async throws {
        try await withAPI { api in
            let body = batch(firstOpenJSON(device: "metrics-1"), skanRegisteredJSON(device: "metrics-1"))
            #expect(try await api.send(.POST, "/v1/apps/\(appA)/events", json: body).status == 200)
            #expect(try await api.send(.POST, "/v1/apps/\(appA)/events", json: body).status == 200)
            #expect(try await api.send(.POST, "/v1/apps/\(appB)/events", key: keyA, json: body).status == 403)
            let metrics = try await api.send(.GET, "/metrics", key: nil)
            #expect(metrics.status == 200)
            let text = String(decoding: metrics.body, as: UTF8.self)
            #expect(prometheusSamples(text, prefix: "ledger_facts_recorded_total") == [
                #"ledger_facts_recorded_total{type="FirstOpen",outcome="appended"}"#: 1,
                #"ledger_facts_recorded_total{type="SKANRegistered",outcome="appended"}"#: 1,
                #"ledger_facts_recorded_total{type="FirstOpen",outcome="duplicate"}"#: 1,
                #"ledger_facts_recorded_total{type="SKANRegistered",outcome="duplicate"}"#: 1,
            ], "\(text)")
            #expect(prometheusSamples(text, prefix: "ledger_http_refusals_total") == [
                #"ledger_http_refusals_total{code="forbidden",rule="key_of_this_app"}"#: 1,
            ], "\(text)")
            #expect(prometheusSamples(text, prefix: "ledger_facts_refused_total").isEmpty)
            #expect(prometheusSamples(text, prefix: "ledger_fact_record_duration_seconds_count") == [
                #"ledger_fact_record_duration_seconds_count{type="FirstOpen"}"#: 2,
                #"ledger_fact_record_duration_seconds_count{type="SKANRegistered"}"#: 2,
            ], "\(text)")
        }
    }
}

extension Array where Element: Sendable {
    /// The elements as an async sequence (a streamed request body).
    var async: AsyncStream<Element> {
        AsyncStream { continuation in
            for element in self { continuation.yield(element) }
            continuation.finish()
        }
    }
}
