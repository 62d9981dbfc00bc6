import Foundation
import Logging

/// Streaming replication between private clusters: a standby copied from a running cluster with
/// `pg_basebackup`, following it over the primary's Unix socket, and its promotion.
///
/// This is the topology docs/operations.md ("High availability") describes for production,
/// shrunk onto one machine: the failover and read-replica tests run the ledger against a primary
/// and a standby made here, kill the primary, and promote the standby, as an operator would.
extension PrivateCluster {
    /// Makes (if needed) and starts a hot standby of `primary` in `directory`, streaming from it.
    ///
    /// The standby is a `pg_basebackup -R` copy of the primary (the WAL it needs streamed with
    /// it), listening on a Unix socket of its own (`directory/run`). It connects to the primary
    /// with `application_name = name`: the name the primary's `synchronous_standby_names` lists
    /// when commits must wait for this standby. `hot_standby_feedback` is on, so the rows a long
    /// read on the standby still needs are not vacuumed away under it on the primary (which would
    /// end the read with a replication conflict). A standby made earlier in `directory` is
    /// started as it is.
    ///
    /// - Parameters:
    ///   - primary: the running cluster to copy and follow.
    ///   - directory: the standby's folder (`data/`, `run/`, `server.log`, as a private cluster's).
    ///   - name: its `application_name` towards the primary.
    /// - Throws: ``PrivateClusterError`` when the copy or the start fails.
    public static func startStandby(
        of primary: PrivateCluster, directory: String, name: String, logger: Logger = Logger(label: "ledger.cluster")
    ) throws(PrivateClusterError) -> PrivateCluster {
        let standby = try PrivateCluster(directory: directory, installation: primary.installation, logger: logger)
        try standby.withClusterLock { () throws(PrivateClusterError) in
            if !FileManager.default.fileExists(atPath: standby.dataDirectory + "/PG_VERSION") {
                try standby.copy(from: primary, name: name)
            }
        }
        try standby.start()
        return standby
    }

    /// Copies `primary` into this cluster's data folder as a standby that follows it: into a
    /// staging folder renamed into place, so an interrupted copy never leaves a half-made standby.
    private func copy(from primary: PrivateCluster, name: String) throws(PrivateClusterError) {
        let staging = directory + "/data.basebackup"
        try? FileManager.default.removeItem(atPath: staging)
        let pgBasebackup = installation.program("pg_basebackup")
        let source = "host=\(primary.socketDirectory) port=\(primary.port) user=\(primary.superuser) application_name=\(name)"
        let outcome = try runServerProgram(pgBasebackup, ["-D", staging, "-d", source, "-X", "stream", "-c", "fast", "-R", "--no-sync"])
        guard outcome.status == 0 else {
            throw .commandFailed(command: "pg_basebackup", status: outcome.status, output: outcome.output)
        }
        // postgresql.auto.conf is read last and its last line for a setting wins: the copy's
        // socket is its own, and it names itself to the primary.
        let settings = """

            # attribution ledger: a standby of \(primary.directory)
            unix_socket_directories = '\(socketDirectory)'
            primary_conninfo = '\(source)'
            hot_standby = on
            hot_standby_feedback = on

            """
        do {
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: staging + "/postgresql.auto.conf"))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(settings.utf8))
            try handle.close()
            try FileManager.default.moveItem(atPath: staging, toPath: dataDirectory)
        } catch {
            throw .folderUnusable(path: staging, reason: "\(error.localizedDescription)")
        }
        logger.info("made a standby of the private PostgreSQL", metadata: ["cluster.path": "\(directory)", "cluster.primary": "\(primary.directory)"])
    }

    /// Promotes this standby to a primary (`pg_ctl promote`), waiting until it accepts writes:
    /// the operator's step of a failover once the old primary is known to be down (see
    /// docs/operations.md, "Failing over").
    /// - Throws: ``PrivateClusterError`` when `pg_ctl promote` fails (not a standby, not running).
    public func promote() throws(PrivateClusterError) {
        try withClusterLock { () throws(PrivateClusterError) in
            let outcome = try runServerProgram(installation.pgCtl, ["promote", "-D", dataDirectory, "-w", "-t", "60"])
            guard outcome.status == 0 else {
                throw .commandFailed(command: "pg_ctl promote", status: outcome.status, output: outcome.output)
            }
        }
    }
}
