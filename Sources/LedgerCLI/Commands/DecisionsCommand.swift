import ArgumentParser
import Foundation
import LedgerConfiguration
import LedgerDecisions
import LedgerDomain
import LedgerPostgres
import LedgerPrivateCluster
import LedgerStore

/// `ledger decisions redo`: re-decide after a fix, appending superseding decisions.
struct DecisionsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decisions",
        abstract: "Work with attribution decisions.",
        subcommands: [Redo.self, Decide.self, ReportAgain.self]
    )

    /// `ledger decisions redo --rule-version N [--since T]`.
    struct Redo: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Re-decide recorded decisions with a rule version; changed outcomes supersede, never edit.",
            discussion: helpText("""
                Recomputes every decision recorded since --since (all without it) from the inputs
                it read. An unchanged outcome appends nothing; a changed one appends a new
                AttributionDecided that supersedes the old (both stay in history). Google is told
                again (a new cross-network send) only about ad events whose attributed value changed.
                Each app's windows come from the apps file --apps-file / LEDGER_APPS_FILE names, else
                LEDGER_ATTRIBUTION_SETTINGS (docs/configuration.md).

                Exit codes: 0 done, 9 unknown rule version, 3 the database is unreachable, 64 bad usage.

                Examples:
                  ledger decisions redo --rule-version 1
                  ledger decisions redo --rule-version last-click-v1 --since 2026-11-01T00:00:00Z --json
                """)
        )

        @OptionGroup var database: DatabaseOptions

        @OptionGroup var apps: AppsFileOptions

        @Option(help: "The rule version to apply (\(AttributionRuleVersion.known.joined(separator: ", ")), or its number).")
        var ruleVersion: String

        @Option(help: "Only decisions recorded at or after this ISO 8601 time.")
        var since: String?

        @Flag(help: "Print JSON instead of text.")
        var json = false

        func run() async throws {
            try await reportingFailures {
                var sinceDate: Date?
                if let since {
                    guard let parsed = try? Date(since, strategy: .iso8601) else {
                        throw ValidationError("--since must be an ISO 8601 time such as 2026-11-01T00:00:00Z")
                    }
                    sinceDate = parsed
                }
                let report: RedoReport
                do {
                    let bar = ProgressDisplay.bar(label: "redo", unit: "devices", json: json)
                    defer { bar?.finish() }
                    report = try await database.withDecider(apps: apps) {
                        try await $0.redo(ruleVersion: ruleVersion, since: sinceDate, now: Date(), progress: bar.map { bar in
                            { @Sendable done, total in bar.update(done: done, total: total) }
                        })
                    }
                } catch let error as UnknownRuleVersion {
                    throw CLIFailure(exitCode: .unknownRuleVersion, message: error.description)
                }
                if json {
                    let superseded = report.superseded.map { made in
                        ["decision_id": made.decisionID.uuidString.lowercased(), "device": made.deviceStreamID,
                         "supersedes": made.supersedes?.uuidString.lowercased() ?? "",
                         "winner": made.winner?.source.rawValue ?? "organic"]
                    }
                    let object: [String: Any] = ["examined": report.examined, "unchanged": report.unchanged, "superseded": superseded]
                    let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
                    print(String(decoding: data, as: UTF8.self))
                } else {
                    print("examined \(report.examined) decisions: \(report.unchanged) unchanged, \(report.superseded.count) superseded")
                    for made in report.superseded {
                        print("  \(made.deviceStreamID): \(made.supersedes.map { $0.uuidString.lowercased() } ?? "-") → "
                            + "\(made.decisionID.uuidString.lowercased()) (winner: \(made.winner?.source.rawValue ?? "organic"))")
                    }
                }
            }
        }
    }

    /// `ledger decisions decide`: decide what is due now, once.
    struct Decide: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Decide every trigger that is ready or overdue now, then exit (the worker does this continuously).",
            discussion: helpText("""
                Each app's deadline and windows come from the apps file --apps-file /
                LEDGER_APPS_FILE names, else LEDGER_ATTRIBUTION_SETTINGS (docs/configuration.md).

                Examples:
                  ledger decisions decide
                """)
        )

        @OptionGroup var database: DatabaseOptions

        @OptionGroup var apps: AppsFileOptions

        func run() async throws {
            try await reportingFailures {
                let made = try await database.withDecider(apps: apps) { try await $0.decidePending(now: Date()) }
                print("decided: \(made.count)")
            }
        }
    }
}

extension DecisionsCommand {
    /// `ledger decisions report-again`: request again the Google reports that failed for good.
    struct ReportAgain: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "report-again",
            abstract: "Request again the Google cross-network reports whose every request failed for good.",
            discussion: helpText("""
                The Google App Conversion Tracking API obliges a cross-network report for every affirmative Google
                answer. A report that failed for good (retries exhausted, a refused
                request) leaves its obligation open, and the worker does not request it
                again by itself. Run this once what made it fail is fixed (credentials,
                an outage): each such report is requested again, under a new
                idempotency key; the failed sends stay in the log. Reports that were
                cancelled (an erased device) are left alone.

                Examples:
                  ledger decisions report-again
                """)
        )

        @OptionGroup var database: DatabaseOptions

        @OptionGroup var apps: AppsFileOptions

        func run() async throws {
            try await reportingFailures {
                let requested = try await database.withDecider(apps: apps) { try await $0.requestFailedReportsAgain(now: Date()) }
                print("reports requested again: \(requested)")
            }
        }
    }
}

extension DatabaseOptions {
    /// Runs `body` with a decider on this database and the configured attribution settings (the
    /// apps file over `LEDGER_ATTRIBUTION_SETTINGS`); its pool closes afterwards.
    func withDecider<T>(apps: AppsFileOptions, _ body: (AttributionDecider) async throws -> T) async throws -> T {
        let logger = makeLogger("ledger.decisions")
        let settings = try apps.attributionSettings(command: "decisions")
        let (pool, store) = try openStore(logger: logger)
        defer { pool.close() }
        return try await body(AttributionDecider(store: store, settings: settings, logger: logger))
    }
}

extension ExitCode {
    /// `decisions redo` was given a rule version the ledger does not know.
    static let unknownRuleVersion = ExitCode(9)
}
