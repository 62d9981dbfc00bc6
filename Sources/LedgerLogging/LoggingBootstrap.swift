import Foundation
import Logging

/// Sets up swift-log for a ledger process: the format (``LogFormat``) and the lowest level every
/// logger starts with (`LEDGER_LOG_LEVEL`, default `warning`).
public enum LoggingBootstrap {
    /// The environment variable naming the lowest level logged.
    public static let levelVariable = "LEDGER_LOG_LEVEL"
    /// The level when `LEDGER_LOG_LEVEL` is unset or not a level: warnings and worse.
    public static let defaultLevel = Logger.Level.warning

    /// The level `LEDGER_LOG_LEVEL` names (`trace` … `critical`), else ``defaultLevel``.
    public static func level(environmentValue: String?) -> Logger.Level {
        environmentValue.flatMap { Logger.Level(rawValue: $0.lowercased()) } ?? defaultLevel
    }

    /// Makes every logger of the process write `format` to stderr from `level` up. Call once,
    /// before any logger is made (swift-log allows one bootstrap per process).
    public static func bootstrap(format: LogFormat, level: Logger.Level) {
        switch format {
        case .json:
            LoggingSystem.bootstrap { label in JSONLogHandler.standardError(label: label, logLevel: level) }
        case .text:
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
        }
    }
}
