import Foundation
import LedgerDispatch
import LedgerFakeProviders
import LedgerHTTPTransport
import LedgerProviders
import LedgerTestKit
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The fakes are strict: each checks every request against its provider's document before
/// anything else, refuses a bad one as the provider does (or `400` naming the rule where the
/// document is silent), and notes it. Each kind of bad request, per provider, starting from a
/// request the real builders made and breaking one thing.
@Suite("Fakes: every bad request is refused")
struct FakeRefusalTests {
    /// Sends `request`, expects `status` and exactly one new anomaly, refused, with `rule` (declared
    /// as expected for the end-of-test check). Returns the answer.
    @discardableResult
    func expectRefused(
        _ request: ProviderRequest, _ fakes: FakeProviders, _ transport: HTTPProviderTransport, provider: Provider?, rule: String,
        status: Int, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> TransportResponse {
        fakes.expectAnomaly(provider, rule)
        let before = fakes.anomalies.count
        let answer = try await send(transport, request, sourceLocation: sourceLocation)
        #expect(answer.response.status == status, sourceLocation: sourceLocation)
        let noted = Array(fakes.anomalies.dropFirst(before))
        #expect(noted.map(\.rule) == [rule], "\(noted)", sourceLocation: sourceLocation)
        #expect(noted.allSatisfy { $0.refused && $0.provider == provider }, "\(noted)", sourceLocation: sourceLocation)
        return answer
    }

    /// `request` with the query parameter `name` removed (`nil`) or set to `value`.
    func with(_ request: ProviderRequest, _ name: String, _ value: String?) -> ProviderRequest {
        var copy = request
        if let index = copy.query.firstIndex(where: { $0.name == name }) {
            if let value { copy.query[index].value = value } else { copy.query.remove(at: index) }
        } else if let value {
            copy.query.append(QueryItem(name, value))
        }
        return copy
    }

    /// `request` with the header `name` removed (`nil`) or set to `value`.
    func with(_ request: ProviderRequest, header name: String, _ value: String?) -> ProviderRequest {
        var copy = request
        copy.headers.removeAll { $0.name.lowercased() == name.lowercased() }
        if let value { copy.headers.append(Header(name, value)) }
        return copy
    }

    /// `request` with its JSON body changed by `change`.
    func with(_ request: ProviderRequest, body change: (inout [String: Any]) -> Void) throws -> ProviderRequest {
        let body = try #require(request.body)
        var object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        change(&object)
        var copy = request
        copy.body = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        return copy
    }

    // MARK: Google (Google App Conversion Tracking API)

    @Test func googleRefusesWhatBreaksItsDocument() async throws {
        try await withFakes { fakes, transport in
            let builder = GoogleSample.builder(fakes)
            let valid = try builder.conversionRequest(for: GoogleSample.event(.firstOpen))
            func refused(_ request: ProviderRequest, _ rule: String, code: String, status: Int = 400,
                         sourceLocation: SourceLocation = #_sourceLocation) async throws {
                let answer = try await expectRefused(request, fakes, transport, provider: .google, rule: rule, status: status,
                                                     sourceLocation: sourceLocation)
                let parsed = try GoogleConversionResponse.parse(answer.response.body)
                #expect(parsed.errors.map(\.raw) == [code] && !parsed.attributed, sourceLocation: sourceLocation)
            }
            var get = valid
            get.method = .get
            try await expectRefused(get, fakes, transport, provider: .google, rule: "wrong_method", status: 405)
            for name in GoogleSampleRequired.names {
                try await refused(with(valid, name, nil), "missing_parameter", code: "MISSING_\(name.uppercased())")
            }
            try await refused(with(valid, "dev_token", ProviderRequest.redactedMarker), "wrong_credential", code: "INVALID_DEV_TOKEN")
            try await refused(with(valid, "dev_token", "another-token"), "wrong_credential", code: "INVALID_DEV_TOKEN")
            try await refused(with(valid, "link_id", "ANOTHERLINK"), "wrong_credential", code: "INVALID_LINK_ID")
            try await refused(with(valid, "gclid_typo", "x"), "unknown_parameter", code: "INVALID_PARAMETER")
            try await refused(with(valid, "attributed", "1"), "unknown_parameter", code: "INVALID_PARAMETER")
            try await refused(with(valid, "app_event_type", "install"), "invalid_parameter", code: "INVALID_APP_EVENT_TYPE")
            try await refused(with(valid, "app_event_type", "custom"), "missing_parameter", code: "MISSING_APP_EVENT_NAME")
            try await refused(with(with(valid, "app_event_type", "custom"), "app_event_name", "first_open"), "invalid_parameter",
                              code: "APP_EVENT_NAME_RESERVED_VALUE")
            try await refused(with(valid, "app_event_name", "level_up"), "invalid_parameter", code: "INVALID_APP_EVENT_NAME")
            try await refused(with(valid, "rdid", "not-a-uuid"), "invalid_parameter", code: "INVALID_RDID")
            try await refused(with(valid, "id_type", "advertisingid"), "invalid_parameter", code: "INVALID_ID_TYPE")
            try await refused(with(valid, "lat", "2"), "invalid_parameter", code: "INVALID_LAT")
            try await refused(with(valid, "timestamp", "1432681913.1234567"), "invalid_parameter", code: "INVALID_TIMESTAMP")
            try await refused(with(valid, "timestamp", "1.4e9"), "invalid_parameter", code: "INVALID_TIMESTAMP")
            try await refused(with(with(valid, "value", "1,99"), "currency_code", "USD"), "invalid_parameter", code: "INVALID_VALUE")
            try await refused(with(valid, "value", "1.99"), "missing_parameter", code: "MISSING_CURRENCY_CODE")
            try await refused(with(with(valid, "value", "1.99"), "currency_code", "usd"), "invalid_parameter",
                              code: "INVALID_CURRENCY_CODE")
            try await refused(with(valid, header: "User-Agent", nil), "missing_header", code: "MISSING_USER_AGENT")
            try await refused(with(valid, header: "User-Agent", "MyAnalyticsCompany/1.0.0 (iOS 10.0.2; en_US; iPhone9,1; Build/13D15)"),
                              "user_agent_format", code: "INVALID_USER_AGENT")
            try await refused(with(valid, header: "X-Forwarded-For", nil), "missing_header", code: "MISSING_X_FORWARDED_FOR")
            try await refused(with(valid, header: "X-Forwarded-For", "10.1.2.3"), "x_forwarded_for_public_ip",
                              code: "INVALID_X_FORWARDED_FOR")
            try await refused(with(valid, header: "Content-Type", "text/plain"), "content_type_json", code: "INVALID_CONTENT_TYPE")
            for body in [#"{"app_event_data":{"level":1e3}}"#, #"{"app_event_data":{"level":{"n":5}}}"#,
                         #"{"event_data":{"level":5}}"#, #"{"app_event_data":{"items":[["a"]]}}"#, "level=5"] {
                var request = with(valid, header: "Content-Length", nil)
                request.body = Data(body.utf8)
                try await refused(request, "invalid_app_event_data", code: "INVALID_APP_EVENT_DATA")
            }
            #expect(fakes.google.issuedAdEventIDs.isEmpty, "no refused request reached the model")

            // A POST without a body and without Content-Length (the transport always adds it).
            fakes.expectAnomaly(.google, "content_length_required")
            let raw = try await rawExchange(
                port: fakes.port,
                "POST \(valid.path)?\(valid.encodedQuery) HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: \(valid.headerValue("User-Agent") ?? "")\r\n"
                    + "X-Forwarded-For: 216.58.194.174\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n")
            #expect(raw.hasPrefix("HTTP/1.1 411"), "\(raw.prefix(80))")
        }
    }

    // Google App Conversion Tracking API: the cross-network request is "identical to the original
    // conversion tracking request", for an ad event Google answered, with `attributed` 0 or 1.
    @Test func googleRefusesACrossNetworkReportThatIsNotTheConversionsOwn() async throws {
        try await withFakes { fakes, transport in
            let builder = GoogleSample.builder(fakes)
            let event = try GoogleSample.event(.firstOpen)
            let conversion = try GoogleConversionResponse.parse(try await send(transport, try builder.conversionRequest(for: event)).response.body)
            let adEventID = try #require(conversion.lastClick?.adEventID)
            let report = try builder.crossNetworkRequest(for: event, adEventID: adEventID, attributed: true)
            try await expectRefused(with(report, "ad_event_id", "never-issued"), fakes, transport, provider: .google,
                                    rule: "unknown_ad_event_id", status: 400)
            try await expectRefused(with(report, "ad_event_id", nil), fakes, transport, provider: .google, rule: "missing_parameter",
                                    status: 400)
            try await expectRefused(with(report, "attributed", "yes"), fakes, transport, provider: .google, rule: "invalid_parameter",
                                    status: 400)
            try await expectRefused(with(report, "app_version", "9.9.9"), fakes, transport, provider: .google,
                                    rule: "not_identical_to_conversion", status: 400)
            try await expectRefused(with(report, header: "X-Forwarded-For", "8.8.8.8"), fakes, transport, provider: .google,
                                    rule: "not_identical_to_conversion", status: 400)
            // The report itself is answered, once; the same report again is answered and noted.
            #expect(try await send(transport, report).response.status == 200)
            #expect(fakes.anomalies.count == 5)
            fakes.expectAnomaly(.google, "repeated_cross_network")
            #expect(try await send(transport, report).response.status == 200)
            #expect(fakes.google.anomalies.last.map { ($0.rule, $0.refused) } ?? ("", true) == ("repeated_cross_network", false))
            // A changed decision (`attributed` 0 after 1) is a correction, not a repeat.
            #expect(try await send(transport, try builder.crossNetworkRequest(for: event, adEventID: adEventID, attributed: false))
                .response.status == 200)
            #expect(fakes.anomalies.count == 6)
        }
    }

