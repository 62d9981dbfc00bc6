import Foundation
import LedgerPostgres
import LedgerPrivateCluster
import LedgerTestKit
import Testing

@Suite("ledger cluster", .database)
struct ClusterCommandTests {
    /// One fresh cluster (initdb takes a few seconds), exercised end to end: two processes start
    /// it at once, a stale pid file from a "killed" server is recovered, and it stops cleanly.
    @Test("two processes starting one cluster at once both succeed; a stale pid file is recovered")
    func concurrentStartAndStalePID() async throws {
        let directory = "/tmp/ledger-cluster-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let environment = ["LEDGER_CLUSTER_DIR": directory]
        defer {
            _ = try? LedgerProcess.run(["cluster", "stop"], environment: environment)
            try? FileManager.default.removeItem(atPath: directory)
        }
        let results = try await withThrowingTaskGroup(of: LedgerProcess.Result.self) { group in
            for _ in 0..<2 { group.addTask { try await LedgerProcess.runDetached(["cluster", "start"], environment: environment) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.map(\.status) == [0, 0], "\(results.map(\.stderr))")
        let url = try await LedgerProcess.runDetached(["cluster", "url"], environment: environment)
        #expect(url.status == 0)
        let conninfo = url.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(conninfo.contains("dbname=ledger"))
        do {
            let connection = try PostgresConnection(conninfo: conninfo)
            #expect(try connection.query("SELECT current_setting('listen_addresses')").single().decode(String.self, at: 0) == "")
        }

        #expect(try await LedgerProcess.runDetached(["cluster", "stop"], environment: environment).status == 0)
        #expect(try await LedgerProcess.runDetached(["cluster", "status"], environment: environment).status == 1)

        // A killed server leaves postmaster.pid behind; its number may since belong to another
        // process (here: this test runner, which is alive and not PostgreSQL).
        let stale = "\(getpid())\n\(directory)/data\n"
        try stale.write(toFile: directory + "/data/postmaster.pid", atomically: true, encoding: .utf8)
        let restarted = try await LedgerProcess.runDetached(["cluster", "start"], environment: environment)
        #expect(restarted.status == 0, "\(restarted.stderr)")
        let connection = try PostgresConnection(conninfo: conninfo)
        #expect(try connection.query("SELECT 1").count == 1)
    }
}
