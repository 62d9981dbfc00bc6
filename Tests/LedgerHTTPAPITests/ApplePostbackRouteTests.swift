import AsyncHTTPClient
import Foundation
import LedgerDomain
import LedgerHTTPAPI
import LedgerPostgres
import LedgerTestKit
import NIOCore
import NIOHTTP1
import Testing

/// The stanza printed in Apple's AdAttributionKit "Identifying the parameters in a postback"; it
/// verifies with `apple-development-identifier/1` from "Verifying a postback" (the
/// LedgerSKANPostbacks tests check it in detail).
let appleAAKExample = """
    {"jws-string": "eyJraWQiOiJhcHBsZS1kZXZlbG9wbWVudC1pZGVudGlmaWVyXC8xIiwiYWxnIjoiRVMyNTYifQ.eyJwb3N0YmFjay1pZGVudGlmaWVyIjoiODU1NDZFQjctRkQzOS00NEJDLTg5OTAtQzk4QTRBQzM2QTQ5IiwicHVibGlzaGVyLWl0ZW0taWRlbnRpZmllciI6MCwibWFya2V0cGxhY2UtaWRlbnRpZmllciI6ImNvbS5hcHBsZS5BcHBTdG9yZSIsImltcHJlc3Npb24tdHlwZSI6ImFwcC1pbXByZXNzaW9uIiwiYWQtbmV0d29yay1pZGVudGlmaWVyIjoiZGV2ZWxvcG1lbnQuYWRhdHRyaWJ1dGlvbmtpdCIsImRpZC13aW4iOnRydWUsInBvc3RiYWNrLXNlcXVlbmNlLWluZGV4IjowLCJjb252ZXJzaW9uLXR5cGUiOiJyZS1lbmdhZ2VtZW50Iiwic291cmNlLWlkZW50aWZpZXIiOiIxMjM0IiwiYWR2ZXJ0aXNlZC1pdGVtLWlkZW50aWZpZXIiOjEwNzM4MDI3NzU2fQ.bAdNwKd6OfHK9tofvjjua4X_JPcFTxXPQSspD9gZkinw97pY7R1aI-LSjl-oxZZF3_K2H5JK5TSEBee4_1U4oQ",
     "conversion-value": 24, "ad-interaction-type": "click", "country-code": "US"}
    """

/// Apple's SKAdNetwork 4.0 example postback ("Verifying an install-validation postback"), signed with Apple's key.
let appleSKANExample = """
    {"version": "4.0", "ad-network-id": "com.example", "source-identifier": "5239",
     "app-id": 525463029, "transaction-id": "6aafb7a5-0170-41b5-bbe4-fe71dedf1e30",
     "redownload": false, "source-domain": "example.com", "fidelity-type": 1, "did-win": true,
     "conversion-value": 63, "postback-sequence-index": 0,
     "attribution-signature": "MEUCIGRmSMrqedNu6uaHyhVcifs118R5z/AB6cvRaKrRRHWRAiEAv96ne3dKQ5kJpbsfk4eYiePmrZUU6sQmo+7zfP/1Bxo="}
    """

/// Apple's developer copies (AdAttributionKit and SKAdNetwork "Configuring an advertised app"):
/// unauthenticated, bound to an app by the host name they reached.
@Suite("Apple developer-copy routes", .database, .serialized)
struct ApplePostbackRouteTests {
    static let aakApp = "10738027756"
    static let skanApp = "525463029"

    func configure(_ configuration: inout LedgerHTTPConfiguration, development: Bool = true,
                   limit: HTTPRateLimit = HTTPRateLimit(requestsPerSecond: 10, burst: 50)) {
        configuration.applePostbacks = ApplePostbackSettings(
            copyHosts: ["aak.example.com": try! AppID(Self.aakApp), "skan.example.com": try! AppID(Self.skanApp)],
            developmentKeyApps: development ? [try! AppID(Self.aakApp)] : [], copyRateLimit: limit)
    }

    func copy(_ api: RunningAPI, _ path: String, host: String, body: String) async throws -> (status: Int, body: Data) {
        let answer = try await api.exchange(.POST, path, key: nil, body: .bytes(ByteBuffer(string: body)), headers: [("Host", host)])
        return (answer.status, answer.body)
    }

