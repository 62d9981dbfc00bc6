import ArgumentParser
import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerPostgres
import LedgerPrivateCluster
import LedgerStore

/// `ledger sends`: the sends no worker will finish by itself, and an operator's settlement of
/// parked ones (docs/operations.md, "Parked and failed sends").
struct SendsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sends",
        abstract: "List failed and parked sends; retry or cancel a parked one.",
        subcommands: [SendsListCommand.self, SendsRetryCommand.self, SendsCancelCommand.self]
    )
}

/// `ledger sends list --state failed|parked [--app A] [--json]`.
struct SendsListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the sends that need people: failed for good, or parked after an unknown outcome.",
        discussion: helpText("""
            failed: sends that ended with SendFailed (refused by their request's builder, refused
            by the provider, retries exhausted, deadline passed). parked: sends whose try's outcome
            is unknown (the worker ended during the call) for a provider that counts every request
            (Singular): no worker tries them again until `ledger sends retry` or `ledger sends
            cancel` settles them. Each line names the send id, app, provider/kind, device stream,
            state, rule and when (the worker's time), oldest first.

            Exit codes: 0 listed (even none), 3 the database is unreachable, 64 bad usage.

            Examples:
              ledger sends list --state parked
              ledger sends list --state failed --app com.example.game --json
            """)
    )

    @OptionGroup var database: DatabaseOptions

    @Option(help: ArgumentHelp("Which sends: failed or parked.", valueName: "state"))
    var state: String

    @Option(help: ArgumentHelp("Only this app's sends.", valueName: "app-id"))
    var app: String?

    @Flag(help: "Print one JSON object instead of text.")
    var json = false

    func validate() throws {
        if SendNeedingPeople.State(rawValue: state) == nil { throw ValidationError("--state must be failed or parked") }
        if let app, (try? AppID(app)) == nil { throw ValidationError("--app must be an app id, e.g. com.example.game") }
    }

    func run() async throws {
        try await reportingFailures {
            let logger = makeLogger("ledger.sends")
            let (pool, _) = try database.openStore(logger: logger, connections: 1)
            defer { pool.close() }
            guard let wanted = SendNeedingPeople.State(rawValue: state) else { throw ValidationError("--state must be failed or parked") }
            let appID = try app.map { try AppID($0) }
            let sends = try await pool.withConnection { try SendsNeedingPeople.list(state: wanted, app: appID, on: $0) }
            if json {
                // The ledger's JSON: times as ISO 8601 text, keys sorted.
                let report = SendsListReport(state: wanted.rawValue, app: app, sends: sends)
                print(String(decoding: try LedgerJSON.makeEncoder().encode(report), as: UTF8.self))
            } else {
                print(render(sends))
            }
        }
    }

    private func render(_ sends: [SendNeedingPeople]) -> String {
        let scope = app.map { " of \($0)" } ?? ""
        guard !sends.isEmpty else { return "no \(state) sends\(scope)" }
        var lines = sends.map { send in
            "\(send.sendID.lowercasedText)  app=\(send.app ?? "-")  \(send.provider.rawValue)/\(send.kind.rawValue)  "
                + "\(send.deviceStreamID)  \(send.state.rawValue)  rule=\(send.rule)  at=\(send.at.formatted(.iso8601))"
        }
        lines.append("\(sends.count) \(state) send\(sends.count == 1 ? "" : "s")\(scope)")
        return lines.joined(separator: "\n")
    }
}

/// The JSON form of `ledger sends list --json`.
struct SendsListReport: Encodable {
    var state: String
    var app: String?
    var sends: [SendNeedingPeople]
}

/// The options `retry` and `cancel` share: the send, who decides and why.
struct SettlementOptions: ParsableArguments {
    @Argument(help: ArgumentHelp("The send's id (a UUID; `ledger sends list --state parked` prints it).", valueName: "send-id"))
    var sendID: String

