import Foundation

/// Where the PostgreSQL server programs (`initdb`, `pg_ctl`, `postgres`) are.
public struct PostgresInstallation: Sendable, Hashable {
    /// The folder holding `initdb` and `pg_ctl`.
    public var binDirectory: String

    /// The programs' full paths.
    public var initdb: String { binDirectory + "/initdb" }
    public var pgCtl: String { binDirectory + "/pg_ctl" }

    /// Another program of the same installation (`pg_basebackup`): in ``binDirectory``, else
    /// beside the file `pg_ctl` links to (a folder on `PATH` may hold links to `initdb` and
    /// `pg_ctl` alone).
    public func program(_ name: String) -> String {
        let direct = binDirectory + "/" + name
        if FileManager.default.isExecutableFile(atPath: direct) { return direct }
        return URL(fileURLWithPath: pgCtl).resolvingSymlinksInPath().deletingLastPathComponent().path + "/" + name
    }

    /// Finds the server programs.
    ///
    /// `LEDGER_PG_BINDIR`, when set, is the only place looked at (so a wrong value is an error, not
    /// a silent fallback). Otherwise `PATH`, then Debian's `/usr/lib/postgresql/<version>/bin`,
    /// highest version first (Debian does not put `initdb` on `PATH`).
    /// - Throws: ``PrivateClusterError`` of code ``PrivateClusterError/Code/postgresNotInstalled`` naming every folder tried.
    public static func find(environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(PrivateClusterError) -> PostgresInstallation
    {
        let candidates: [String]
        if let forced = environment["LEDGER_PG_BINDIR"], !forced.isEmpty {
            candidates = [forced]
        } else {
            let path = (environment["PATH"] ?? "").split(separator: ":").map(String.init)
            let debian = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? [])
                .sorted { (Int($0) ?? 0) > (Int($1) ?? 0) }
                .map { "/usr/lib/postgresql/\($0)/bin" }
            candidates = path + debian
        }
        let manager = FileManager.default
        for directory in candidates
        where manager.isExecutableFile(atPath: directory + "/initdb")
            && manager.isExecutableFile(atPath: directory + "/pg_ctl")
        {
            return PostgresInstallation(binDirectory: directory)
        }
        throw .postgresNotInstalled(searched: candidates)
    }
}

/// Why the private cluster could not be prepared, or the ledger's database (configured or
/// private) not reached: the layer's one error, its ``description`` one line for a person.
public struct PrivateClusterError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong. Opaque, as postgres-nio's `PSQLError.Code`: a new code does not break a
    /// client's `switch`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        /// The code's name (`command_failed`), bounded: usable as a metric label.
        public let description: String
        private init(_ description: String) { self.description = description }

        /// No `initdb` / `pg_ctl` was found; running as root without the `postgres` system user
        /// (PostgreSQL refuses root; its packages create that user).
        public static let postgresNotInstalled = Code("postgres_not_installed"), noPostgresUser = Code("no_postgres_user")
        /// A server program failed (``PrivateClusterError/status`` says how); the cluster's folder
        /// could not be created or used; the configured or private database did not answer.
        public static let commandFailed = Code("command_failed"), folderUnusable = Code("folder_unusable"), unreachable = Code("unreachable")
    }

    /// What went wrong.
    public let code: Code
    /// What failed: the program, the folder, or the database (`LEDGER_DATABASE_URL`), if one.
    public let subject: String?
    /// The program's exit status (-1 when it could not be started), for ``Code/commandFailed``.
    public let status: Int32?
    /// One line for a person.
    public let description: String

    /// No `initdb` / `pg_ctl` was found in `searched`.
    static func postgresNotInstalled(searched: [String]) -> Self {
        let places = searched.isEmpty ? "(nothing to search)" : searched.joined(separator: ", ")
        return Self(code: .postgresNotInstalled, subject: nil, status: nil, description: "PostgreSQL server programs (initdb, pg_ctl) "
            + "not found in \(places); install them with ops/setup (apt-get install postgresql) or set LEDGER_DATABASE_URL")
    }

    /// Running as root without the `postgres` system user.
    static let noPostgresUser = Self(code: .noPostgresUser, subject: nil, status: nil, description: "running as root, but there is "
        + "no 'postgres' system user to run the server (PostgreSQL refuses root); install the postgresql package or run as a normal user")

    /// A server program failed; `output` is what it printed, of which the end is kept.
    static func commandFailed(command: String, status: Int32, output: String) -> Self {
        let tail = output.split(separator: "\n").suffix(3).joined(separator: " | ")
        return Self(code: .commandFailed, subject: command, status: status, description: "\(command) exited with status \(status): \(tail)")
    }

    /// The cluster's folder `path` could not be created or used.
    static func folderUnusable(path: String, reason: String) -> Self {
        Self(code: .folderUnusable, subject: path, status: nil, description: "cannot use \(path) for the private PostgreSQL: \(reason)")
    }

    /// The database at `source` did not answer.
    static func unreachable(source: String, reason: String) -> Self {
        Self(code: .unreachable, subject: source, status: nil, description: "cannot connect to \(source): \(reason)")
    }
}
