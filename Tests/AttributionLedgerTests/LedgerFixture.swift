import AttributionLedger
import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import Testing

/// Runs `body` with a facade over a fresh migrated database, its clock fixed at `testEpoch`.
func withLedger<T>(_ body: (AttributionLedger, PostgresPool) async throws -> T) async throws -> T {
    try await TestDatabase.with { database throws in
        let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 4, logger: TestDatabase.quietLogger)
        defer { pool.close() }
        let ledger = AttributionLedger(pool: pool, clock: ManualClock(testEpoch), logger: TestDatabase.quietLogger)
        return try await body(ledger, pool)
    }
}

let testApp = "com.example.game"

/// An iOS device with everything the providers need.
func iosDevice(idfa: String? = "DFC5A647-9043-4699-B2A5-76F03A97064B") -> DeviceContext {
    DeviceContext(platform: .ios, idfa: idfa, idfv: "21DB6612-09B3-4ECC-84AC-B353B0AF1334", limitAdTracking: false,
                  attStatus: .authorized, ip: "203.0.113.7",
                  userAgent: UserAgentParts(appName: "Game", appVersion: "3.2.0", osName: "iOS", osVersion: "17.4.1",
                                            locale: "en_US", deviceModel: "iPhone15,2", build: "21E236"),
                  osVersion: "17.4.1", appVersion: "3.2.0", bundleID: testApp)
}

/// A first open of `testApp` on an iOS device.
func firstOpen(idfa: String? = "DFC5A647-9043-4699-B2A5-76F03A97064B") throws -> FirstOpen {
    FirstOpen(appID: try AppID(testApp), device: iosDevice(idfa: idfa))
}

/// Rows in `events` (all streams).
func eventCount(_ pool: PostgresPool) async throws -> Int {
    try await pool.query("SELECT count(*) FROM events").single().decode(Int.self, at: 0)
}

/// Rows in `events` with this id.
func rows(withID id: UUID, _ pool: PostgresPool) async throws -> Int {
    try await pool.query("SELECT count(*) FROM events WHERE event_id = \(id)").single().decode(Int.self, at: 0)
}