    @Option(help: ArgumentHelp("Why (kept in the log): what was checked at the provider.", valueName: "text"))
    var reason: String

    @Option(help: ArgumentHelp("Who decides (a role or account); default $USER, else cli.", valueName: "who"))
    var by: String = ProcessInfo.processInfo.environment["USER"].flatMap { $0.isEmpty ? nil : $0 } ?? "cli"

    func validate() throws {
        if UUID(uuidString: sendID) == nil { throw ValidationError("send-id must be a UUID, e.g. 1b4e28ba-2fa1-4d3b-a3f5-ef19b5a7633b") }
    }

    /// Runs `settle` on the send, turning its typed refusals into one line and an exit code.
    func settle(_ what: String,
                _ settle: @escaping @Sendable (UUID, String, String, Date, EventStore, PostgresConnection) throws -> Void) async throws {
        try await reportingFailures {
            guard let id = UUID(uuidString: sendID) else { throw ValidationError("send-id must be a UUID") }
            let logger = makeLogger("ledger.sends")
            let (pool, store) = try database.openStore(logger: logger, connections: 1)
            defer { pool.close() }
            do {
                try await pool.withConnection { [by, reason] in try settle(id, by, reason, Date(), store, $0) }
            } catch let refusal as SendSettlementError {
                throw CLIFailure(exitCode: refusal.exitCode, message: refusal.description)
            }
            print("send \(id.lowercasedText) \(what)")
        }
    }

    @OptionGroup var database: DatabaseOptions
}

/// `ledger sends retry SEND-ID --reason TEXT [--by WHO]`.
struct SendsRetryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry",
        abstract: "Let a parked send be tried again (it may repeat a call the provider received).",
        discussion: helpText("""
            Appends SendUnparked (who and why) to the send's stream and makes it pending: the next
            worker calls the provider once more. Check first that the provider did not receive the
            lost call (Singular counts every request; a repeat may count an event twice).

            Exit codes: 0 pending again, 12 no such send, 13 the send is not parked,
            3 the database is unreachable, 64 bad usage.

            Examples:
              ledger sends retry 1b4e28ba-2fa1-4d3b-a3f5-ef19b5a7633b \\
                --reason "not in Singular's event log" --by ops
            """)
    )

    @OptionGroup var options: SettlementOptions

    func run() async throws {
        try await options.settle("is pending again") { id, by, reason, now, store, connection in
            try ParkedSends.retry(id, by: by, reason: reason, now: now, store: store, on: connection)
        }
    }
}

/// `ledger sends cancel SEND-ID --reason TEXT [--by WHO]`.
struct SendsCancelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract: "End a parked send without another try.",
        discussion: helpText("""
            Appends SendCancelled (reason operator; the detail names who and why) to the send's
            stream and removes it from the queue: the device's later Singular calls go on.

            Exit codes: 0 cancelled, 12 no such send, 13 the send is not parked,
            3 the database is unreachable, 64 bad usage.

            Examples:
              ledger sends cancel 1b4e28ba-2fa1-4d3b-a3f5-ef19b5a7633b \\
                --reason "Singular received it" --by ops
            """)
    )

    @OptionGroup var options: SettlementOptions

    func run() async throws {
        try await options.settle("is cancelled") { id, by, reason, now, store, connection in
            try ParkedSends.cancel(id, by: by, reason: reason, now: now, store: store, on: connection)
        }
    }
}

extension SendSettlementError {
    /// The exit code `ledger sends retry|cancel` ends with.
    var exitCode: ExitCode {
        switch self {
        case .unknownSend: .unknownSend
        case .notParked: .sendNotParked
        case .invalidField: .validationFailure
        case .unreadableSend: .failure
        }
    }
}

extension ExitCode {
    /// `ledger sends retry|cancel`: no send has the id given.
    static let unknownSend = ExitCode(12)
    /// `ledger sends retry|cancel`: the send is not parked (pending, running or ended).
    static let sendNotParked = ExitCode(13)
}
