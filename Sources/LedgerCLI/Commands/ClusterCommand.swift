import ArgumentParser
import LedgerPrivateCluster

/// `ledger cluster`: the private PostgreSQL the ledger starts when no database is configured.
struct ClusterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cluster",
        abstract: "Start, stop or locate the private PostgreSQL cluster (.ledger/postgres).",
        discussion: helpText("""
            The cluster listens on a Unix socket only. Other commands start it on demand; it stays up
            for the next command until stopped.

            Examples:
              ledger cluster start
              ledger cluster url          # prints a conninfo string for psql "$(ledger cluster url)"
              ledger cluster stop
            """),
        subcommands: [Start.self, Stop.self, Status.self, URL.self]
    )

    struct Start: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Start the cluster (creating it if needed).")
        func run() async throws {
            try await reportingFailures {
                let cluster = try startCluster()
                print("private PostgreSQL running; socket in \(cluster.socketDirectory)")
            }
        }
    }

    struct Stop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop the cluster if it is running.")
        func run() async throws {
            try await reportingFailures {
                let cluster = try startClusterHandle()
                do {
                    try cluster.stop()
                } catch {
                    throw CLIFailure(exitCode: .failure, message: "\(error)")
                }
                print("private PostgreSQL stopped")
            }
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Say whether the cluster is running (exit 0) or not (exit 1).")
        func run() async throws {
            let running = PrivateCluster.isRunning(directory: PrivateCluster.defaultDirectory())
            print(running ? "running" : "stopped")
            if !running { throw ExitCode.failure }
        }
    }

    struct URL: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "url", abstract: "Start the cluster if needed and print its conninfo string.")
        func run() async throws {
            try await reportingFailures {
                print(try startCluster().conninfo())
            }
        }
    }
}

private func startCluster() throws -> PrivateCluster {
    do {
        let cluster = try PrivateCluster.startOrReuse(logger: makeLogger("ledger.cluster"))
        try cluster.createDatabaseIfMissing("ledger", logger: makeLogger("ledger.cluster"))
        return cluster
    } catch let error as PrivateClusterError {
        throw CLIFailure(exitCode: .databaseUnreachable, message: "\(error)")
    }
}

private func startClusterHandle() throws -> PrivateCluster {
    do {
        return try PrivateCluster.handle(directory: PrivateCluster.defaultDirectory(), logger: makeLogger("ledger.cluster"))
    } catch {
        throw CLIFailure(exitCode: .databaseUnreachable, message: "\(error)")
    }
}