    // MARK: Apple AdServices (Apple AdServices attribution API)

    @Test func appleRefusesWhatBreaksItsDocument() async throws {
        try await withFakes { fakes, transport in
            let valid = try AppleSample.request(fakes, token: "dG9rZW4tcmVmdXNhbHM=")
            var get = valid
            get.method = .get
            get.body = nil
            try await expectRefused(get, fakes, transport, provider: .appleAdServices, rule: "wrong_method", status: 405)
            try await expectRefused(with(valid, header: "Content-Type", "application/json"), fakes, transport,
                                    provider: .appleAdServices, rule: "content_type_text_plain", status: 400)
            try await expectRefused(with(valid, "token", "dG9rZW4tcmVmdXNhbHM="), fakes, transport, provider: .appleAdServices,
                                    rule: "unknown_parameter", status: 400)
            for (body, rule) in [("", "token_required"), ("not a token!", "token_base64"), ("dG9rZW4t cmVmdXNhbHM=", "token_base64"),
                                 ("dG9rZW4tcmVmdXNhbHM=\n", "token_base64"), ("dG9rZW4=\ndG9rZW4=", "token_base64"),
                                 ("bmV2ZXItaXNzdWVk", "unknown_token")] {
                var request = valid
                request.body = Data(body.utf8)
                try await expectRefused(request, fakes, transport, provider: .appleAdServices, rule: rule, status: 400)
            }
            #expect(fakes.apple.lookups(of: "dG9rZW4tcmVmdXNhbHM=") == 0, "no refused request reached the model")
            #expect(try await send(transport, valid).response.status == 200)
        }
    }

