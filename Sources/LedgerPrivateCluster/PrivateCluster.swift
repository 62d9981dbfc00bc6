import Foundation
import Logging

/// A PostgreSQL cluster of the project's own, started when no `LEDGER_DATABASE_URL` is configured.
///
/// Layout, under ``directory`` (by default `.ledger/postgres` in the working folder, git-ignored):
/// `data/` (the cluster), `run/` (its Unix socket: the server listens on no TCP port),
/// `server.log`, and `cluster.lock`, an advisory file lock held while the cluster is created,
/// started or stopped, so that two processes starting at once never both run `initdb` or
/// `pg_ctl start`.
///
/// The cluster is started once and reused by later processes; ``stop()`` (or `ops/cluster stop`)
/// stops it. A stale `postmaster.pid` left by a killed server is recognised (its process is gone
/// or is not a PostgreSQL server) and removed before starting. `initdb` runs into a temporary
/// folder that is renamed into place, so an interrupted `initdb` never leaves a half-made cluster.
///
/// PostgreSQL refuses to run as root: when this process is root, the server programs run as the
/// `postgres` system user (through `runuser`) and the cluster's folders are given to that user.
public struct PrivateCluster: Sendable {
    /// The cluster's folder.
    public let directory: String
    /// The folder holding the server's Unix socket (the `host` of a conninfo).
    public let socketDirectory: String
    /// The port number that names the socket file (`.s.PGSQL.<port>`).
    public let port: Int
    /// The superuser role the cluster was created with.
    public let superuser: String
    let installation: PostgresInstallation
    let serverUser: String?
    let logger: Logger

    var dataDirectory: String { directory + "/data" }
    var logFile: String { directory + "/server.log" }

