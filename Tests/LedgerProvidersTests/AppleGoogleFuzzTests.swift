import Foundation
import LedgerProviders
import LedgerTestKit
import Testing

/// Parsers never trap: every input gives a value or a typed `ProviderError`. (Typed throws make
/// "a typed error" a compile-time fact; these tests make "never a crash" a run-time one.)
struct AppleGoogleFuzzTests {
    static let valid: [String] = [
        GoogleResponseSamples.errorSample, GoogleResponseSamples.negativeSample, GoogleResponseSamples.uacSample,
        GoogleResponseSamples.searchSample, GoogleResponseSamples.displaySample, GoogleResponseSamples.youTubeSample,
        AppleIAdTests.sample,
    ] + AppleAdServicesSamples.all.map(\.json)

    static let hostile: [String] = [
        "", " ", "null", "true", "0", "-", "-0", "1e400", "-1e400", "99999999999999999999999", "[]", "{}", "\"", "\"\\u",
        "\"\\uD800\"", "\"\\uDC00\\uD800\"", "{\"a\"}", "{\"a\":}", "{,}", "[1,]", "[01]", "1.", ".1", "1e", "+1", "NaN",
        "{\"attributed\":1e400}", "{\"attribution\":99999999999999999999999}",
        "{\"ad_events\":[{\"timestamp\":1e400}],\"attributed\":true}",
        "{\"ad_events\":[{\"ad_event_id\":1}],\"attributed\":true}",
        "{\"attribution\":true,\"orgId\":1e400,\"campaignId\":-99999999999999999999999}",
        "{\"Version3.1\":{\"iad-click-date\":\"9999-99-99T99:99Z\",\"iad-attribution\":1e400}}",
        "{\"iad-conversion-date\":\"2020-06-29T18:50:16.1234567890Z\"}",
        "{\"errors\":[null],\"attributed\":false}", "{\"errors\":\"X\",\"attributed\":false}",
        "\u{FEFF}{}", "{\"a\":\"\u{0}\"}", "[\"\\ud83d\\ude00\"]",
        String(repeating: "[", count: 10_000), String(repeating: "{\"a\":", count: 10_000),
        String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000),
        "[" + String(repeating: "1,", count: 50_000) + "1]", String(repeating: "9", count: 5_000),
        "{\"timestamp\":" + String(repeating: "9", count: 400) + "." + String(repeating: "9", count: 400) + "}",
    ]

    /// Feeds `bytes` to every JSON parser and classifier; returns how many parsers accepted it.
    @discardableResult
    static func feed(_ bytes: Data) -> Int {
        var accepted = 0
        if (try? GoogleConversionResponse.parse(bytes)) != nil { accepted += 1 }
        if (try? AdServicesAttribution.parse(bytes)) != nil { accepted += 1 }
        if (try? IAdAttributionDetails.parse(bytes)) != nil { accepted += 1 }
        if (try? GoogleEventData.fromJSON(bytes)) != nil { accepted += 1 }
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        for status in [200, 400, 404, 500] {
            let response = ProviderResponse(status: status, body: bytes)
            _ = GoogleResponseClassifier.classifyConversion(response, attempt: 1, now: now, jitter: 0.5)
            _ = GoogleResponseClassifier.classifyCrossNetwork(response, attempt: 1, now: now, jitter: 0.5)
            _ = AdServicesClassifier.classify(response, tokenIssuedAt: now, attempt: 1, now: now)
        }
        return accepted + feedText(String(decoding: bytes, as: UTF8.self))
    }

    /// Feeds `text` to every text validator; returns how many accepted it.
    @discardableResult
    static func feedText(_ text: String) -> Int {
        var accepted = 0
        if (try? GoogleAppUserAgent.parse(text)) != nil { accepted += 1 }
        if (try? AdServicesToken(text)) != nil { accepted += 1 }
        if (try? GoogleDeviceIPAddress.validate(text)) != nil { accepted += 1 }
        if (try? GoogleTimestamp(text: text)) != nil { accepted += 1 }
        if (try? GoogleDate(text: text)) != nil { accepted += 1 }
        return accepted
    }

    @Test("every valid sample is accepted by its parser (sanity for the fuzz corpus)")
    func validAccepted() async {
        for sample in Self.valid { #expect(Self.feed(Data(sample.utf8)) >= 1) }
        for text in Self.validTexts { #expect(Self.feedText(text) >= 1, "\(text)") }
    }

    @Test("hostile inputs: huge numbers (1e400, 99999999999999999999999), deep nesting (10,000 '['), malformed JSON, wrong types")
    func hostileInputs() async {
        for input in Self.hostile { Self.feed(Data(input.utf8)) }
        Self.feed(Data([0xFF, 0xFE, 0x00, 0x7B]))
        Self.feed(Data([0x22, 0xC3, 0x28, 0x22]))  // invalid UTF-8 inside a string
        Self.feed(Data([0x22, 0xED, 0xA0, 0x80, 0x22]))  // UTF-8-encoded surrogate
    }

    /// Valid inputs of the text validators.
    static let validTexts = [
        "AdMob/7.10.1 (iOS 10.0.2; en_US; iPhone9,1; Build/13D15; Proxy)", AppleAdServicesTests.sampleToken,
        "2607:f8b0:4005:80a::200e", "::ffff:216.58.194.174", "1432681913.123456", "2016-09-23",
    ]

    @Test("every truncated prefix of every valid sample, fed to the parser it belongs to")
    func truncatedPrefixes() async {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        for (index, sample) in Self.valid.enumerated() {
            await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
            let bytes = Data(sample.utf8)
            for length in 0..<bytes.count {
                await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
                let prefix = bytes.prefix(length)
                switch index {
                case 0..<6:
                    #expect((try? GoogleConversionResponse.parse(prefix)) == nil)
                    _ = GoogleResponseClassifier.classifyCrossNetwork(ProviderResponse(status: 200, body: prefix), attempt: 1, now: now, jitter: 0)
                case 6:
                    #expect((try? IAdAttributionDetails.parse(prefix)) == nil)
                default:
                    #expect((try? AdServicesAttribution.parse(prefix)) == nil)
                }
                _ = try? GoogleEventData.fromJSON(prefix)
            }
        }
        for text in Self.validTexts {
            await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
            for length in 0..<text.count { Self.feedText(String(text.prefix(length))) }
        }
    }

    @Test("seeded random bytes and random mutations of the samples", arguments: [UInt64(0xC0FFEE), 42, 2_024])
    func randomInputs(seed: UInt64) async {
        var generator = SplitMix64(seed: seed)
        for _ in 0..<500 {
            await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
            let length = Int.random(in: 0...96, using: &generator)
            Self.feed(Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }))
        }
        let alphabet = Array("{}[]\",:0123456789.eE+-truefalsnl \\u".utf8)
        for _ in 0..<500 {
            await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
            var bytes = Array(Self.valid.randomElement(using: &generator)!.utf8)
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0...2, using: &generator) {
                case 0: bytes[index] = alphabet.randomElement(using: &generator)!
                case 1: bytes.remove(at: index)
                default: bytes.insert(alphabet.randomElement(using: &generator)!, at: index)
                }
                if bytes.isEmpty { break }
            }
            Self.feed(Data(bytes))
        }
    }
}
