import Foundation
import LedgerTestKit
import Testing

@testable import LedgerProviders

/// Issue 4, "What it must show": "Parsers never crash: a property or fuzz test feeds random and
/// truncated bytes to every parser (malformed JSON, wrong types, huge numbers, deep nesting) and
/// gets typed errors."
///
/// The per-provider fuzz suites feed each provider's samples to that provider's parsers. This suite
/// closes the gaps between them: one registry of *every* entry point of the module that reads
/// outside bytes or text (answer parsers, text validators, classifiers at every status, stored-form
/// decoders), fed the samples of *all five* providers' documents, their truncations and mutations,
/// huge numbers swapped into every number, and deep nesting planted inside otherwise valid
/// documents.
@Suite("Every parser of every provider under hostile input (issue 4)")
struct AllProvidersFuzzTests {
    static let now = Date(timeIntervalSince1970: 1_700_000_000)

    /// Every valid sample of the five providers' documents (answers, plus the request bodies).
    static var samples: [String] {
        AppleGoogleFuzzTests.valid + BranchSingularFuzzTests.validSamples + [
            BranchOpenRequestTests.iOSExample, BranchOpenRequestTests.androidExample,
            #"{"app_event_data":{"item_id":["Crayons","Markers"]}}"#, #"{"level": 5, "attempts": 20}"#,
        ]
    }

    /// Checks a typed error is usable: it names a provider, a field and a rule, with a message.
    static func expectUsable(_ error: ProviderError, _ provider: Provider, _ parser: String, input: Data) {
        #expect(error.provider == provider, "\(parser)")
        #expect(!error.field.isEmpty && !error.rule.isEmpty && !error.message.isEmpty, "\(parser): \(error)")
        #expect(error.kind == .malformedResponse || error.kind == .invalidRequest)
    }

    /// Runs one throwing parser; a failure must be a usable `ProviderError` (typed throws make any
    /// other error type impossible). Returns whether the input was accepted.
    @discardableResult
    static func run<T>(
        _ name: String, _ provider: Provider, _ input: Data, _ body: () throws(ProviderError) -> T
    ) -> Bool {
        do {
            _ = try body()
            return true
        } catch {
            expectUsable(error, provider, name, input: input)
            return false
        }
    }

    /// Feeds one input to every parser, validator, classifier and stored-form decoder of the module.
    static func feedEverything(_ data: Data) {
        run("GoogleConversionResponse.parse", .google, data) { () throws(ProviderError) in try GoogleConversionResponse.parse(data) }
        run("GoogleEventData.fromJSON", .google, data) { () throws(ProviderError) in try GoogleEventData.fromJSON(data) }
        run("AdServicesAttribution.parse", .appleAdServices, data) { () throws(ProviderError) in try AdServicesAttribution.parse(data) }
        run("IAdAttributionDetails.parse", .appleIAd, data) { () throws(ProviderError) in try IAdAttributionDetails.parse(data) }
        run("BranchOpenResponse.parse", .branch, data) { () throws(ProviderError) in try BranchOpenResponse.parse(data) }
        run("SingularConversionValueResponse.parse", .singular, data) { () throws(ProviderError) in
            try SingularConversionValueResponse.parse(data)
        }
        feedText(String(decoding: data, as: UTF8.self), data)
        feedClassifiers(data, retryAfter: String(decoding: data.prefix(64), as: UTF8.self))
        feedDecoders(data)
    }

    /// Every text validator and reader.
    static func feedText(_ text: String, _ data: Data) {
        run("GoogleAppUserAgent.parse", .google, data) { () throws(ProviderError) in try GoogleAppUserAgent.parse(text) }
        run("GoogleDeviceIPAddress.validate", .google, data) { () throws(ProviderError) in try GoogleDeviceIPAddress.validate(text) }
        run("GoogleTimestamp(text:)", .google, data) { () throws(ProviderError) in try GoogleTimestamp(text: text) }
        run("GoogleDate(text:)", .google, data) { () throws(ProviderError) in try GoogleDate(text: text) }
        run("GoogleAppEventType(validating:)", .google, data) { () throws(ProviderError) in try GoogleAppEventType(validating: text) }
        run("GoogleDevicePlatform(validating:)", .google, data) { () throws(ProviderError) in try GoogleDevicePlatform(validating: text) }
        run("AdServicesToken", .appleAdServices, data) { () throws(ProviderError) in try AdServicesToken(text) }
        run("BranchOpenRequest.OperatingSystem(validating:)", .branch, data) { () throws(ProviderError) in
            try BranchOpenRequest.OperatingSystem(validating: text)
        }
        _ = GoogleDeviceIPAddress.family(of: text)
        _ = GoogleErrorCode(text).known
        _ = AdServicesConversionType(rawValue: text)
        _ = AdServicesClaimType(rawValue: text)
        _ = AppleISO8601.parse(text)
        _ = BranchIPAddress(text)?.isPublic
        _ = BranchSingularHTTP.parseHTTPDate(text)
        _ = SingularErrorReason(text).kind
    }