    // MARK: Branch (Branch v1/open server-to-server guide)

    @Test func branchRefusesWhatBreaksItsDocument() async throws {
        try await withFakes { fakes, transport in
            fakes.branch.setRapidRepeatInterval(.zero)
            let valid = try BranchSample.open(firstSession: true).build(with: BranchSample.configuration(fakes))
            func refused(_ request: ProviderRequest, _ rule: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
                let answer = try await expectRefused(request, fakes, transport, provider: .branch, rule: rule, status: 400,
                                                     sourceLocation: sourceLocation)
                #expect(answer.response.bodyText.contains(rule), sourceLocation: sourceLocation)
            }
            var get = valid
            get.method = .get
            get.body = nil
            try await expectRefused(get, fakes, transport, provider: .branch, rule: "wrong_method", status: 405)
            try await refused(with(valid, header: "X-IP-Override", nil), "missing_header")
            try await refused(with(valid, header: "X-IP-Override", "192.168.1.20"), "ip_override_public_ip")
            try await refused(with(valid, header: "Content-Type", "text/plain"), "content_type_json")
            var notJSON = valid
            notJSON.body = Data("branch_key=key_live_k3y".utf8)
            try await refused(notJSON, "json_body")
            for key in ["branch_key", "branch_secret", "server_to_server", "app_version", "os", "os_version", "user_agent",
                        "is_hardware_id_real"] {
                try await refused(try with(valid) { $0[key] = nil }, "missing_parameter")
            }
            for (key, value) in [("branch_key", ProviderRequest.redactedMarker), ("branch_key", "key_live_someone_else"),
                                 ("branch_secret", ProviderRequest.redactedMarker), ("branch_secret", "secret_live_other")] {
                try await refused(try with(valid) { $0[key] = value }, "wrong_credential")
            }
            try await refused(try with(valid) { $0["server_to_server"] = false }, "invalid_parameter")
            try await refused(try with(valid) { $0["os"] = "ios" }, "invalid_parameter")
            try await refused(try with(valid) { $0["device_fingerprint"] = "x" }, "unknown_parameter")
            try await refused(try with(valid) { $0["first_session"] = "true" }, "wrong_type")
            try await refused(try with(valid) { $0["app_version"] = "  " }, "wrong_type")
            try await refused(try with(valid) { $0["google_advertising_id"] = "ea31e5e0-1aa5-4181-91d7-0b56524e0274" },
                              "invalid_parameter")
            try await refused(try with(valid) { $0["is_hardware_id_real"] = false }, "invalid_parameter")
            try await refused(try with(valid) { $0["hardware_id_type"] = nil }, "invalid_parameter")
            try await refused(try with(valid) { $0["ad_tracking_enabled"] = false }, "invalid_parameter")
            try await refused(try with(valid) { $0["server_to_server_identity"] = nil; $0["randomized_bundle_token"] = "1" },
                              "invalid_parameter")
            try await refused(try with(valid) { $0["first_session"] = false; $0["local_url"] = "https://example.app.link/x" },
                              "invalid_parameter")
            #expect(fakes.branch.deviceCount == 0, "no refused request reached the model")
            #expect(try await send(transport, valid).response.status == 200)
        }
    }

