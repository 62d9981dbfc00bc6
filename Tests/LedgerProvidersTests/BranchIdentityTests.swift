import Foundation
import Testing

@testable import LedgerProviders

/// Branch v1/open server-to-server guide, `randomized_bundle_token`: "If server_to_server_identity
/// is true, Branch returns a new identity value in any request that does not set
/// randomized_bundle_token. After the first request, this property must be hardcoded with the
/// randomized_bundle_token received in the first network response." Issue 4 item 4:
/// "`randomized_bundle_token` once known".
@Suite("Branch server-to-server identity: randomized_bundle_token once known (Branch v1/open server-to-server guide)")
struct BranchIdentityTests {
    static func open(firstSession: Bool?, token: String?) -> BranchOpenRequest {
        var request = BranchOpenRequestTests.iOSRequest()
        request.serverToServerIdentity = true
        request.firstSession = firstSession
        request.randomizedBundleToken = token
        return request
    }

    // Branch v1/open server-to-server guide: the first open does not set the token; Branch answers
    // with one.
    @Test func firstOpenGoesWithoutToken() throws {
        let body = try Self.open(firstSession: true, token: nil).bodyFields(BranchOpenRequestTests.config)
        #expect(body["server_to_server_identity"] == .bool(true))
        #expect(body["randomized_bundle_token"] == nil)
        #expect(body["first_session"] == .bool(true))
    }

    // Branch v1/open server-to-server guide: "After the first request, this property must be
    // hardcoded …": a later open (first_session false) without the token is refused, naming the
    // field and the rule.
    @Test func laterOpenWithoutTokenIsRefused() {
        expectProviderError(field: "randomized_bundle_token", rule: "required_after_first_open", kind: .invalidRequest) {
            _ = try Self.open(firstSession: false, token: nil).build(with: BranchOpenRequestTests.config)
        }
        // Without server_to_server_identity there is no token to carry: a plain OPEN is fine.
        var plain = BranchOpenRequestTests.iOSRequest()
        plain.firstSession = false
        #expect(throws: Never.self) { _ = try plain.build(with: BranchOpenRequestTests.config) }
    }

    // Branch v1/open server-to-server guide, "Example organic response, with
    // server_to_server_identity enabled": the answer's token is what the next open carries; the
    // provider-rules digest's facts beyond the providers' documents keep the device token too.
    @Test func tokenFromTheFirstAnswerGoesIntoTheNextOpen() throws {
        let answer = try BranchOpenResponse.parse(Data(#"""
            {"session_id":"823602214081710808","randomized_bundle_token":"791040498773585647",
             "randomized_device_token":"823601870295755491","data":"{\"+clicked_branch_link\":false,\"+is_first_session\":true}"}
            """#.utf8))
        let token = try #require(answer.randomizedBundleToken)
        #expect(answer.randomizedDeviceToken == "823601870295755491")
        let next = try Self.open(firstSession: false, token: token).build(with: BranchOpenRequestTests.config)
        guard let members = json(next.body).membersByKey else {
            Issue.record("the body must be a JSON object")
            return
        }
        #expect(members["randomized_bundle_token"] == .string("791040498773585647"))
        #expect(members["first_session"] == .bool(false))
        #expect(members["server_to_server_identity"] == .bool(true))
        // Blank is not "known".
        expectProviderError(field: "randomized_bundle_token", rule: "not_blank") {
            _ = try Self.open(firstSession: false, token: " ").build(with: BranchOpenRequestTests.config)
        }
    }
}