    /// Every classifier, at every kind of status, with the input as body and as `Retry-After`.
    static func feedClassifiers(_ body: Data, retryAfter: String) {
        for status in [-1, 0, 100, 200, 204, 302, 400, 404, 429, 500, 503, 999] {
            let response = ProviderResponse(status: status, headers: [Header("Retry-After", retryAfter)], body: body)
            for attempt in [1, 3] {
                _ = GoogleResponseClassifier.classifyConversion(response, attempt: attempt, now: now, jitter: 0.5)
                _ = GoogleResponseClassifier.classifyCrossNetwork(response, attempt: attempt, now: now, jitter: 0.5)
                _ = AdServicesClassifier.classify(response, tokenIssuedAt: now, attempt: attempt, now: now)
                _ = BranchClassifier.classify(.response(response), attempt: attempt, now: now)
                _ = SingularClassifier.classify(.response(response), attempt: attempt, now: now)
            }
        }
    }

    /// Every stored form the ledger reads back (`Codable`): any error is fine, a trap is not.
    static func feedDecoders(_ data: Data) {
        let decoder = JSONDecoder()
        _ = try? decoder.decode(GoogleConversionEvent.self, from: data)
        _ = try? decoder.decode(GoogleConversionResponse.self, from: data)
        _ = try? decoder.decode(GoogleEventData.self, from: data)
        _ = try? decoder.decode(GoogleEndpoint.self, from: data)
        _ = try? decoder.decode(AdServicesAttribution.self, from: data)
        _ = try? decoder.decode(AdServicesEndpoint.self, from: data)
        _ = try? decoder.decode(IAdAttributionDetails.self, from: data)
        _ = try? decoder.decode(IAdClientError.self, from: data)
        _ = try? decoder.decode(BranchOpenResponse.self, from: data)
        _ = try? decoder.decode(BranchSessionData.self, from: data)
        _ = try? decoder.decode(BranchEndpoint.self, from: data)
        _ = try? decoder.decode(SingularConversionValueResponse.self, from: data)
        _ = try? decoder.decode(SKANDeviceState.self, from: data)
        _ = try? decoder.decode(SKANConversionUpdate.self, from: data)
        _ = try? decoder.decode(SingularEndpoint.self, from: data)
        _ = try? decoder.decode(ProviderRequest.self, from: data)
    }

    @Test("all five providers' documents' samples and the hostile corpora, fed to every parser of every provider")
    func samplesAndHostileInputsEverywhere() async {
        let inputs = Self.samples + AppleGoogleFuzzTests.hostile + BranchSingularFuzzTests.nastyInputs
        for input in inputs { Self.feedEverything(Data(input.utf8)) }
        for bytes: [UInt8] in [[0xFF, 0xFE, 0x00, 0x7B], [0x22, 0xC3, 0x28, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0xEF, 0xBB, 0xBF]] {
            await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
            Self.feedEverything(Data(bytes))
        }
    }

