import Foundation

/// Where the PostgreSQL server programs (`initdb`, `pg_ctl`, `postgres`) are.
public struct PostgresInstallation: Sendable, Hashable {
    /// The folder holding `initdb` and `pg_ctl`.
    public var binDirectory: String

    /// The programs' full paths.
    public var initdb: String { binDirectory + "/initdb" }
    public var pgCtl: String { binDirectory + "/pg_ctl" }

    /// Finds the server programs.
    ///
    /// `LEDGER_PG_BINDIR`, when set, is the only place looked at (so a wrong value is an error, not
    /// a silent fallback). Otherwise `PATH`, then Debian's `/usr/lib/postgresql/<version>/bin`,
    /// highest version first (Debian does not put `initdb` on `PATH`).
    /// - Throws: ``PrivateClusterError/postgresNotInstalled(searched:)`` naming every folder tried.
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

/// Why the private cluster could not be prepared. Each case reads as one line for a person.
public enum PrivateClusterError: Error, Sendable, CustomStringConvertible {
    /// No `initdb` / `pg_ctl` was found.
    case postgresNotInstalled(searched: [String])
    /// Running as root needs the `postgres` system user, which PostgreSQL's packages create.
    case noPostgresUser
    /// A server program failed; `output` is the end of what it printed.
    case commandFailed(command: String, status: Int32, output: String)
    /// The cluster's folder could not be created or used.
    case folderUnusable(path: String, reason: String)

    public var description: String {
        switch self {
        case .postgresNotInstalled(let searched):
            let places = searched.isEmpty ? "(nothing to search)" : searched.joined(separator: ", ")
            return "PostgreSQL server programs (initdb, pg_ctl) not found in \(places); "
                + "install them with ops/setup (apt-get install postgresql) or set LEDGER_DATABASE_URL"
        case .noPostgresUser:
            return "running as root, but there is no 'postgres' system user to run the server "
                + "(PostgreSQL refuses root); install the postgresql package or run as a normal user"
        case .commandFailed(let command, let status, let output):
            let tail = output.split(separator: "\n").suffix(3).joined(separator: " | ")
            return "\(command) exited with status \(status): \(tail)"
        case .folderUnusable(let path, let reason):
            return "cannot use \(path) for the private PostgreSQL: \(reason)"
        }
    }
}
