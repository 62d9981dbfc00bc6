import Foundation
import LedgerDomain
import LedgerPostgres
@testable import LedgerStore
import LedgerTestKit
import Testing

/// A device's history is read by its streams' keys, not by walking the log: its cost must not
/// grow with the number of other devices' events (`ledger-bench growth` measures the rate).
@Suite("History reads by key", .database)
struct HistoryReadPlanTests {
    @Test("a device's history, its sends' streams included, reads its own rows: none of 3,000 other events is filtered out")
    func historyReadsItsOwnRows() async throws {
        try await withStore { store, database throws in
            let device = "device-app1/history"
            try await store.append([sampleEvent(0), sampleEvent(1)], to: device)
            let send = "send-\(UUID().uuidString.lowercased())"
            let requested = NewEvent(type: "SendRequested", data: Data(#"{"device_stream_id": "\#(device)"}"#.utf8),
                                     occurredAt: testEpoch)
            try await store.append([requested], to: send)
            for batch in 0..<30 {
                try await store.append((0..<100).map { sampleEvent($0) }, to: "device-app1/other-\(batch)")
            }
            let admin = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try admin.execute("ANALYZE events")
            // On a test-sized table (or a hash partition of 3,000 rows) reading it whole can be the
            // cheaper plan, as it is not on a real ledger; with sequential scans off, what remains
            // to catch is a walk of another index that filters the log, as the read once made.
            try admin.execute("SET enable_seqscan = off")
            let query = try EventStore.historyQuery(of: .deviceHistory(device), types: [], asOf: nil)
            let plan = try admin.query(PostgresQuery(sql: "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + query.sql,
                                                     binds: query.binds)).map { try $0.decode(String.self, at: 0) }
            let removed = plan.compactMap { line in
                line.range(of: "Rows Removed by Filter: ").map { Int(line[$0.upperBound...].prefix { $0.isNumber }) ?? 0 }
            }
            #expect(removed.allSatisfy { $0 < 100 }, "\(plan.joined(separator: "\n"))")
            let history = try await store.readHistory(of: .deviceHistory(device))
            #expect(history.map(\.streamID) == [device, device, send])
        }
    }
}
