import Crypto
import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import LedgerPostgres
import LedgerProviders
import LedgerStore
import LedgerTestKit
import Testing

/// Branch opens through the worker and the fake Branch over HTTP: retries, and what the open says
/// about the user.
extension WorkerTests {
    // Branch v1/open server-to-server guide: a 429 answers opens "in rapid succession" — "please
    // wait a few minutes" — while Branch's SDKs retry a 5xx (3 times) on their own count. Three
    // 429s do not use up the 5xx retries: the 500 after them is retried, and the open succeeds.
    @Test func branch429sAndServerErrorsAreCountedApart() async throws {
        try await Self.withRig { rig in
            let cause = try await install(rig, token: nil)
            rig.fakes.branch.enqueue(.status(429), .status(429), .status(429), .status(500))
            let send = try await enqueue(.branch, .open, cause: cause, device: Self.device, key: "b:429-500", now: testEpoch,
                                         store: rig.store)
            let stream = StreamID.send(id: send.sendID).rawValue
            for _ in 0..<8 where try await queueCount(rig.store) > 0 {
                _ = try await rig.worker.drain()
                if let due = try await retries(of: stream, rig).last?.notBefore { rig.clock.set(max(due, rig.clock.now())) }
            }
            #expect(rig.fakes.branch.requestCount == 5)
            let events = try await rig.store.readStream(stream)
            #expect(events.last?.type == "SendSucceeded", "\(String(decoding: events.last?.data ?? Data(), as: UTF8.self))")
            let retried = try await retries(of: stream, rig)
            #expect(retried.map(\.rule) == ["branch_429_backoff", "branch_429_backoff", "branch_429_backoff", "branch_5xx_retry"])
            // The 429 back-off is minutes and grows with the 429s alone (5, 10, 15 minutes); the 500,
            // the first server error, gets the first 5xx back-off (2 s), not the fourth.
            let tried = events.filter { $0.type == SendAttempted.eventType }.map(\.occurredAt)
            let waits = zip(tried, retried).map { $1.notBefore.timeIntervalSince($0).rounded() }
            #expect(waits == [300, 600, 900, 2])
        }
    }

    // Branch v1/open server-to-server guide, `identity`: "You should never use personal user
    // information here, and all values should be encrypted before being passed to Branch." The
    // app's user id goes as its HMAC-SHA256 under the app's identity key, in hex; the id itself
    // never leaves the ledger nor enters its log.
    @Test func branchIdentityIsTheKeyedHashOfTheCustomUserID() async throws {
        let key = "identity-key-SECRET-5"
        try await Self.withRig(branchIdentityKey: key) { rig in
            let userID = "alice@example.com"
            var device = iosDevice()
            device.customUserID = userID
            let open = try await record(FirstOpen(appID: try AppID("app1"), device: device), to: Self.device, at: testEpoch,
                                        store: rig.store)
            try await enqueue(.branch, .open, cause: open, device: Self.device, key: "b:identity", now: testEpoch, store: rig.store)
            #expect(try await rig.worker.drain() == 1)
            let request = try #require(rig.fakes.branch.requests.first)
            let body = try #require(try JSONSerialization.jsonObject(with: request.body) as? [String: Any])
            let expected = HMAC<SHA256>.authenticationCode(for: Data(userID.utf8), using: SymmetricKey(data: Data(key.utf8)))
                .map { String(format: "%02x", $0) }.joined()
            #expect(body["identity"] as? String == expected)
            #expect(!request.bodyText.contains(userID))
            for secret in [userID, key] {
                let found = try await rig.store.pool.query(
                    "SELECT count(*) FROM events WHERE data::text LIKE \("%" + secret + "%") OR metadata::text LIKE \("%" + secret + "%")"
                ).single().decode(Int.self, at: 0)
                #expect(found == 0, "a stored event contains \(secret.prefix(5))…")
            }
        }
    }

    // Branch v1/open server-to-server guide, `identity`: without an identity key configured for the
    // app there is no way to encrypt the user id, so no `identity` is sent at all.
    @Test func branchWithoutAnIdentityKeySendsNoIdentity() async throws {
        try await Self.withRig { rig in
            var device = iosDevice()
            device.customUserID = "alice@example.com"
            let open = try await record(FirstOpen(appID: try AppID("app1"), device: device), to: Self.device, at: testEpoch,
                                        store: rig.store)
            try await enqueue(.branch, .open, cause: open, device: Self.device, key: "b:no-identity", now: testEpoch,
                              store: rig.store)
            #expect(try await rig.worker.drain() == 1)
            let request = try #require(rig.fakes.branch.requests.first)
            let body = try #require(try JSONSerialization.jsonObject(with: request.body) as? [String: Any])
            #expect(body["identity"] == nil)
            #expect(!request.bodyText.contains("alice@example.com"))
        }
    }
}
