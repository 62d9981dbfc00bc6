import Foundation
import LedgerDomain
@testable import LedgerFolds
import LedgerProviders
import LedgerTestKit
import Testing

/// The SKAN state's directly written JSON (what a rebuild stores) against `JSONEncoder`'s.
@Suite("SKAN state JSON")
struct SKANStateJSONTests {
    /// A state with every member varied by `seed`: amounts of many scales, odd keys, answers or not.
    static func randomState(seed: UInt64) throws -> SKANDeviceReducer.State {
        var random = SplitMix64(seed: seed)
        func maybe<T>(_ value: T) -> T? { random.next(upTo: 3) == 0 ? nil : value }
        func coarse() -> LedgerProviders.SKANCoarseValue? { maybe(LedgerProviders.SKANCoarseValue.allCases[Int(random.next(upTo: 3))]) }
        func amounts() throws -> [String: Decimal] {
            var totals: [String: Decimal] = [:]
            for _ in 0..<random.next(upTo: 4) {
                let digits = String(random.next(upTo: 10_000_000_000))
                let scale = Int(random.next(upTo: 8))
                let text = scale == 0 || scale >= digits.count ? digits
                    : String(digits.dropLast(scale)) + "." + String(digits.suffix(scale))
                totals[["USD", "EUR", "JPY", "BHD", "KWD"][Int(random.next(upTo: 5))]] = try #require(Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) as Decimal?)
            }
            return totals
        }
        var state = SKANDeviceReducer.State()
        var skan = SKANDeviceState()
        skan.conversionValue = maybe(Int(random.next(upTo: 64)))
        skan.previousFineValue = maybe(Int(random.next(upTo: 64)))
        (skan.p0Coarse, skan.p1Coarse, skan.p2Coarse) = (coarse(), coarse(), coarse())
        (skan.p0PreviousCoarse, skan.p1PreviousCoarse, skan.p2PreviousCoarse) = (coarse(), coarse(), coarse())
        skan.p0WindowLock = maybe(Int64(random.next(upTo: 2_000_000_000)))
        skan.p1WindowLock = maybe(Int64(random.next(upTo: 2_000_000_000)))
        skan.p2WindowLock = maybe(Int64(random.next(upTo: 2_000_000_000)))
        skan.totalRevenueByCurrency = try amounts()
        skan.totalAdMonRevenueByCurrency = try amounts()
        skan.p0TotalIAPRevenue = try amounts()
        skan.p1TotalIAPRevenue = try amounts()
        skan.p2TotalIAPRevenue = try amounts()
        skan.p0TotalAdMonRevenue = try amounts()
        skan.p1TotalAdMonRevenue = try amounts()
        skan.p2TotalAdMonRevenue = try amounts()
        skan.firstCallTimestamp = maybe(Int64(random.next(upTo: 2_000_000_000)))
        skan.lastCallTimestamp = maybe(Int64(random.next(upTo: 2_000_000_000)))
        state.skan = skan
        for index in 0..<random.next(upTo: 40) {
            state.countedTransactions[String(format: "%064x", random.next()) + "\(index)"] = Int64(bitPattern: random.next())
        }
        // Reasons come from rules and from Singular's answers: any text, quotes and controls included.
        let reasons = ["duplicate_transaction", "ignored_zero_amount", "quote \" and \\ back", "tab\there\n", "é ünïcödé", "/slash/", "\u{1}"]
        for _ in 0..<random.next(upTo: 4) { state.revenueNotCounted[reasons[Int(random.next(upTo: 7))], default: 0] += 1 }
        for _ in 0..<random.next(upTo: 4) { state.updatesIgnored[reasons[Int(random.next(upTo: 7))], default: 0] += 2 }
        for _ in 0..<random.next(upTo: 4) { state.singularErrors[reasons[Int(random.next(upTo: 7))], default: 0] += 3 }
        state.updatesApplied = Int(random.next(upTo: 1000))
        if random.next(upTo: 2) == 0 {
            state.lastSingularAnswer = SKANDeviceReducer.SingularAnswer(
                conversionValue: maybe(Int(random.next(upTo: 64))), coarseValue: maybe(Int(random.next(upTo: 3))),
                lockWindow: random.next(upTo: 2) == 0, postbackSequenceIndex: maybe(Int(random.next(upTo: 3))),
                answeredAt: Date(timeIntervalSince1970: Double(random.next(upTo: 2_000_000_000_000_000)) / 1_000_000),
                confirmedByDevice: random.next(upTo: 2) == 0)
        }
        return state
    }

    @Test("the direct JSON decodes to the same state, and holds what JSONEncoder writes", arguments: 0..<200)
    func directJSONMatchesEncoder(seed: Int) throws {
        let state = try Self.randomState(seed: UInt64(seed))
        let direct = try #require(state.jsonText())
        let decoded = try LedgerJSON.makeDecoder().decode(SKANDeviceReducer.State.self, from: Data(direct.utf8))
        #expect(decoded == state)
        let encoded = try LedgerJSON.makeEncoder().encode(state)
        let directTree = try JSONSerialization.jsonObject(with: Data(direct.utf8)) as? NSDictionary
        let encodedTree = try JSONSerialization.jsonObject(with: encoded) as? NSDictionary
        #expect(directTree == encodedTree)
    }

    /// `State.jsonText` names every stored field itself: one added to a type without being added
    /// there would silently not be stored by a rebuild. (The random states above fill the fields
    /// this test counts.)
    @Test("the direct writer covers every stored field of the state, the SKAN state and the answer")
    func everyFieldIsWritten() {
        let answer = SKANDeviceReducer.SingularAnswer(conversionValue: 1, coarseValue: 1, lockWindow: false,
                                                       postbackSequenceIndex: 0, answeredAt: Date(timeIntervalSince1970: 0))
        let message = "a field was added: write it in SKANStateJSON.swift and fill it in randomState"
        #expect(Mirror(reflecting: SKANDeviceReducer.State()).children.count == 7, "\(message)")
        #expect(Mirror(reflecting: SKANDeviceState()).children.count == 21, "\(message)")
        #expect(Mirror(reflecting: answer).children.count == 6, "\(message)")
    }
}

/// The hex digests projections key personal values by.
@Suite("Hex SHA-256 digests")
struct DigestTests {
    @Test("FIPS 180-2's vectors, whole and cut, and text beyond ASCII")
    func knownVectors() {
        #expect(Digest.sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Digest.sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(Digest.sha256Hex("abc", length: 7) == "ba7816b")
        #expect(Digest.sha256Hex("abc", length: 0) == "")
        // "é" as one scalar is the two bytes C3 A9.
        #expect(Digest.sha256Hex("\u{E9}") == Digest.sha256Hex(String(decoding: [0xC3, 0xA9], as: UTF8.self)))
        #expect(Digest.sha256Hex("\u{E9}") != Digest.sha256Hex("e\u{301}"))
    }
}