    @Test("every truncated prefix of every sample, fed to every answer parser")
    func truncationsEverywhere() async {
        for sample in Self.samples {
            await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
            let bytes = Data(sample.utf8)
            for length in 0..<bytes.count {
                await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
                let prefix = bytes.prefix(length)
                Self.run("google", .google, prefix) { () throws(ProviderError) in try GoogleConversionResponse.parse(prefix) }
                Self.run("event data", .google, prefix) { () throws(ProviderError) in try GoogleEventData.fromJSON(prefix) }
                Self.run("adservices", .appleAdServices, prefix) { () throws(ProviderError) in try AdServicesAttribution.parse(prefix) }
                Self.run("iad", .appleIAd, prefix) { () throws(ProviderError) in try IAdAttributionDetails.parse(prefix) }
                Self.run("branch", .branch, prefix) { () throws(ProviderError) in try BranchOpenResponse.parse(prefix) }
                Self.run("singular", .singular, prefix) { () throws(ProviderError) in try SingularConversionValueResponse.parse(prefix) }
            }
            // Stored forms and classifiers on a sparser set of cuts (they parse the same bytes again).
            for length in stride(from: 0, to: bytes.count, by: 11) {
                await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
                Self.feedDecoders(bytes.prefix(length))
                Self.feedClassifiers(bytes.prefix(length), retryAfter: "120")
            }
        }
    }

