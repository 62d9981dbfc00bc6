import Foundation
import LedgerPostgres
import LedgerPrivateCluster
import LedgerTestKit

/// A primary and a streaming standby of the test's own, in a folder under `.ledger/` (the shared
/// test cluster is never stopped: other tests run against it meanwhile), for the failover and
/// read-replica tests.
struct ReplicatedPair {
    /// The standby's `application_name`, which `synchronous_standby_names` lists.
    static let standbyName = "ledger_standby"

    let directory: String
    let primary: PrivateCluster
    let standby: PrivateCluster

    /// Both servers' sockets, the primary's first: libpq tries them in order and keeps the first
    /// that accepts writes (libpq: "Specifying Multiple Hosts", `target_session_attrs`).
    var conninfo: String {
        "host=\(primary.socketDirectory),\(standby.socketDirectory) port=\(primary.port),\(standby.port) "
            + "user=\(primary.superuser) dbname=ledger target_session_attrs=read-write connect_timeout=2"
    }

    /// The primary's own conninfo.
    var primaryConninfo: String { primary.conninfo(database: "ledger") }
    /// The standby's own conninfo, whatever its role.
    var standbyConninfo: String { standby.conninfo(database: "ledger") }

    /// Starts a primary with a `ledger` database and a hot standby streaming from it; with
    /// `synchronous`, the primary's commits wait for the standby (`synchronous_standby_names`,
    /// `synchronous_commit = on`). Blocks for a few seconds: call it off the cooperative pool.
    static func start(synchronous: Bool) throws -> ReplicatedPair {
        let directory = FileManager.default.currentDirectoryPath + "/.ledger/ha-\(UUID().uuidString.prefix(8).lowercased())"
        let primary = try PrivateCluster.startOrReuse(directory: directory + "/primary", logger: TestDatabase.quietLogger)
        do {
            try primary.createDatabaseIfMissing("ledger", logger: TestDatabase.quietLogger)
            if synchronous {
                let admin = try PostgresConnection(conninfo: primary.conninfo(database: "postgres"), logger: TestDatabase.quietLogger)
                try admin.run(script: "ALTER SYSTEM SET synchronous_standby_names = '\(standbyName)'")
                try admin.run(script: "ALTER SYSTEM SET synchronous_commit = 'on'")
                try admin.execute("SELECT pg_reload_conf()")
            }
            let standby = try PrivateCluster.startStandby(of: primary, directory: directory + "/standby", name: standbyName,
                                                          logger: TestDatabase.quietLogger)
            return ReplicatedPair(directory: directory, primary: primary, standby: standby)
        } catch {
            // No pair to remove later: the primary must not outlive the failed start.
            try? primary.stop(mode: .immediate)
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    /// The primary's current WAL position (`pg_current_wal_lsn()`), as text.
    func primaryWALPosition() throws -> String {
        let connection = try PostgresConnection(conninfo: primaryConninfo, logger: TestDatabase.quietLogger)
        return try connection.query("SELECT pg_current_wal_lsn()::text").single().decode(String.self, at: 0)
    }

    /// True once the standby has replayed the WAL through `position` (a `pg_lsn` as text).
    func standbyHasReplayed(_ position: String) throws -> Bool {
        let connection = try PostgresConnection(conninfo: standbyConninfo, logger: TestDatabase.quietLogger)
        return try connection.query("SELECT pg_last_wal_replay_lsn() >= \(position)::pg_lsn").single().decode(Bool.self, at: 0)
    }

    /// Stops both servers and removes the folder.
    func remove() {
        try? primary.stop(mode: .immediate)
        try? standby.stop(mode: .immediate)
        try? FileManager.default.removeItem(atPath: directory)
    }
}
