import AsyncHTTPClient
import Foundation
@testable import LedgerHTTPAPI
import LedgerTestKit
import NIOCore
import NIOHTTP1
import Testing

/// POST bodies: JSON by `Content-Type` only, and no key twice in an object.
@Suite(.database) struct RequestBodyTests {
    @Test func onlyApplicationJSONBodiesAreAccepted() async throws {
        try await withAPI { api in
            let path = "/v1/apps/\(appA)/events"
            let refused: [String?] = [nil, "text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1",
                                      "application/jsonx", "application/json; version=2", "text/json"]
            for contentType in refused {
                let body = HTTPClientRequest.Body.bytes(ByteBuffer(string: batch(skanRegisteredJSON(device: "install-m"))))
                let answer = try await api.exchange(.POST, path, body: body, contentType: contentType)
                #expect(answer.status == 415, "\(contentType ?? "no Content-Type")")
                let error = try apiError(answer.body)
                #expect(error["code"] as? String == "unsupported_media_type")
                #expect(error["field"] as? String == "Content-Type")
                #expect(error["rule"] as? String == "application_json")
            }
            #expect(try await api.eventCount() == 0)
            for contentType in ["application/json", "Application/JSON; Charset=UTF-8", #"application/json;charset="utf-8""#] {
                let body = HTTPClientRequest.Body.bytes(ByteBuffer(string: batch(skanRegisteredJSON(device: "install-m"))))
                let answer = try await api.exchange(.POST, path, body: body, contentType: contentType)
                #expect(answer.status == 200, "\(contentType)")
            }
            // The other POST routes too; a key is checked first (401 before 415).
            let text = HTTPClientRequest.Body.bytes(ByteBuffer(string: #"{"requested_by": "dsar-portal"}"#))
            #expect(try await api.exchange(.POST, "/v1/apps/\(appA)/devices/install-m/erase", body: text, contentType: "text/plain").status == 415)
            let postback = try await api.exchange(.POST, "/v1/apps/\(appA)/skan/postbacks?network=n", body: text, contentType: "text/plain")
            #expect(postback.status == 415)
            let anonymous = try await api.exchange(.POST, path, key: nil, body: text, contentType: "text/plain")
            #expect(anonymous.status == 401)
        }
    }

    @Test func aKeyTwiceInAnObjectIsRefusedAtAnyDepthAndNamed() async throws {
        try await withAPI { api in
            let path = "/v1/apps/\(appA)/events"
            let event = skanRegisteredJSON(device: "install-d")
            let cases: [(body: String, field: String)] = [
                (#"{"events": [\#(event)], "events": []}"#, "events"),
                (batch(event.replacingOccurrences(of: #""type""#, with: #""id": "\#(UUID())", "type""#)), "events[0].id"),
                (batch(event.replacingOccurrences(of: #"{"skan_version": "4.0"}"#, with: #"{"skan_version": "4.0", "skan_version": "3.0"}"#)),
                 "events[0].data.skan_version"),
                (batch(skanRegisteredJSON(device: "install-d"),
                       firstOpenJSON(device: "install-d").replacingOccurrences(of: #""limit_ad_tracking": false"#,
                                                                                with: #""limit_ad_tracking": false, "limit_ad_tracking": true"#)),
                 "events[1].data.device.limit_ad_tracking"),
            ]
            for (body, field) in cases {
                let answer = try await api.send(.POST, path, json: body)
                #expect(answer.status == 400, "\(field)")
                let error = try apiError(answer.body)
                #expect(error["rule"] as? String == "no_duplicate_keys", "\(field)")
                #expect(error["field"] as? String == field)
                #expect(error["code"] as? String == "malformed_json")
            }
            #expect(try await api.eventCount() == 0)
            let erase = try await api.send(.POST, "/v1/apps/\(appA)/devices/install-d/erase",
                                           json: #"{"requested_by": "dsar-portal", "requested_by": "someone-else"}"#)
            #expect(erase.status == 400)
            #expect(try apiError(erase.body)["field"] as? String == "requested_by")
            #expect(try apiError(erase.body)["rule"] as? String == "no_duplicate_keys")
            // Malformed JSON is still malformed_json / json_syntax, and so is nesting past 512 levels;
            // 500 levels are read (and the event refused by its rules).
            let broken = try await api.send(.POST, path, json: #"{"events": [}"#)
            #expect(try apiError(broken.body)["rule"] as? String == "json_syntax")
            let tooDeep = try await api.send(.POST, path, json: String(repeating: "[", count: 600) + String(repeating: "]", count: 600))
            #expect(try apiError(tooDeep.body)["rule"] as? String == "json_syntax")
            let nested = String(repeating: "[", count: 496) + String(repeating: "]", count: 496)
            let deep = try await api.send(.POST, path, json: batch(event.replacingOccurrences(of: #""4.0""#, with: nested)))
            #expect(deep.status == 400)
            #expect(try apiError(deep.body)["code"] as? String == "invalid_event")
        }
    }
}
