import Foundation
import LedgerTestKit
import Testing

@testable import LedgerProviders

/// Issue 4: "No credential appears in any redacted/stored form (test it)". The credentials are
/// Google's `dev_token` (Google App Conversion Tracking API), Branch's `branch_key` /
/// `branch_secret` (Branch v1/open server-to-server guide; digest: "`branch_secret` is a
/// credential: it must never be written to the ledger or to logs") and Singular's SDK key `a`
/// (Singular SKAdNetwork 4 implementation guide). Every form a request or a configuration can take
/// outside the transport is checked: `redacted()`, its `Codable` encoding (of the request itself,
/// not only of the redacted copy), the decoded stored form, `description`, `debugDescription`,
/// `dump` and `Mirror`, and the messages of errors raised while a credential was in hand.
@Suite("Credentials never appear in a stored or printed form (issue 4)")
struct ProviderCredentialTests {
    static let googleLink = GoogleAppLink(devToken: "goog_SEEKRIT_dev_token", linkID: "31FF8D67E5BB5DD5029DCC2734C2F884")
    static let branchConfig = BranchConfiguration(
        branchKey: "key_live_SEEKRIT_k", branchSecret: "secret_live_SEEKRIT_s", identityKey: "identity_SEEKRIT_key")
    static let singularConfig = SingularConfiguration(sdkKey: "sdk_SEEKRIT_key")

    /// One built request per credential-carrying request kind of the four providers.
    static func builtRequests() throws -> [ProviderRequest] {
        let google = GoogleConversionRequestBuilder(link: googleLink)
        let event = try GASamples.event(.inAppPurchase, value: "1.99", currency: "USD")
        return [
            try google.conversionRequest(for: event),
            try google.crossNetworkRequest(for: event, adEventID: "Q2owS0VRancwZHk0QlJDdXVMX2U1TQ", attributed: true),
            try BranchOpenRequestTests.iOSRequest().build(with: branchConfig),
            try BranchOpenRequestTests.androidRequest().build(with: branchConfig),
            try SingularConversionValueRequestTests.exampleRequest().build(
                with: singularConfig, at: SingularConversionValueRequestTests.exampleNow),
        ]
    }

    /// Every printed form of `value`.
    static func printedForms(_ value: Any) -> [String] {
        var dumped = ""
        dump(value, to: &dumped)
        let mirrored = Mirror(reflecting: value).children.map { "\($0.label ?? ""):\($0.value)" }.joined(separator: ",")
        return ["\(value)", String(describing: value), String(reflecting: value), dumped, mirrored]
    }

    @Test("Google, Branch and Singular: the sent request carries the credential; redacted(), Codable, decoded and printed forms do not")
    func requestForms() throws {
        for request in try Self.builtRequests() {
            let sent = request.urlString + String(decoding: request.body ?? Data(), as: UTF8.self)
            #expect(sent.contains("SEEKRIT"), "the transport must still send the credential")
            #expect(!request.sensitiveFields.isEmpty)

            let stored = request.redacted()
            let storedText = stored.urlString + stored.headers.map { $0.name + $0.value }.joined()
                + String(decoding: stored.body ?? Data(), as: UTF8.self)
            #expect(!storedText.contains("SEEKRIT"), "\(request.provider)")

            // Encoding the request itself (a caller forgetting redacted()) still stores the redacted form.
            for encoded in [try JSONEncoder().encode(request), try JSONEncoder().encode(stored)] {
                #expect(!String(decoding: encoded, as: UTF8.self).contains("SEEKRIT"), "\(request.provider)")
                let decoded = try JSONDecoder().decode(ProviderRequest.self, from: encoded)
                #expect(decoded == stored)
            }
            for form in Self.printedForms(request) {
                #expect(!form.contains("SEEKRIT"), "\(request.provider): \(form)")
                #expect(form.contains(ProviderRequest.redactedMarker))
            }
        }
    }

    @Test("Google, Branch and Singular: configurations print and reflect without their credentials")
    func configurationForms() {
        let values: [Any] = [Self.googleLink, Self.branchConfig, Self.singularConfig]
        for value in values {
            for form in Self.printedForms(value) {
                #expect(!form.contains("SEEKRIT"), "\(form)")
            }
        }
        #expect("\(Self.googleLink)".contains("31FF8D67E5BB5DD5029DCC2734C2F884"))  // link_id is no secret
    }

