import Foundation
import LedgerTestKit
import Testing

@testable import LedgerProviders

/// Parsers never crash: every input ends in a value or a typed ProviderError (typed throws make any
/// other error impossible), with a seeded RNG so a failure replays.
@Suite("Branch and Singular parsers under hostile input")
struct BranchSingularFuzzTests {
    static var validSamples: [String] {
        [
            BranchOpenResponseTests.organic, BranchOpenResponseTests.organicWithIdentity,
            BranchOpenResponseTests.nonBranchLink, BranchOpenResponseTests.branchLinkAsSent,
            BranchOpenResponseTests.branchLinkAsPrinted,
            #"{"conversion_value":5,"skan_updated_coarse_value":2,"postback_sequence_index":0,"skan_updated_lock_window_value":true,"status":"ok"}"#,
            #"{"status":"error","reason":"Invalid measurement period: 5"}"#,
        ]
    }

    static var nastyInputs: [String] {
        let deep = String(repeating: "[", count: 10_000)
        let deepObject = String(repeating: #"{"a":"#, count: 10_000)
        let deepClosed = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        return [
            "", " ", "null", "true", "0", "-", "-0", "01", "1.", ".5", "1e", "1e400", "-1e400", "1e-400",
            "99999999999999999999999", "\"", "\"\\u", "\"\\uD800\"", "\"\\uDC00\"", "\"\\uD800\\u0041\"", "{\"a\"}",
            "{\"a\":}", "{,}", "[,]", "[1,]", "{\"a\":1,}", "\u{FEFF}{}", "{\"session_id\":\"1\"} x",
            deep, deepObject, deepClosed,
            #"{"session_id":"1","data":"\#(deep)"}"#,
            #"{"session_id":"1","data":"\#(String(repeating: "[", count: 63))\#(String(repeating: "]", count: 63))"}"#,
            #"{"session_id":1e400}"#, #"{"session_id":99999999999999999999999}"#, #"{"session_id":-0.0}"#,
            #"{"session_id":"1","data":"{\"+click_timestamp\":99999999999999999999999}"}"#,
            #"{"session_id":"1","data":"{\"+click_timestamp\":-9223372036854775808}"}"#,
            #"{"session_id":"1","data":"{\"+click_timestamp\":9223372036854775808}"}"#,
            #"{"session_id":"1","data":"{\"~id\":1e-400}"}"#,
            #"{"conversion_value":9223372036854775807}"#, #"{"conversion_value":-9223372036854775809}"#,
            #"{"conversion_value":1e308,"skan_updated_coarse_value":1e-308}"#,
            #"{"conversion_value":[],"status":{}}"#, #"{"conversion_value":true}"#,
            #"{"postback_sequence_index":1E2}"#, #"{"skan_updated_lock_window_value":1.0000000000000000001}"#,
            "{\"status\":\"ok\u{0}\"}", "\u{0}\u{1}\u{2}",
        ]
    }

    /// Every parser and classifier on one input; only values or typed errors may come out.
    static func exercise(_ data: Data) {
        _ = try? BranchOpenResponse.parse(data)
        _ = try? SingularConversionValueResponse.parse(data)
        _ = SingularClassifier.classify(.response(ProviderResponse(status: 200, body: data)), attempt: 1, now: testNow)
        _ = BranchClassifier.classify(.response(ProviderResponse(status: 200, body: data)), attempt: 1, now: testNow)
        let text = String(decoding: data.prefix(64), as: UTF8.self)
        _ = BranchSingularHTTP.retryAfter(text, now: testNow, maxDelay: 86_400)
        _ = BranchIPAddress(text)
        _ = SingularErrorReason(text)
    }

    @Test func nastyInputsGiveValuesOrTypedErrors() async {
        for input in Self.nastyInputs { Self.exercise(Data(input.utf8)) }
        expectProviderError(field: "$", rule: "too_deep") {
            _ = try BranchOpenResponse.parse(Data(String(repeating: "[", count: 10_000).utf8))
        }
        expectProviderError(field: "data", rule: "too_deep") {
            _ = try BranchOpenResponse.parse(Data(#"{"session_id":"1","data":"\#(String(repeating: "[", count: 10_000))"}"#.utf8))
        }
        #expect((try? ProviderJSONReader.parse(String(repeating: "[", count: 65) + String(repeating: "]", count: 65), limits: .branchSingular)) == nil)
        #expect((try? ProviderJSONReader.parse(String(repeating: "[", count: 64) + String(repeating: "]", count: 64), limits: .branchSingular)) != nil)
    }

    @Test func truncatedPrefixesOfValidSamples() async {
        for sample in Self.validSamples {
            await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
            let bytes = Array(sample.utf8)
            for end in 0...bytes.count { Self.exercise(Data(bytes[0..<end])) }
        }
    }

    @Test func randomBytesAndMutations() async {
        var rng = SplitMix64(seed: 0x5EED_B5)
        let alphabet = Array(#"{}[]",:0123456789-+.eE\u"truefalsenull \#n"#.utf8)
        for _ in 0..<2000 {
            await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
            let count = Int.random(in: 0...80, using: &rng)
            let biased = Bool.random(using: &rng)
            let bytes = (0..<count).map { _ in
                biased ? alphabet[Int.random(in: 0..<alphabet.count, using: &rng)] : UInt8.random(in: 0...255, using: &rng)
            }
            Self.exercise(Data(bytes))
        }
        let samples = Self.validSamples.map { Array($0.utf8) }
        for _ in 0..<2000 {
            await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
            var bytes = samples[Int.random(in: 0..<samples.count, using: &rng)]
            for _ in 0..<Int.random(in: 1...4, using: &rng) where !bytes.isEmpty {
                await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
                let index = Int.random(in: 0..<bytes.count, using: &rng)
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: bytes[index] = UInt8.random(in: 0...255, using: &rng)
                case 1: bytes.remove(at: index)
                default: bytes.insert(alphabet[Int.random(in: 0..<alphabet.count, using: &rng)], at: index)
                }
            }
            Self.exercise(Data(bytes))
        }
    }

    /// Wrong types in every field of both answers.
    @Test func wrongTypesEverywhere() async {
        let values = ["null", "true", "1", "-1", "1.5", "1e400", "99999999999999999999999", #""x""#, "[]", "{}", #"[{"a":[1]}]"#]
        let branchKeys = ["session_id", "randomized_bundle_token", "randomized_device_token", "identity", "link", "data"]
        let dataKeys = ["+clicked_branch_link", "+is_first_session", "+match_guaranteed", "+click_timestamp", "~campaign", "$deeplink_path", "other"]
        let singularKeys = ["conversion_value", "skan_updated_coarse_value", "postback_sequence_index", "skan_updated_lock_window_value", "status", "reason"]
        for value in values {
            await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
            for key in branchKeys { Self.exercise(Data(#"{"session_id":"1","\#(key)":\#(value)}"#.utf8)) }
            for key in dataKeys {
                await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
                var inner = ""
                ProviderJSON.writeString(#"{"\#(key)":\#(value)}"#, to: &inner)
                Self.exercise(Data(#"{"session_id":"1","data":\#(inner)}"#.utf8))
            }
            for key in singularKeys { Self.exercise(Data(#"{"conversion_value":1,"\#(key)":\#(value)}"#.utf8)) }
        }
    }
}