    /// Each number of `text` in turn replaced by `replacement`.
    static func withEachNumber(of text: String, replacedBy replacement: String) -> [String] {
        let pattern = try! NSRegularExpression(pattern: #"(?<=[:\[,]\s{0,12})-?\d+(\.\d+)?([eE][+-]?\d+)?"#)
        let range = NSRange(text.startIndex..., in: text)
        return pattern.matches(in: text, range: range).map { match in
            (text as NSString).replacingCharacters(in: match.range, with: replacement)
        }
    }

    @Test("huge numbers: every number of every sample swapped for 1e400, 2^63, 20 nines, 400 digits, -0, 1e-400")
    func hugeNumbersEverywhere() async {
        let huge = ["1e400", "-1e400", "9223372036854775808", "-9223372036854775809", "99999999999999999999",
            String(repeating: "9", count: 400), "-0", "1e-400", "0." + String(repeating: "0", count: 400) + "1", "1E+2"]
        var count = 0
        for sample in Self.samples {
            await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
            for replacement in huge {
                await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
                for variant in Self.withEachNumber(of: sample, replacedBy: replacement) {
                    await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
                    Self.feedEverything(Data(variant.utf8))
                    count += 1
                }
            }
        }
        #expect(count > 500)  // the corpus really has numbers in it
    }

    @Test("deep nesting planted inside valid documents (31, 33, 64, 65 and 10,000 levels), arrays and objects")
    func deepNestingInsideValidDocuments() async {
        for depth in [31, 33, 64, 65, 10_000] {
            await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
            let arrays = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
            let objects = String(repeating: #"{"a":"#, count: depth) + "1" + String(repeating: "}", count: depth)
            for deep in [arrays, objects, String(repeating: "[", count: depth)] {
                await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
                for sample in Self.samples where sample.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("{") {
                    await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
                    guard let brace = sample.firstIndex(of: "{") else { continue }
                    let planted = String(sample[...brace]) + #""x_deep":"# + deep + "," + String(sample[sample.index(after: brace)...])
                    Self.feedEverything(Data(planted.utf8))
                }
            }
        }
        // Within the limits a deep unknown member is kept (iAd keeps it as text, Branch as a value).
        let inside = String(repeating: "[", count: 20) + String(repeating: "]", count: 20)
        let iAd = try? IAdAttributionDetails.parse(Data(#"{"iad-attribution":"false","x":\#(inside)}"#.utf8))
        #expect(iAd?.otherFields["x"] == inside)
        let branch = try? BranchOpenResponse.parse(Data(#"{"session_id":"1","x":\#(inside)}"#.utf8))
        #expect(branch?.otherFields["x"] != nil)
    }

    @Test("seeded random bytes and random mutations of all samples, fed to everything", arguments: [UInt64(7), 0xBADC0DE])
    func randomEverywhere(seed: UInt64) async {
        var rng = SplitMix64(seed: seed)
        let samples = Self.samples.map { Array($0.utf8) }
        let alphabet = Array(#"{}[]",:0123456789-+.eE\u"truefalsenull $~+"#.utf8)
        for round in 0..<600 {
            await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
            var bytes: [UInt8]
            if round % 3 == 0 {
                bytes = (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            } else {
                bytes = samples[Int.random(in: 0..<samples.count, using: &rng)]
                for _ in 0..<Int.random(in: 1...6, using: &rng) where !bytes.isEmpty {
                    await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
                    let index = Int.random(in: 0..<bytes.count, using: &rng)
                    switch Int.random(in: 0..<4, using: &rng) {
                    case 0: bytes[index] = UInt8.random(in: 0...255, using: &rng)
                    case 1: bytes.remove(at: index)
                    case 2: bytes.insert(alphabet[Int.random(in: 0..<alphabet.count, using: &rng)], at: index)
                    default: bytes.removeSubrange(index..<min(bytes.count, index + Int.random(in: 1...40, using: &rng)))
                    }
                }
            }
            Self.feedEverything(Data(bytes))
        }
    }

    @Test("classifiers never trap on extreme attempt numbers, clocks or Retry-After values")
    func classifierExtremes() async {
        let bodies = [Data(), Data(GoogleResponseSamples.uacSample.utf8), Data(#"{"session_id":"1"}"#.utf8)]
        for attempt in [Int.min, -1, 0, 1, 64, Int.max] {
            await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
            for now in [Date(timeIntervalSince1970: 0), Self.now, .distantFuture, .distantPast] {
                await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
                for retryAfter in ["", "-5", "1e400", String(repeating: "9", count: 40), "Fri, 31 Dec 9999 23:59:59 GMT"] {
                    await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
                    for status in [200, 404, 429, 500] {
                        await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
                        for body in bodies {
                            await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
                            let response = ProviderResponse(status: status, headers: [Header("Retry-After", retryAfter)], body: body)
                            _ = GoogleResponseClassifier.classifyConversion(response, attempt: attempt, now: now, jitter: 1)
                            _ = GoogleResponseClassifier.classifyCrossNetwork(nil, attempt: attempt, now: now, jitter: 0)
                            _ = AdServicesClassifier.classify(response, tokenIssuedAt: now, attempt: attempt, now: now)
                            _ = BranchClassifier.classify(.response(response), attempt: attempt, now: now)
                            _ = SingularClassifier.classify(.response(response), attempt: attempt, now: now)
                        }
                    }
                }
                _ = BranchClassifier.classify(.timedOut, attempt: attempt, now: now)
                _ = SingularClassifier.classify(.transportFailed(detail: ""), attempt: attempt, now: now)
                _ = IAdClientError(code: attempt).disposition(now: now)
            }
        }
    }

    @Test("stored forms: every sample's stored encoding, truncated and mutated, fed back to its decoder")
    func storedFormsUnderMutation() async throws {
        let encoder = JSONEncoder()
        var stored: [Data] = []
        for sample in GoogleResponseSamples.all { stored.append(try encoder.encode(try GoogleConversionResponse.parse(Data(sample.utf8)))) }
        for sample in AppleAdServicesSamples.all { stored.append(try encoder.encode(try AdServicesAttribution.parse(Data(sample.json.utf8)))) }
        stored.append(try encoder.encode(try IAdAttributionDetails.parse(Data(AppleIAdTests.sample.utf8))))
        stored.append(try encoder.encode(try BranchOpenResponse.parse(Data(BranchOpenResponseTests.branchLinkAsSent.utf8))))
        stored.append(try encoder.encode(try GASamples.event(.custom, name: "level_achieved", value: "1.99", currency: "USD")))
        stored.append(try encoder.encode(SingularConversionValueRequestTests.exampleState()))
        stored.append(try encoder.encode(try GASamples.builder.conversionRequest(for: GASamples.event(.firstOpen))))
        var rng = SplitMix64(seed: 0x5707ED)
        for data in stored {
            await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
            let bytes = Array(data)
            for length in stride(from: 0, to: bytes.count, by: 3) { Self.feedDecoders(Data(bytes[0..<length])) }
            for _ in 0..<100 {
                await Task.yield()  // CPU-bound: let the loopback and database tests run between rounds
                var mutated = bytes
                let index = Int.random(in: 0..<mutated.count, using: &rng)
                mutated[index] = UInt8.random(in: 0...255, using: &rng)
                Self.feedDecoders(Data(mutated))
            }
        }
    }
}

extension GoogleResponseSamples {
    /// The Google App Conversion Tracking API's six sample answers.
    static var all: [String] { [errorSample, negativeSample, uacSample, searchSample, displaySample, youTubeSample] }
}
