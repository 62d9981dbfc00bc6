import ArgumentParser
import Foundation
import LedgerPostgres
import LedgerPrivateCluster
import LedgerStore

/// `ledger tenancy check`: lists per-app streams named before the `/` separator.
struct TenancyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tenancy",
        abstract: "Check that every per-app stream names its app unambiguously.",
        subcommands: [TenancyCheckCommand.self]
    )
}

/// `ledger tenancy check [--json]`.
struct TenancyCheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "List device, decision and SKAN streams named without '/' between app and id.",
        discussion: helpText("""
            Per-app streams are device-<app>/<device>, decision-<app>/<device> and
            skan-<app>/<transaction-id>: no app id holds '/', so the name says where the app ends.
            A ledger written before this naming holds streams such as device-com.acme.game-lite-x,
            which could be app com.acme.game with device lite-x or app com.acme.game-lite with
            device x. The ledger never reads or writes those streams by app; their events stay in
            the log, verifiable and exportable (`ledger replay --device <stream>` reads one).

            Each stream is listed with its events, the apps its events record, and the apps whose
            id could begin it. MIXED: its events record more than one app (two tenants wrote under
            one name). AMBIGUOUS: more than one app recorded in this ledger could begin the name.
            docs/operations.md says what to do with them.

            Exit codes: 0 no such stream, 11 some found, 3 the database is unreachable.

            Examples:
              ledger tenancy check
              ledger tenancy check --json
            """)
    )

    @OptionGroup var database: DatabaseOptions

    @Flag(help: "Print one JSON object instead of text.")
    var json = false

    func run() async throws {
        try await reportingFailures {
            let logger = makeLogger("ledger.tenancy")
            let (pool, store) = try database.openStore(logger: logger, connections: 1)
            defer { pool.close() }
            let legacy = try await store.legacyPerAppStreams()
            let knownApps = Set(try await pool.withConnection { try EventStore.recordedAppIDs(on: $0) })
            let findings = legacy.map { stream in
                TenancyFinding(stream: stream, candidateApps: stream.splits(knownApps: knownApps).map(\.app))
            }
            print(json ? jsonText(TenancyReport(legacyStreams: findings)) : render(findings))
            if !findings.isEmpty { throw ExitCode.legacyStreamsFound }
        }
    }

    private func render(_ findings: [TenancyFinding]) -> String {
        guard !findings.isEmpty else { return "every per-app stream names its app: no legacy stream" }
        var lines = findings.map { finding in
            var flags: [String] = []
            if finding.mixed { flags.append("MIXED") }
            if finding.ambiguous { flags.append("AMBIGUOUS") }
            let recorded = finding.recordedApps.isEmpty ? "-" : finding.recordedApps.joined(separator: ",")
            let candidates = finding.candidateApps.isEmpty ? "-" : finding.candidateApps.joined(separator: ",")
            return "\(finding.streamID)  events=\(finding.eventCount)  recorded_apps=\(recorded)  could_be=\(candidates)"
                + (flags.isEmpty ? "" : "  " + flags.joined(separator: " "))
        }
        let mixed = findings.filter(\.mixed).count, ambiguous = findings.filter(\.ambiguous).count
        lines.append("\(findings.count) legacy stream\(findings.count == 1 ? "" : "s"), \(mixed) mixed, \(ambiguous) ambiguous")
        return lines.joined(separator: "\n")
    }
}

/// The JSON form of `ledger tenancy check --json`.
struct TenancyReport: Encodable {
    var legacyStreams: [TenancyFinding]

    enum CodingKeys: String, CodingKey { case legacyStreams = "legacy_streams" }
}

/// One legacy stream and what the ledger can say about its app.
struct TenancyFinding: Encodable {
    var streamID: String
    var eventCount: Int
    var firstRecordedAt: Date
    var lastRecordedAt: Date
    var recordedApps: [String]
    var candidateApps: [String]
    var mixed: Bool
    var ambiguous: Bool

    init(stream: LegacyStream, candidateApps: [String]) {
        streamID = stream.streamID
        eventCount = stream.eventCount
        firstRecordedAt = stream.firstRecordedAt
        lastRecordedAt = stream.lastRecordedAt
        recordedApps = stream.recordedApps
        self.candidateApps = candidateApps
        mixed = stream.mixesApps
        ambiguous = candidateApps.count > 1
    }

    enum CodingKeys: String, CodingKey {
        case streamID = "stream_id"
        case eventCount = "event_count"
        case firstRecordedAt = "first_recorded_at"
        case lastRecordedAt = "last_recorded_at"
        case recordedApps = "recorded_apps"
        case candidateApps = "candidate_apps"
        case mixed, ambiguous
    }
}

extension ExitCode {
    /// `ledger tenancy check` found per-app streams named before the `/` separator.
    static let legacyStreamsFound = ExitCode(11)
}