    // MARK: Singular (Singular SKAdNetwork 4 implementation guide)

    @Test func singularRefusesWhatBreaksItsDocument() async throws {
        try await withFakes { fakes, transport in
            let now = Date()
            let valid = try SingularSample.request(revenueUSD: "9.99", now: now).build(with: SingularSample.configuration(fakes), at: now)
            func refused(_ request: ProviderRequest, _ rule: String, reason kind: SingularErrorReason.Kind,
                         sourceLocation: SourceLocation = #_sourceLocation) async throws {
                let answer = try await expectRefused(request, fakes, transport, provider: .singular, rule: rule, status: 200,
                                                     sourceLocation: sourceLocation)
                let parsed = try SingularConversionValueResponse.parse(answer.response.body)
                guard case .rejected(let reason) = parsed.outcome else {
                    Issue.record("expected a rejection, got \(parsed.outcome)", sourceLocation: sourceLocation)
                    return
                }
                #expect(reason.kind == kind, "\(reason.text)", sourceLocation: sourceLocation)
            }
            var post = valid
            post.method = .post
            try await expectRefused(post, fakes, transport, provider: .singular, rule: "wrong_method", status: 405)
            try await refused(with(valid, "p", "Android"), "platform_ios", reason: .unknownPlatform)
            for name in ["a", "i", "v", "app_v", "n", "idfv", "skan_first_call_to_skadnetwork_timestamp",
                         "skan_last_call_to_skadnetwork_timestamp"] {
                try await refused(with(valid, name, nil), "missing_parameter", reason: .invalidParameter)
            }
            try await refused(with(valid, "a", ProviderRequest.redactedMarker), "wrong_credential", reason: .conversionModelNotFound)
            try await refused(with(valid, "a", "reporting-api-key"), "wrong_credential", reason: .conversionModelNotFound)
            try await refused(with(valid, "event_name", "x"), "unknown_parameter", reason: .invalidParameter)
            try await refused(with(valid, "idfv", "21DB6612"), "invalid_parameter", reason: .invalidParameter)
            try await refused(with(valid, "idfa", "not-an-idfa"), "invalid_parameter", reason: .invalidParameter)
            try await refused(with(valid, "skan_current_conversion_value", "64"), "invalid_parameter", reason: .invalidParameter)
            try await refused(with(valid, "p1_coarse", "3"), "invalid_parameter", reason: .invalidParameter)
            try await refused(with(valid, "skan_first_call_to_skadnetwork_timestamp", "1.5e9"), "invalid_parameter",
                              reason: .invalidParameter)
            try await refused(with(valid, "skan_last_call_to_skadnetwork_timestamp", "1"), "invalid_parameter",
                              reason: .invalidParameter)
            try await refused(with(valid, "skan_total_revenue_by_currency", "{USD:9.99}"), "invalid_parameter",
                              reason: .invalidParameter)
            try await refused(with(valid, "skan_total_revenue_by_currency", #"{"USD":1e1}"#), "invalid_parameter",
                              reason: .invalidParameter)
            #expect(fakes.singular.eventsSeen(idfv: "21DB6612-09B3-4ECC-84AC-B353B0AF1334") == 0, "no refused request reached the model")

            // Singular SKAdNetwork 4 implementation guide: "Não forneça um corpo de pedido" (the
            // transport sends no body with a GET).
            fakes.expectAnomaly(.singular, "body_not_allowed")
            let raw = try await rawExchange(
                port: fakes.port,
                "GET \(valid.path)?\(valid.encodedQuery) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
            #expect(raw.hasPrefix("HTTP/1.1 400"), "\(raw.prefix(80))")
            #expect(try await send(transport, valid).response.status == 200)
        }
    }

    // MARK: Scripts and paths

    // A scripted answer only chooses the answer to a valid request: a bad one is refused whatever
    // the script says, and leaves the script for the next valid request.
    @Test func aScriptedAnswerNeverCoversABadRequest() async throws {
        try await withFakes { fakes, transport in
            let valid = try AppleSample.request(fakes, token: "c2NyaXB0ZWQ=")
            fakes.apple.enqueue(.status(200, body: #"{"attribution":false}"#), .dropConnection)
            var get = valid
            get.method = .get
            get.body = nil
            try await expectRefused(get, fakes, transport, provider: .appleAdServices, rule: "wrong_method", status: 405)
            try await expectRefused(with(valid, header: "Content-Type", "application/json"), fakes, transport,
                                    provider: .appleAdServices, rule: "content_type_text_plain", status: 400)
            #expect(fakes.apple.recorder.pendingScript.count == 2)
            let answer = try await send(transport, valid)
            #expect(answer.response.status == 200 && answer.response.bodyText == #"{"attribution":false}"#)
            #expect(await sendExpectingError(transport, valid)?.code == .connectionLost)
            #expect(fakes.apple.recorder.pendingScript.isEmpty)
        }
    }

    // A version of the API the document does not name is a path no fake serves.
    @Test func aPathNoDocumentNamesIsNotServed() async throws {
        try await withFakes { fakes, transport in
            var request = try GoogleSample.builder(fakes).conversionRequest(for: GoogleSample.event(.firstOpen))
            request.path = "/pagead/conversion/app/2.0"
            fakes.expectAnomaly(nil, "unknown_path")
            #expect(try await send(transport, request).response.status == 404)
            #expect(fakes.google.requestCount == 0 && fakes.unroutedRequests.count == 1)
        }
    }
}

/// The Google App Conversion Tracking API's required query parameters, as the tests name them.
enum GoogleSampleRequired {
    static let names = [
        "dev_token", "link_id", "app_event_type", "rdid", "id_type", "lat", "app_version", "os_version", "sdk_version", "timestamp",
    ]
}

extension ProviderResponse {
    /// The body as text.
    var bodyText: String { String(decoding: body, as: UTF8.self) }
}

/// Writes `text` to the fakes' port as is and reads the answer until the server closes: for what
/// the transport would never send (a body on a GET, a POST without `Content-Length`). On a thread
/// of its own, off the cooperative pool.
func rawExchange(port: Int, _ text: String) async throws -> String {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try rawExchangeBlocking(port: port, text) }) }.start()
    }
}

/// What a raw exchange failed on.
struct RawExchangeError: Error, CustomStringConvertible {
    var description: String
}

private func rawExchangeBlocking(port: Int, _ text: String) throws -> String {
    let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socketFD >= 0 else { throw RawExchangeError(description: "socket: errno \(errno)") }
    defer { close(socketFD) }
    var timeout = timeval(tv_sec: 30, tv_usec: 0)
    setsockopt(socketFD, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    _ = inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { throw RawExchangeError(description: "connect: errno \(errno)") }
    let bytes = Array(text.utf8)
    var sent = 0
    while sent < bytes.count {
        let written = bytes[sent...].withUnsafeBytes { write(socketFD, $0.baseAddress, $0.count) }
        guard written > 0 else { throw RawExchangeError(description: "write: errno \(errno)") }
        sent += written
    }
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(socketFD, $0.baseAddress, $0.count) }
        guard count > 0 else { break }
        answer += buffer[0..<count]
    }
    return String(decoding: answer, as: UTF8.self)
}
