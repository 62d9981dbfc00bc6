import Foundation
@testable import LedgerHTTPAPI
import LedgerTestKit
import NIOHTTP1
import Testing

/// Per-app token buckets through real HTTP, and the defaults by address.
@Suite struct RateLimitTests {
    @Test(.database) func anAppOverItsLimitGets429WithRetryAfterAndAnotherAppIsNotThrottled() async throws {
        // One token every 10 minutes, two at once: the third request of app A is over the limit,
        // however slowly a loaded machine sends the first two.
        try await withAPI(configure: { $0.rateLimiting = .perApp(HTTPRateLimit(requestsPerSecond: 1.0 / 600, burst: 2)) }) { api in
            let path = "/v1/apps/\(appA)/devices/install-r/skan"
            #expect(try await api.send(.GET, path).status == 200)
            #expect(try await api.send(.GET, path).status == 200)
            let limited = try await api.exchange(.GET, path)
            #expect(limited.status == 429)
            let retryAfter = try #require(limited.headers.first(name: "Retry-After").flatMap { Int($0) })
            #expect((1...600).contains(retryAfter))
            let error = try apiError(limited.body)
            #expect(error["code"] as? String == "rate_limited")
            #expect(error["rule"] as? String == "app_rate_limit")
            #expect(error["status"] as? Int == 429)
            #expect((error["message"] as? String)?.isEmpty == false)
            // Writes count too, and nothing is written over the limit.
            let append = try await api.send(.POST, "/v1/apps/\(appA)/events", json: batch(skanRegisteredJSON(device: "install-r")))
            #expect(append.status == 429)
            #expect(try await api.eventCount() == 0)
            // App B has a bucket of its own.
            let other = try await api.send(.POST, "/v1/apps/\(appB)/events", key: keyB, json: batch(skanRegisteredJSON(device: "install-r")))
            #expect(other.status == 200)
            #expect(try await api.send(.GET, "/v1/apps/\(appB)/devices/install-r/skan", key: keyB).status == 200)
            // Unauthenticated requests are refused before the limit: 401, not 429.
            #expect(try await api.send(.GET, path, key: nil).status == 401)
        }
    }

    @Test func aBucketRefillsAtItsRate() throws {
        let limit = HTTPRateLimit(requestsPerSecond: 2, burst: 2)
        let start = ContinuousClock.now
        var bucket = AppRateLimiter.Bucket(tokens: 2, updated: start)
        let waits = [start, start, start, start + .milliseconds(500), start + .seconds(100), start + .seconds(100), start + .seconds(100)]
            .map { bucket.take(at: $0, limit: limit) }
        // Two at once, the third waits half a second for its token; never more than the burst,
        // however long the pause.
        #expect(waits == [nil, nil, .milliseconds(500), nil, nil, nil, .milliseconds(500)])
        #expect(APIError.retryAfterSeconds(.milliseconds(200)) == 1)
        #expect(APIError.retryAfterSeconds(.milliseconds(2_001)) == 3)
    }

    @Test func limitsAreOffOnLoopbackAndOnElsewhereByDefault() {
        #expect(LedgerHTTPConfiguration(host: "127.0.0.1").effectiveRateLimit == nil)
        #expect(LedgerHTTPConfiguration(host: "localhost").effectiveRateLimit == nil)
        #expect(LedgerHTTPConfiguration(host: "::1").effectiveRateLimit == nil)
        #expect(LedgerHTTPConfiguration(host: "0.0.0.0", insecureListen: true).effectiveRateLimit == .standard)
        #expect(LedgerHTTPConfiguration(host: "10.1.2.3", rateLimiting: .off, insecureListen: true).effectiveRateLimit == nil)
        let chosen = HTTPRateLimit(requestsPerSecond: 5, burst: 10)
        #expect(LedgerHTTPConfiguration(host: "127.0.0.1", rateLimiting: .perApp(chosen)).effectiveRateLimit == chosen)
    }
}
