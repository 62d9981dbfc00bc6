import ArgumentParser
import Foundation
import LedgerDecisions
import LedgerDomain
import LedgerPostgres
import LedgerPrivateCluster
import LedgerStore
import LedgerTimeline

/// `ledger explain DEVICE`: the device's attribution decisions with every candidate and why it
/// won or lost; with `--html`, the same drawn as a timeline page.
struct ExplainCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "explain",
        abstract: "Explain a device's attribution: candidates, reasons, late answers, what Google was told.",
        discussion: helpText("""
            DEVICE is a device stream (device-<app>/<device>) or, with --app, the app's own device id.
            Reads the log (a replay), so it also works while projections are behind or rebuilding.

            --html writes one self-contained HTML page instead (to stdout, or --output FILE): the
            timeline drawn in inline SVG, every touch with its lookback window (the app's windows,
            from --apps-file), the winner marked and each loser's reason, the sends, late answers,
            superseded decisions and the SKAdNetwork windows. It loads nothing from anywhere.

            With LEDGER_READ_DATABASE_URL set (and no --database-url), reads that standby alone.

            Exit codes: 0 explained, 8 no such device in the log, 3 the database is unreachable,
            14 the read database lags behind --as-of, 64 bad usage.

            Examples:
              ledger explain device-com.example.game/8C1F2A
              ledger explain --app com.example.game 8C1F2A --as-of 2026-11-20T12:00:00Z
              ledger explain device-com.example.game/8C1F2A --json
              ledger explain device-com.example.game/8C1F2A --html --output timeline.html
            """)
    )

    @OptionGroup var database: DatabaseOptions

    @Argument(help: "The device stream, or the device id with --app.")
    var device: String

    @Option(help: "The app id, when DEVICE is the app's device id.")
    var app: String?

    @Option(help: "Explain as the ledger knew it at this time (ISO 8601) or position (a number).")
    var asOf: String?

    @Flag(help: "Print JSON instead of text.")
    var json = false

    @Flag(help: "Write a self-contained HTML page with the timeline drawn instead of text.")
    var html = false

    @Option(help: ArgumentHelp("With --html: write the page to this file instead of stdout.", valueName: "file"))
    var output: String?

    @OptionGroup var appsFile: AppsFileOptions

    func validate() throws {
        if json && html { throw ValidationError("--json and --html: choose one") }
        if output != nil && !html { throw ValidationError("--output writes the --html page: give --html too") }
    }

    func run() async throws {
        try await reportingFailures {
            let stream = try deviceStream(app: app, device: device)
            let at = try parseAsOf(asOf)
            let logger = makeLogger("ledger.explain")
            let (pool, store) = try await database.openReadStore(logger: logger, asOf: at)
            defer { pool.close() }
            guard try await store.streamVersion(stream) > 0 else {
                throw CLIFailure(exitCode: .unknownDevice, message: "no events for \(stream)")
            }
            if html {
                // The app's windows draw the bands: the settings the decider uses.
                let app = explanation(appOf: stream)
                let windows = try appsFile.attributionSettings(command: "explain").forApp(app).windows
                let page = try await DeviceTimeline.load(device: stream, asOf: at, store: store, windows: windows).html()
                guard let output else {
                    print(page, terminator: "")
                    return
                }
                do {
                    try Data(page.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
                } catch {
                    throw CLIFailure(exitCode: .validationFailure, message: "--output \(output): cannot write the page: \(error.localizedDescription)")
                }
                return
            }
            let explanation = try await AttributionExplanation.load(device: stream, asOf: at, store: store)
            if json {
                let encoder = LedgerJSON.makeEncoder()
                encoder.outputFormatting.insert(.prettyPrinted)
                print(String(decoding: try encoder.encode(explanation), as: UTF8.self))
            } else {
                print(explanation.render())
            }
        }
    }
}

/// The app of a device stream, `device-<app>/<device>`.
func explanation(appOf stream: String) -> String {
    String(stream.dropFirst("device-".count).prefix { $0 != "/" })
}

/// `device-<app>/<device>` from a stream or an app and device id.
func deviceStream(app: String?, device: String) throws -> String {
    if let app {
        do {
            return try StreamID.device(app: try AppID(app), device: try DeviceID(device)).rawValue
        } catch {
            throw ValidationError("--app/DEVICE: \(error)")
        }
    }
    guard (try? StreamID(device))?.category == StreamCategory.device.rawValue else {
        throw ValidationError("DEVICE must be a device stream (device-<app>/<device>), or give --app with the device id")
    }
    return device
}

/// `--as-of`: a position (digits) or an ISO 8601 time.
func parseAsOf(_ text: String?) throws -> AsOf? {
    guard let text else { return nil }
    if let position = Int64(text), position > 0 { return .position(position) }
    if let date = try? Date(text, strategy: .iso8601) { return .recordedAt(date) }
    throw ValidationError("--as-of must be a log position or an ISO 8601 time such as 2026-11-20T12:00:00Z")
}

extension ExitCode {
    /// The device has no events in the log.
    static let unknownDevice = ExitCode(8)
}