    func rows(_ api: RunningAPI, _ type: String) async throws -> [(stream: String, network: String, verification: String)] {
        try await api.pool.query("""
            SELECT stream_id, data ->> 'forwarding_network', data ->> 'verification' FROM events WHERE event_type = \(type)
            ORDER BY position
            """).map { (try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1), try $0.decode(String.self, at: 2)) }
    }

    @Test("both postback routes refuse a missing network and a bad Idempotency-Key, naming the field and rule, storing nothing")
    func postbackRoutesRefuseBadIntake() async throws {
        try await withAPI { api in
            for (route, stanza) in [("skan", appleSKANExample), ("aak", appleAAKExample)] {
                for (query, headers, field, rule) in [
                    ("", [(String, String)](), "network", "required"), ("?network=", [], "network", "required"),
                    ("?network=n", [("Idempotency-Key", "not-a-uuid")], "Idempotency-Key", "uuid"),
                ] {
                    let refused = try await api.send(.POST, "/v1/apps/\(appA)/\(route)/postbacks\(query)",
                                                     body: .bytes(ByteBuffer(string: stanza)), headers: headers)
                    #expect(refused.status == 400, "\(route)\(query)")
                    let error = try apiError(refused.body)
                    #expect(error["field"] as? String == field && error["rule"] as? String == rule, "\(route)\(query): \(error)")
                }
            }
            #expect(try await api.eventCount() == 0)
        }
    }

    @Test("an AdAttributionKit copy POSTed to the well-known path of a configured host is stored under that app, verified")
    func aakCopyStoredUnderItsHost() async throws {
        try await withAPI(configure: { configure(&$0) }) { api in
            let answer = try await copy(api, "/.well-known/appattribution/report-attribution/", host: "AAK.example.com:443",
                                        body: appleAAKExample)
            #expect(answer.status == 200, "\(String(decoding: answer.body, as: UTF8.self))")
            let stored = try await rows(api, "AAKPostbackReceived")
            #expect(stored.count == 1)
            #expect(stored.first?.stream == "skan-\(Self.aakApp)/aak/85546EB7-FD39-44BC-8990-C98A4AC36A49")
            #expect(stored.first?.network == "apple-developer-copy" && stored.first?.verification == "valid")
            // Without the trailing slash too; sent again, it is a second record, not a second count.
            let again = try await copy(api, "/.well-known/appattribution/report-attribution", host: "aak.example.com",
                                       body: appleAAKExample)
            #expect(again.status == 200)
            let duplicates = try await api.pool.query(
                "SELECT count(*) FROM events WHERE event_type = 'AAKPostbackReceived' AND data ? 'duplicate_of'").single()
                .decode(Int.self, at: 0)
            #expect(duplicates == 1)
        }
    }

    @Test("a SKAdNetwork copy POSTed to its well-known path of a configured host is stored under that app")
    func skanCopyStoredUnderItsHost() async throws {
        try await withAPI(configure: { configure(&$0) }) { api in
            let answer = try await copy(api, "/.well-known/skadnetwork/report-attribution/", host: "skan.example.com", body: appleSKANExample)
            #expect(answer.status == 200, "\(String(decoding: answer.body, as: UTF8.self))")
            let stored = try await rows(api, "SKANPostbackReceived")
            #expect(stored.map(\.stream) == ["skan-\(Self.skanApp)/6aafb7a5-0170-41b5-bbe4-fe71dedf1e30"])
            #expect(stored.first?.verification == "valid")
        }
    }

    @Test("an unknown host is 404 and another app's host is 403: a copy is never stored under another app")
    func hostsBindApps() async throws {
        try await withAPI(configure: { configure(&$0) }) { api in
            let unknown = try await copy(api, "/.well-known/appattribution/report-attribution/", host: "evil.example.net",
                                         body: appleAAKExample)
            #expect(unknown.status == 404)
            let unknownError = try apiError(unknown.body)
            #expect(unknownError["rule"] as? String == "configured_copy_host")
            // The SKAN app's host, an AAK postback of the other app: refused, nothing stored.
            let crossed = try await copy(api, "/.well-known/appattribution/report-attribution/", host: "skan.example.com",
                                         body: appleAAKExample)
            #expect(crossed.status == 403)
            let crossedSKAN = try await copy(api, "/.well-known/skadnetwork/report-attribution/", host: "aak.example.com",
                                             body: appleSKANExample)
            #expect(crossedSKAN.status == 403)
            // The API route with another app's key cannot store it either.
            let viaAPI = try await api.send(.POST, "/v1/apps/\(appA)/aak/postbacks?network=n", json: appleAAKExample)
            #expect(viaAPI.status == 403)
            let events = try await api.eventCount()
            #expect(events == 0)
        }
    }

    @Test("a development-key copy is refused unless the app's configuration allows development keys")
    func developmentKeysRefused() async throws {
        try await withAPI(configure: { configure(&$0, development: false) }) { api in
            let answer = try await copy(api, "/.well-known/appattribution/report-attribution/", host: "aak.example.com",
                                        body: appleAAKExample)
            #expect(answer.status == 400)
            let error = try apiError(answer.body)
            #expect(error["field"] as? String == "jws-string.header.kid" && error["rule"] as? String == "production_key_only")
            let events = try await api.eventCount()
            #expect(events == 0)
        }
    }

    @Test("copies are size-capped (413) and rate-limited per app (429)")
    func sizeAndRate() async throws {
        try await withAPI(configure: { configure(&$0, limit: HTTPRateLimit(requestsPerSecond: 0.001, burst: 2)) }) { api in
            let path = "/.well-known/appattribution/report-attribution/"
            let big = #"{"jws-string": "\#(String(repeating: "A", count: 20_000))"}"#
            let tooLarge = try await copy(api, path, host: "aak.example.com", body: big)
            let first = try await copy(api, path, host: "aak.example.com", body: appleAAKExample)
            let second = try await copy(api, path, host: "aak.example.com", body: appleAAKExample)
            let stored = try await rows(api, "AAKPostbackReceived")
            #expect(tooLarge.status == 413 && first.status == 200 && second.status == 429)
            #expect(stored.count == 1)
        }
    }
}
