import ArgumentParser
import Foundation
import LedgerConfiguration
import LedgerDecisions
import Logging
import ServiceLifecycle
import UnixSignals

/// `--apps-file`, shared by `serve`, `worker`, `append` and `decisions`: where each app's API key
/// digests, provider credentials and settings are read from (docs/configuration.md, "The apps
/// file").
struct AppsFileOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "The apps file: each app's API key digests, provider credentials and settings (default: LEDGER_APPS_FILE; docs/configuration.md).",
        valueName: "path"))
    var appsFile: String?

    /// The configuration of this process: the apps file (if any) over the older variables. Prints
    /// the file's warnings (literal secrets) to stderr.
    /// - Throws: `CLIFailure` exit 64 naming the app, the key path and the rule.
    func load(command: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ServiceConfiguration {
        let configuration = try configured { () throws(ConfigurationError) in
            try ServiceConfiguration.load(environment: environment, appsFilePath: appsFile)
        }
        printWarnings(of: configuration, command: command)
        return configuration
    }
}

/// Prints the apps file's warnings (literal secrets: app and key path, never the value) to stderr.
func printWarnings(of configuration: ServiceConfiguration, command: String) {
    for warning in configuration.warnings {
        writeStatusLine("\(warning)", command: command, level: .warning)
    }
}

extension AppsFileOptions {
    /// The attribution settings (the apps file over `LEDGER_ATTRIBUTION_SETTINGS`), or exit 64.
    func attributionSettings(command: String) throws -> AttributionSettings {
        let configuration = try load(command: command)
        return try configured { () throws(ConfigurationError) in try configuration.attributionSettings() }
    }
}

/// `body`'s value, or exit 64 with its configuration error (app, key path, rule).
func configured<T>(_ body: () throws(ConfigurationError) -> T) throws -> T {
    do {
        return try body()
    } catch {
        throw CLIFailure(exitCode: .validationFailure, message: "configuration: \(error)")
    }
}

/// Re-reads the configuration on `SIGHUP`, for `ledger serve` and `ledger worker`: a good file
/// replaces the running configuration (``apply``), a bad one is refused and logged, and the
/// running configuration is kept. Adding an app, or rotating its credentials, needs no restart.
///
/// The signal is trapped before the service group starts (``trap()``), so a `SIGHUP` sent as soon
/// as the process reports it is listening never ends it (the default action of `SIGHUP`).
struct ConfigurationReloader: Service {
    /// The trapped `SIGHUP`s.
    let signals: UnixSignalsSequence
    /// `serve` or `worker`, for the stderr lines.
    let command: String
    /// Reads the configuration again and, only when all of it is good, swaps it in.
    let apply: @Sendable () throws(ConfigurationError) -> Void
    let logger: Logger

    /// Traps `SIGHUP` now.
    static func trap() async -> UnixSignalsSequence {
        await UnixSignalsSequence(trapping: .sighup)
    }

    /// Reloads on each `SIGHUP` until graceful shutdown.
    func run() async throws {
        await cancelWhenGracefulShutdown { [signals, command, apply, logger] in
            for await _ in signals {
                do {
                    try apply()
                    logger.notice("configuration reloaded")
                    writeStatusLine("configuration reloaded", command: command)
                } catch {
                    // At error level: shown at every LEDGER_LOG_LEVEL but critical.
                    logger.error("configuration refused; the running configuration is kept", metadata: ["error": "\(error)"])
                }
            }
        }
        if !Task.isCancelled { try? await gracefulShutdown() }
    }
}
