import AttributionLedger
import Foundation
@testable import LedgerHTTPAPI
import LedgerDomain
import LedgerPostgres
import LedgerTestKit
import Testing

/// Start-up checks: the address the server may bind and the API key configuration.
@Suite struct ConfigurationTests {
    @Test func onlyLoopbackAddressesAreBoundWithoutInsecureListen() throws {
        for host in ["127.0.0.1", "127.9.8.7", "localhost", "LOCALHOST", "::1", "[::1]", "0:0:0:0:0:0:0:1"] {
            #expect(LedgerHTTPConfiguration.isLoopback(host: host), "\(host)")
            #expect(throws: Never.self) { try LedgerHTTPConfiguration(host: host).validate() }
        }
        for host in ["0.0.0.0", "::", "10.0.0.5", "128.0.0.1", "example.com", "localhost.example.com", "::ffff:127.0.0.1", ""] {
            #expect(!LedgerHTTPConfiguration.isLoopback(host: host), "\(host)")
            #expect(throws: APIError.nonLoopbackHost(host)) { try LedgerHTTPConfiguration(host: host).validate() }
            #expect(throws: Never.self) { try LedgerHTTPConfiguration(host: host, insecureListen: true).validate() }
        }
        #expect(throws: APIError.nonPositiveTimeout("requestTimeout")) {
            try LedgerHTTPConfiguration(requestTimeout: .zero).validate()
        }
        #expect(throws: APIError.invalidRateLimit) {
            try LedgerHTTPConfiguration(rateLimiting: .perApp(HTTPRateLimit(requestsPerSecond: 1, burst: 0))).validate()
        }
    }

    @Test func aServerOnANonLoopbackAddressRefusesToStart() async throws {
        // The pool opens no connection: the server refuses before anything is used.
        let pool = PostgresPool(conninfo: "host=/nonexistent", maxConnections: 1, logger: TestDatabase.quietLogger)
        defer { pool.close() }
        let server = try LedgerHTTPServer(ledger: AttributionLedger(pool: pool, logger: TestDatabase.quietLogger),
                                          keys: APIKeys(digests: [:]), configuration: LedgerHTTPConfiguration(host: "0.0.0.0", port: 0))
        await #expect(throws: APIError.nonLoopbackHost("0.0.0.0")) { try await server.runUntilCancelled() }
    }

    @Test func oneDigestForTwoAppsIsRefusedWithoutQuotingIt() throws {
        let digest = APIKeys.digest(of: keyA)
        #expect(throws: APIError.digestOfTwoApps(appA, appB)) {
            try APIKeys(digests: [appB: [APIKeys.digest(of: keyB), digest.uppercased()], appA: [digest]])
        }
        do {
            _ = try APIKeys(json: Data(#"{"\#(appA)": "\#(digest)", "\#(appB)": ["\#(digest)"]}"#.utf8))
            Issue.record("accepted one digest for two apps")
        } catch {
            #expect(error == .digestOfTwoApps(appA, appB))
            #expect("\(error)".contains(appA) && "\(error)".contains(appB))
            #expect(!"\(error)".lowercased().contains(digest))
        }
        // The same digest twice for one app is harmless.
        let keys = try APIKeys(digests: [appA: [digest, digest]])
        #expect(keys.app(forKey: keyA)?.rawValue == appA)
    }
}
