import Foundation
import LedgerDomain
import Testing

@testable import LedgerProviders

@Suite("Branch v1/open response (Branch v1/open server-to-server guide, \"Handling deep link data\")")
struct BranchOpenResponseTests {
    // The four sample responses, verbatim from the Branch v1/open server-to-server guide.
    static let organic = """
        {
           "session_id": "xxxx",
           "randomized_device_token": "xxxx",
           "link": "https://bnc.lt/j/adsf",
           "data": "{\\"+clicked_branch_link\\":false,\\"+is_first_session\\":false}"
        }
        """

    static let organicWithIdentity = """
        {
           "session_id": "xxxx",
           "randomized_bundle_token": "xxxx",
           "identity": "xxxx",
           "randomized_device_tokenrandomized_device_token": "xxxx",
           "link": "https://bnc.lt/j/adsf",
           "data": "{\\"+clicked_branch_link\\":false,\\"+is_first_session\\":false}"
        }
        """

    static let nonBranchLink = """
        {
           "session_id": "823602214081710808",
           "data": "{\\"+non_branch_link\\":\\"https://branch.io/\\",\\"+clicked_branch_link\\":false,\\"+is_first_session\\":false}",
          "randomized_device_token": "823601870295755491"
        }
        """

    static let branchLinkDataObject = """
        {
                    "$canonical_url": "https://example.com/home?utm_campaign=test",
                    "$desktop_url": "http://example.com/home",
                    "$og_description": "My Content Description",
                    "$og_image_url": "http://lorempixel.com/200/200/",
                    "$og_title": "46D6D28E-0390-40E4-A856-BD74F34D24C8",
                    "+click_timestamp": 1503684563,
                    "+clicked_branch_link": true,
                    "+is_first_session": false,
                    "+match_guaranteed": true,
                    "custom": "blue",
                    "~campaign": "new launch",
                    "~channel": "facebook",
                    "~creation_source": 3,
                    "~feature": "sharing",
                    "~id": 429691043152332059,
                    "~referring_link": "https://example.app.link/X7OsnWv9TF",
                    "~stage": "new person",
                    "~tags": ["one","two"]
           }
        """

    /// As printed: `data` is a quoted multi-line object with unescaped quotes — not valid JSON.
    static let branchLinkAsPrinted = """
        {
           "randomized_device_token": "823600311503935224",
           "link": "https://example.app.link/X7OsnWv9TF",
           "session_id": "429691081177874743",
           "data": "\(branchLinkDataObject)"
        }
        """

    /// What a real server sends: the same object, as a JSON string.
    static var branchLinkAsSent: String {
        var escaped = ""
        ProviderJSON.writeString(branchLinkDataObject, to: &escaped)
        return """
            {"randomized_device_token":"823600311503935224","link":"https://example.app.link/X7OsnWv9TF",\
            "session_id":"429691081177874743","data":\(escaped)}
            """
    }

    // Branch v1/open server-to-server guide, "Example organic response".
    @Test func organicSampleParses() throws {
        let response = try BranchOpenResponse.parse(Data(Self.organic.utf8))
        #expect(response.sessionID == "xxxx")
        #expect(response.randomizedDeviceToken == "xxxx")
        #expect(response.randomizedBundleToken == nil)
        #expect(response.link == "https://bnc.lt/j/adsf")
        #expect(response.data?.clickedBranchLink == false)
        #expect(response.data?.isFirstSession == false)
        #expect(response.data?.other.isEmpty == true)
    }

    // Branch v1/open server-to-server guide, "Example organic response, with
    // server_to_server_identity enabled". As printed it carries the key
    // "randomized_device_tokenrandomized_device_token" (a doubled name, evidently a typo): it
    // parses as printed, that key is kept raw, and randomized_device_token is absent.
    @Test func organicWithIdentitySampleParses() throws {
        let response = try BranchOpenResponse.parse(Data(Self.organicWithIdentity.utf8))
        #expect(response.randomizedBundleToken == "xxxx")
        #expect(response.identity == "xxxx")
        #expect(response.randomizedDeviceToken == nil)
        #expect(response.otherFields["randomized_device_tokenrandomized_device_token"] == .string("xxxx"))
        let fixed = Self.organicWithIdentity.replacingOccurrences(
            of: "randomized_device_tokenrandomized_device_token", with: "randomized_device_token")
        #expect(try BranchOpenResponse.parse(Data(fixed.utf8)).randomizedDeviceToken == "xxxx")
    }

    // Branch v1/open server-to-server guide, "Example response when session started by a non-Branch
    // Deep Link".
    @Test func nonBranchLinkSampleParses() throws {
        let response = try BranchOpenResponse.parse(Data(Self.nonBranchLink.utf8))
        #expect(response.sessionID == "823602214081710808")
        #expect(response.randomizedDeviceToken == "823601870295755491")
        #expect(response.link == nil)
        #expect(response.data?.nonBranchLink == "https://branch.io/")
        #expect(response.data?.clickedBranchLink == false)
    }