    @Test("redacted() fails closed: a body that is not a JSON object is replaced whole")
    func redactionFailsClosed() throws {
        for body in ["branch_secret=secret_live_SEEKRIT_s", #"["secret_live_SEEKRIT_s"]"#, #"{"branch_secret":"SEEKRIT""#] {
            let request = ProviderRequest(
                provider: .branch, method: .post, host: "api2.branch.io", path: "/v1/open", body: Data(body.utf8),
                sensitiveFields: [.jsonBodyKey("branch_secret")])
            let stored = request.redacted()
            #expect(!String(decoding: stored.body ?? Data(), as: UTF8.self).contains("SEEKRIT"), "\(body)")
            #expect(stored.body == Data(ProviderRequest.redactedMarker.utf8))
        }
        // A JSON object without the key is left as it is; headers are redacted by name, any case.
        let plain = ProviderRequest(
            provider: .branch, method: .post, host: "h", path: "/", headers: [Header("authorization", "Bearer SEEKRIT")],
            body: Data(#"{"a":1}"#.utf8), sensitiveFields: [.jsonBodyKey("branch_secret"), .header("Authorization")])
        #expect(plain.redacted().body == Data(#"{"a":1}"#.utf8))
        #expect(plain.redacted().headerValue("Authorization") == ProviderRequest.redactedMarker)
    }

    @Test("errors raised while building with credentials in hand never quote them")
    func errorMessagesCarryNoCredential() throws {
        var errors: [ProviderError] = []
        func collect<T>(_ body: () throws(ProviderError) -> T) {
            do { _ = try body() } catch { errors.append(error) }
        }
        var event = try GASamples.event(.inAppPurchase, value: "1,99", currency: "USD")
        collect { () throws(ProviderError) in try GoogleConversionRequestBuilder(link: Self.googleLink).conversionRequest(for: event) }
        event = try GASamples.event(.firstOpen)
        collect { () throws(ProviderError) in
            try GoogleConversionRequestBuilder(link: Self.googleLink).crossNetworkRequest(for: event, adEventID: "", attributed: true)
        }
        let original = try GoogleConversionRequestBuilder(link: Self.googleLink).conversionRequest(for: event)
        collect { () throws(ProviderError) in
            try GoogleConversionRequestBuilder.crossNetworkRequest(derivedFrom: original.redacted(), adEventID: "x", attributed: true)
        }
        var branch = BranchOpenRequestTests.iOSRequest()
        branch.osVersion = " "
        collect { () throws(ProviderError) in try branch.build(with: Self.branchConfig) }
        branch = BranchOpenRequestTests.iOSRequest()
        branch.devicePublicIP = "10.0.0.1"
        collect { () throws(ProviderError) in try branch.build(with: Self.branchConfig) }
        var singular = SingularConversionValueRequestTests.exampleRequest()
        singular.idfa = "IDFA"
        collect { () throws(ProviderError) in try singular.build(with: Self.singularConfig, at: SingularConversionValueRequestTests.exampleNow) }
        #expect(errors.count == 6)
        for error in errors {
            #expect(!error.description.contains("SEEKRIT"), "\(error.field)")
            #expect(!error.message.contains("SEEKRIT"))
        }
    }

    @Test("Branch v1/open server-to-server guide: a refused or failed Branch answer's detail never holds the body, which could echo branch_secret")
    func classifierDetailsCarryNoCredential() {
        let echo = Data(#"{"error":{"message":"bad request","branch_secret":"secret_live_SEEKRIT_s"}}"#.utf8)
        for status in [400, 401, 403, 429, 500, 302] {
            for attempt in [1, 10] {
                let disposition = BranchClassifier.classify(.response(ProviderResponse(status: status, body: echo)), attempt: attempt, now: testNow)
                if case .failed(_, let detail) = disposition { #expect(!detail.contains("SEEKRIT"), "\(status)") }
            }
        }
    }
}
