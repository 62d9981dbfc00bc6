import Crypto
import Foundation
import Testing

@testable import LedgerStore

/// The per-process cache of data keys for appending (docs/privacy.md, "Costs and limits").
@Suite("Data key cache")
struct KeyCacheTests {
    @Test("a key looked up before an erasure in this process forgot keys is not cached after it")
    func erasureBetweenLookupAndCommit() throws {
        let protection = PersonalDataProtection(masterKeys: try MasterKeys(base64: MasterKeys.generateText()))
        let subject = "device-app1/dev1"
        let key = DataKey(id: UUID(), subject: subject, key: SymmetricKey(size: .bits256))
        // Looked up (generation read), then the device is erased here, then the append commits.
        let generation = protection.forgetGeneration
        protection.forgetCachedKeys(of: subject)
        protection.cache(key, for: subject, now: Date(), unlessForgottenSince: generation)
        #expect(protection.cachedKey(for: subject, now: Date()) == nil)
        // Without a forget in between, the key is cached.
        protection.cache(key, for: subject, now: Date(), unlessForgottenSince: protection.forgetGeneration)
        #expect(protection.cachedKey(for: subject, now: Date())?.id == key.id)
    }
}
