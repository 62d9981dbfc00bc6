import ArgumentParser
import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerPrivateCluster
import LedgerStore

/// `ledger replay --device D [--as-of T]`: a device's story in log order.
struct ReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Print a device's story in order: its events, every request, answer and decision.",
        discussion: helpText("""
            Reads the device's stream, its decisions and the streams of every send requested for it,
            in the order projections apply them. With --as-of, only what the ledger held then.
            Replaying never sends anything.

            With LEDGER_READ_DATABASE_URL set (and no --database-url), reads that standby alone.

            Exit codes: 0 printed, 8 no such device, 3 the database is unreachable, 14 the read
            database lags behind --as-of, 64 bad usage.

            Examples:
              ledger replay --device device-com.example.game/8C1F2A
              ledger replay --app com.example.game --device 8C1F2A --as-of 2026-11-20T12:00:00Z
              ledger replay --device device-com.example.game/8C1F2A --json   # JSON lines, every column
            """)
    )

    @OptionGroup var database: DatabaseOptions

    @Option(help: "The device stream, or the app's device id with --app.")
    var device: String

    @Option(help: "The app id, when --device is the app's device id.")
    var app: String?

    @Option(help: "What the ledger held at this time (ISO 8601) or position (a number).")
    var asOf: String?

    @Flag(help: "Print JSON lines (every stored column) instead of text.")
    var json = false

    func run() async throws {
        try await reportingFailures {
            let stream = try deviceStream(app: app, device: device)
            let at = try parseAsOf(asOf)
            let logger = makeLogger("ledger.replay")
            let (pool, store) = try await database.openReadStore(logger: logger, asOf: at)
            defer { pool.close() }
            let history = try await store.readHistory(of: .deviceHistory(stream), asOf: at)
            guard !history.isEmpty else { throw CLIFailure(exitCode: .unknownDevice, message: "no events for \(stream)") }
            for event in history {
                if json {
                    print(try EventLine.text(event))
                } else {
                    let where_ = event.streamID == stream ? "device" : String(event.streamID.prefix(13))
                    print("\(String(event.position).leftPad(8))  \(event.recordedAt.formatted(.iso8601))  "
                        + "\(where_.padding(toLength: 13, withPad: " ", startingAt: 0))  "
                        + "\(event.type.padding(toLength: 22, withPad: " ", startingAt: 0))  \(EventGist.of(event))")
                }
            }
        }
    }
}

extension String {
    /// Right-aligned in `width` columns.
    func leftPad(_ width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
}