    // Branch v1/open server-to-server guide, "Example response when session started by a Branch
    // Deep Link": NOT valid JSON as printed (the data string holds raw quotes and newlines), so it
    // is refused as not_json; the form a real server sends — the same object escaped into a JSON
    // string — parses with every field.
    @Test func branchLinkSampleAsPrintedIsInvalidButAsSentParses() throws {
        expectProviderError(field: "$", rule: "not_json", kind: .malformedResponse) {
            _ = try BranchOpenResponse.parse(Data(Self.branchLinkAsPrinted.utf8))
        }
        #expect((try? JSONSerialization.jsonObject(with: Data(Self.branchLinkAsPrinted.utf8))) == nil)
        let response = try BranchOpenResponse.parse(Data(Self.branchLinkAsSent.utf8))
        #expect(response.sessionID == "429691081177874743")
        #expect(response.randomizedDeviceToken == "823600311503935224")
        #expect(response.link == "https://example.app.link/X7OsnWv9TF")
        let data = try #require(response.data)
        #expect(data.clickedBranchLink == true)
        #expect(data.isFirstSession == false)
        #expect(data.matchGuaranteed == true)
        #expect(data.clickTimestamp == 1_503_684_563)
        #expect(data.clickDate == Date(timeIntervalSince1970: 1_503_684_563))
        #expect(data.campaign == "new launch")
        #expect(data.channel == "facebook")
        #expect(data.feature == "sharing")
        #expect(data.canonicalURL == "https://example.com/home?utm_campaign=test")
        #expect(data.deeplinkPath == nil)
        #expect(data.other["custom"] == .string("blue"))
        #expect(data.other["~tags"] == .array([.string("one"), .string("two")]))
        #expect(data.other["~id"] == .number(Decimal(string: "429691043152332059")!))  // every digit kept
        #expect(data.other["~creation_source"] == .number(3))
        #expect(data.other.count == 10)
        // data as an already-decoded object is accepted too.
        let asObject = try BranchOpenResponse.parse(
            Data(#"{"session_id":"1","data":\#(Self.branchLinkDataObject)}"#.utf8))
        #expect(asObject.data == data)
    }

    // Stored as event data with Branch's own names; the round trip is lossless.
    @Test func codableRoundTripUsesBranchNames() throws {
        let response = try BranchOpenResponse.parse(Data(Self.branchLinkAsSent.utf8))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let encoded = try encoder.encode(response)
        let text = String(decoding: encoded, as: UTF8.self)
        #expect(text.contains(#""+clicked_branch_link":true"#))
        #expect(text.contains(#""~id":429691043152332059"#))
        #expect(text.contains(#""session_id":"429691081177874743""#))
        #expect(try JSONDecoder().decode(BranchOpenResponse.self, from: encoded) == response)
    }

    // Ids may arrive as integers larger than 2^53; they keep every digit.
    @Test func numericIDsKeepAllDigits() throws {
        let response = try BranchOpenResponse.parse(Data(#"{"session_id":823602214081710808,"randomized_bundle_token":791040498773585647}"#.utf8))
        #expect(response.sessionID == "823602214081710808")
        #expect(response.randomizedBundleToken == "791040498773585647")
    }

    // Wrong shapes are typed errors naming the field.
    @Test func malformedAnswersNameTheField() {
        let cases: [(String, String, String)] = [
            (#"[]"#, "$", "not_object"),
            (#"{}"#, "session_id", "required"),
            (#"{"session_id":true}"#, "session_id", "not_string"),
            (#"{"session_id":"1","link":5}"#, "link", "not_string"),
            (#"{"session_id":"1","data":5}"#, "data", "not_string"),
            (#"{"session_id":"1","data":"{nope"}"#, "data", "not_json"),
            (#"{"session_id":"1","data":"[1]"}"#, "data", "not_object"),
            (#"{"session_id":"1","data":"{\"+clicked_branch_link\":\"yes\"}"}"#, "data.+clicked_branch_link", "not_boolean"),
            (#"{"session_id":"1","data":"{\"+click_timestamp\":1.5}"}"#, "data.+click_timestamp", "not_integer"),
            (#"{"session_id":"1","data":"{\"+click_timestamp\":1e400}"}"#, "data.+click_timestamp", "not_integer"),
            (#"{"session_id":"1","data":"{\"~campaign\":7}"}"#, "data.~campaign", "not_string"),
            (#"{"session_id":"1","data":"{\"x\":1e400}"}"#, "data.x", "number_out_of_range"),
            (#"{"session_id":"1e400"#, "$", "not_json"),
        ]
        for (body, field, rule) in cases {
            expectProviderError(field: field, rule: rule, kind: .malformedResponse) {
                _ = try BranchOpenResponse.parse(Data(body.utf8))
            }
        }
    }
}
