import ArgumentParser
import Foundation

/// The `ledger` command: the attribution ledger's operations, one subcommand each.
@main
struct Ledger: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ledger",
        abstract: "The attribution ledger: an event-sourced record of mobile app attribution in PostgreSQL.",
        discussion: helpText("""
            With no LEDGER_DATABASE_URL, every command uses a private PostgreSQL cluster of its own
            under .ledger/postgres (started on first use, reused afterwards).

            Exit codes: 0 success, 1 the work failed, 3 the database is unreachable,
            4 the schema was refused (a changed or failing migration),
            5 `verify` found a broken link, 6 no projection has the name given,
            7 the projection is already being rebuilt by another process, 8 no such device,
            9 unknown decision rule version, 10 `append` refused some lines, 11 `tenancy check` found
            legacy streams, 12 `sends` was given an unknown send id, 13 the send is not parked,
            14 the read database has not replayed the position asked for yet, 64 bad usage.
            """),
        subcommands: [
            MigrateCommand.self, VerifyCommand.self, SealCommand.self, CheckpointCommand.self, ProjectionsCommand.self, WorkerCommand.self,
            ClusterCommand.self, DemoCommand.self, ServeCommand.self, AppendCommand.self, ReplayCommand.self,
            ExplainCommand.self, ExportCommand.self, DecisionsCommand.self, EraseCommand.self, KeysCommand.self, TenancyCommand.self,
            SendsCommand.self,
        ]
    )

    /// Sets up logging (`LEDGER_LOG_FORMAT`, `LEDGER_LOG_LEVEL`) before any command runs, then runs
    /// the command the arguments name. An unknown log format exits 64.
    static func main() async {
        do {
            try ProcessLogging.bootstrap()
        } catch {
            FileHandle.standardError.write(Data("ledger: error: \(error)\n".utf8))
            Self.exit(withError: ExitCode.validationFailure)
        }
        await main(nil)
    }
}