    /// The default folder: `$LEDGER_CLUSTER_DIR`, else `.ledger/postgres` under the working folder.
    public static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let configured = environment["LEDGER_CLUSTER_DIR"], !configured.isEmpty { return configured }
        return FileManager.default.currentDirectoryPath + "/.ledger/postgres"
    }

    /// Prepares (if needed) and starts (if not running) the cluster in `directory`.
    /// - Throws: ``PrivateClusterError`` with a one-line reason.
    public static func startOrReuse(
        directory: String = defaultDirectory(), logger: Logger = Logger(label: "ledger.cluster")
    ) throws(PrivateClusterError) -> PrivateCluster {
        let installation = try PostgresInstallation.find()
        let cluster = try PrivateCluster(directory: directory, installation: installation, logger: logger)
        try cluster.withClusterLock { () throws(PrivateClusterError) in
            try cluster.initializeIfNeeded()
            if !cluster.isServerRunning() {
                try cluster.removeStaleLockFiles()
                try cluster.startServer()
            }
        }
        return cluster
    }

    init(directory: String, installation: PostgresInstallation, logger: Logger) throws(PrivateClusterError) {
        let absolute = URL(fileURLWithPath: directory).standardizedFileURL.path
        self.directory = absolute
        self.installation = installation
        self.logger = logger
        self.port = 5432
        if geteuid() == 0 {
            guard getpwnam("postgres") != nil else { throw .noPostgresUser }
            self.serverUser = "postgres"
            self.superuser = "postgres"
        } else {
            self.serverUser = nil
            self.superuser = getpwuid(geteuid()).map { String(cString: $0.pointee.pw_name) } ?? "postgres"
        }
        // A Unix socket path is limited to 107 bytes; deep checkouts get a short folder in /tmp.
        let preferred = absolute + "/run"
        if (preferred + "/.s.PGSQL.\(port)").utf8.count < 100 {
            self.socketDirectory = preferred
        } else {
            self.socketDirectory = "/tmp/ledger-pg-" + String(Self.fnv1a(absolute), radix: 16)
        }
        do {
            try FileManager.default.createDirectory(atPath: absolute, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: socketDirectory, withIntermediateDirectories: true)
        } catch {
            throw .folderUnusable(path: absolute, reason: "\(error.localizedDescription)")
        }
        if let serverUser, let account = getpwnam(serverUser) {
            let (uid, gid) = (account.pointee.pw_uid, account.pointee.pw_gid)
            for path in [absolute, socketDirectory] where chown(path, uid, gid) != 0 {
                throw .folderUnusable(path: path, reason: "chown to \(serverUser) failed (errno \(errno))")
            }
            // The server user must be able to reach the folder through its parents.
            let probe = try? ProcessRunner.run("/usr/bin/test", ["-w", absolute], asUser: serverUser)
            if probe?.status != 0 {
                throw .folderUnusable(
                    path: absolute,
                    reason: "the postgres user cannot reach it (a parent folder is private); set LEDGER_CLUSTER_DIR")
            }
        }
    }

    /// A libpq conninfo string for a database of this cluster.
    public func conninfo(database: String = "ledger") -> String {
        "host=\(socketDirectory) port=\(port) user=\(superuser) dbname=\(database)"
    }

    /// How ``stop(mode:)`` and ``restart(mode:)`` end the server (`pg_ctl -m`).
    public enum ShutdownMode: String, Sendable {
        /// Sessions are ended and their transactions rolled back; a clean shutdown.
        case fast
        /// The server quits at once, as in a crash; the next start recovers from the WAL.
        case immediate
    }

    /// Stops the server (by default fast: sessions are ended, transactions rolled back), waiting
    /// until it is gone. Nothing happens when it is not running.
    /// - Throws: ``PrivateClusterError`` when `pg_ctl stop` fails.
    public func stop(mode: ShutdownMode = .fast) throws(PrivateClusterError) {
        try withClusterLock { () throws(PrivateClusterError) in
            guard isServerRunning() else { return }
            let outcome = try runServerProgram(installation.pgCtl, ["stop", "-D", dataDirectory, "-m", mode.rawValue, "-w", "-t", "60"])
            guard outcome.status == 0 else {
                throw .commandFailed(command: "pg_ctl stop", status: outcome.status, output: outcome.output)
            }
        }
    }

    /// Starts the server of a cluster that exists (after ``stop(mode:)``), waiting until it
    /// accepts sessions. Nothing happens when it is running.
    /// - Throws: ``PrivateClusterError`` when `pg_ctl start` fails.
    public func start() throws(PrivateClusterError) {
        try withClusterLock { () throws(PrivateClusterError) in
            guard !isServerRunning() else { return }
            try removeStaleLockFiles()
            try startServer()
        }
    }

    /// Stops the server as `mode` says and starts it again (`pg_ctl restart`), waiting until it
    /// accepts sessions: every session is ended, as a real restart ends them.
    /// - Throws: ``PrivateClusterError`` when `pg_ctl restart` fails.
    public func restart(mode: ShutdownMode = .fast) throws(PrivateClusterError) {
        try withClusterLock { () throws(PrivateClusterError) in
            let outcome = try runServerProgram(installation.pgCtl, [
                "restart", "-D", dataDirectory, "-m", mode.rawValue, "-l", logFile, "-w", "-t", "60",
                "-o", "-c max_connections=\(Self.maximumConnections)",
            ])
            guard outcome.status == 0 else {
                throw .commandFailed(command: "pg_ctl restart", status: outcome.status, output: outcome.output)
            }
        }
    }

    /// True when the cluster's server process is alive.
    public func isServerRunning() -> Bool {
        guard let pid = postmasterPID() else { return false }
        return Self.isPostgresProcess(pid)
    }

    // MARK: Steps

    private func initializeIfNeeded() throws(PrivateClusterError) {
        if FileManager.default.fileExists(atPath: dataDirectory + "/PG_VERSION") { return }
        let staging = directory + "/data.initdb"
        try? FileManager.default.removeItem(atPath: staging)
        logger.info("creating the private PostgreSQL cluster", metadata: ["cluster.path": "\(directory)"])
        let outcome = try runServerProgram(
            installation.initdb,
            ["-D", staging, "-U", superuser, "--auth=trust", "--encoding=UTF8", "--no-locale", "--no-sync"])
        guard outcome.status == 0 else {
            throw .commandFailed(command: "initdb", status: outcome.status, output: outcome.output)
        }
        let settings = """

            # attribution ledger: a private cluster reached only through its Unix socket
            listen_addresses = ''
            unix_socket_directories = '\(socketDirectory)'
            unix_socket_permissions = 0700
            port = \(port)
            max_connections = \(Self.maximumConnections)
            shared_buffers = 256MB
            log_min_messages = warning
            log_min_error_statement = panic
            timezone = 'UTC'

            """
        do {
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: staging + "/postgresql.conf"))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(settings.utf8))
            try handle.close()
            try FileManager.default.moveItem(atPath: staging, toPath: dataDirectory)
        } catch {
            throw .folderUnusable(path: staging, reason: "\(error.localizedDescription)")
        }
    }

    /// Sessions the server accepts. The full test suite runs its tests at once, each with a
    /// database and pools of its own, and peaks above 200 sessions; a backend at rest costs little.
    /// Also given at every start, so a cluster made with an older setting gets it too.
    static let maximumConnections = 600

    private func startServer() throws(PrivateClusterError) {
        if let serverUser, let account = getpwnam(serverUser) {
            if !FileManager.default.fileExists(atPath: logFile) {
                _ = FileManager.default.createFile(atPath: logFile, contents: nil)
            }
            _ = chown(logFile, account.pointee.pw_uid, account.pointee.pw_gid)
        }
        let outcome = try runServerProgram(installation.pgCtl, ["start", "-D", dataDirectory, "-l", logFile, "-w", "-t", "60", "-o", "-c max_connections=\(Self.maximumConnections)"])
        guard outcome.status == 0 else {
            let log = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
            throw .commandFailed(command: "pg_ctl start", status: outcome.status, output: outcome.output + "\n" + log)
        }
        logger.info("started the private PostgreSQL", metadata: ["cluster.socket": "\(socketDirectory)"])
    }

    /// A `postmaster.pid` whose process is gone, or is not a PostgreSQL server (its number reused
    /// after a kill), is stale; so are socket lock files left beside it.
    private func removeStaleLockFiles() throws(PrivateClusterError) {
        let pidFile = dataDirectory + "/postmaster.pid"
        guard FileManager.default.fileExists(atPath: pidFile) else { return }
        logger.notice("removing a stale postmaster.pid left by a killed server")
        try? FileManager.default.removeItem(atPath: pidFile)
        try? FileManager.default.removeItem(atPath: socketDirectory + "/.s.PGSQL.\(port).lock")
        try? FileManager.default.removeItem(atPath: socketDirectory + "/.s.PGSQL.\(port)")
    }

    private func postmasterPID() -> Int32? {
        guard let text = try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8),
            let first = text.split(separator: "\n").first
        else { return nil }
        return Int32(first.trimmingCharacters(in: .whitespaces))
    }

    static func isPostgresProcess(_ pid: Int32) -> Bool {
        guard pid > 0, kill(pid, 0) == 0 || errno == EPERM else { return false }
        let name = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) ?? ""
        return name.hasPrefix("postgres")
    }

    func runServerProgram(_ path: String, _ arguments: [String]) throws(PrivateClusterError) -> ProcessRunner.Outcome {
        do {
            return try ProcessRunner.run(path, arguments, asUser: serverUser)
        } catch {
            throw .commandFailed(command: path, status: -1, output: "\(error)")
        }
    }

    /// Holds `cluster.lock` (an exclusive `flock`) for the duration of `body`.
    func withClusterLock<T>(_ body: () throws(PrivateClusterError) -> T) throws(PrivateClusterError) -> T {
        let path = directory + "/cluster.lock"
        let descriptor = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .folderUnusable(path: path, reason: "cannot open lock file (errno \(errno))") }
        defer { close(descriptor) }
        while flock(descriptor, LOCK_EX) != 0 {
            guard errno == EINTR else { throw .folderUnusable(path: path, reason: "flock failed (errno \(errno))") }
        }
        defer { flock(descriptor, LOCK_UN) }
        return try body()
    }

    static func fnv1a(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return hash
    }
}

extension PrivateCluster {
    /// A handle on the cluster in `directory` without starting it (to stop it, or ask its state).
    public static func handle(directory: String, logger: Logger = Logger(label: "ledger.cluster"))
        throws(PrivateClusterError) -> PrivateCluster
    {
        try PrivateCluster(directory: directory, installation: try PostgresInstallation.find(), logger: logger)
    }

    /// True when a cluster in `directory` has a live server (no folder is created to find out).
    public static func isRunning(directory: String) -> Bool {
        let pidFile = URL(fileURLWithPath: directory).standardizedFileURL.path + "/data/postmaster.pid"
        guard let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
            let pid = text.split(separator: "\n").first.flatMap({ Int32($0.trimmingCharacters(in: .whitespaces)) })
        else { return false }
        return isPostgresProcess(pid)
    }
}
