import Crypto
import Foundation
import Testing

@testable import LedgerStore

/// The parts a sealed append is written with (issue 9): the nonce source and the Base64 writer.
@Suite("Sealing parts")
struct SealingPartsTests {
    /// Nonces must never repeat under a key: many draws are all different, and their bytes
    /// cover the byte values as random bytes do (a stuck or zeroed source would not).
    @Test("nonces never repeat and look random")
    func noncesNeverRepeat() {
        let count = 2_000
        var seen = Set<Data>()
        for _ in 0..<count {
            seen.insert(NonceSource.shared.next().withUnsafeBytes { Data($0) })
        }
        #expect(seen.count == count)
        #expect(Set(seen.flatMap { $0 }).count > 200, "the bytes do not look random")
    }

    /// Nonces drawn by many threads at once are still all different.
    @Test("nonces drawn concurrently never repeat")
    func concurrentNoncesNeverRepeat() async {
        let drawn = await withTaskGroup(of: [Data].self) { group in
            for _ in 0..<8 {
                group.addTask { (0..<500).map { _ in NonceSource.shared.next().withUnsafeBytes { Data($0) } } }
            }
            return await group.reduce(into: [Data]()) { $0 += $1 }
        }
        #expect(drawn.count == 4_000)
        #expect(Set(drawn).count == drawn.count)
    }

    /// The hand-written Base64 gives exactly Foundation's text, for every remainder length.
    @Test("Base64 text equals Foundation's", arguments: [0, 1, 2, 3, 4, 5, 28, 29, 30, 31, 359, 1000])
    func base64MatchesFoundation(length: Int) {
        var generator = SystemRandomNumberGenerator()
        let bytes = Data((0..<length).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        var out: [UInt8] = Array("prefix:".utf8)
        Base64.append(bytes, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == "prefix:" + bytes.base64EncodedString())
    }

    /// The hand-written decoder reads back every length's text as Foundation does.
    @Test("Base64 bytes read back as Foundation reads them", arguments: [0, 1, 2, 3, 4, 5, 28, 29, 30, 31, 359, 1000])
    func base64DecodesAsFoundation(length: Int) throws {
        var generator = SystemRandomNumberGenerator()
        let bytes = Data((0..<length).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        let text = Array(bytes.base64EncodedString().utf8)
        #expect(Base64.decode(text[...]) == [UInt8](bytes))
        #expect(Base64.decode(Array("xx\(bytes.base64EncodedString())".utf8).dropFirst(2)) == [UInt8](bytes), "a slice")
    }

    /// Text that is not canonical, padded Base64 is declined (the caller then asks Foundation).
    @Test("Base64 decoding declines what is not canonical padded text", arguments: [
        "A", "AB", "ABC", "AB=C", "A===", "====", "AA==AAAA", "AAA\n", " AAA", "AB-_", "AR==", "AAB=", "ÄAAA",
    ])
    func base64Declines(text: String) {
        #expect(Base64.decode(Array(text.utf8)[...]) == nil)
    }

    /// The sealing context is the bytes the stored boxes were sealed with: changing them would
    /// make every existing box fail to open.
    @Test("the sealing context keeps its exact bytes")
    func sealingContextBytes() throws {
        let id = try #require(UUID(uuidString: "12934C25-0AB9-438A-9160-59EDA01D984F"))
        #expect(String(decoding: PersonalDataProtection.sealingContext(id, "SessionStarted"), as: UTF8.self)
                    == "ledger-personal:v1:12934c25-0ab9-438a-9160-59eda01d984f:SessionStarted")
    }
}
