import Foundation
import LedgerLogging
import Logging

/// The process's logging, read once from the environment: `LEDGER_LOG_FORMAT` (json or text;
/// default text when stderr is a terminal, JSON otherwise) and `LEDGER_LOG_LEVEL` (default
/// `warning`). `ledger` bootstraps it before parsing its arguments, so every command's loggers,
/// and those of the libraries it uses, write in the one format.
enum ProcessLogging {
    /// Whether stderr is a terminal (a person reads it) rather than a file, a pipe or the journal.
    static let stderrIsTerminal = isatty(STDERR_FILENO) == 1

    /// The format `LEDGER_LOG_FORMAT` chooses; text when it names none (``bootstrap()`` refuses
    /// that before any command runs).
    static let format: LogFormat = (try? resolvedFormat()) ?? .text

    /// The lowest level logged.
    static let level = LoggingBootstrap.level(environmentValue: ProcessInfo.processInfo.environment[LoggingBootstrap.levelVariable])

    private static func resolvedFormat() throws(LogFormatError) -> LogFormat {
        try LogFormat.resolve(environmentValue: ProcessInfo.processInfo.environment[LogFormat.environmentVariable],
                              stderrIsTerminal: stderrIsTerminal)
    }

    /// Bootstraps swift-log in the chosen format and level.
    /// - Throws: ``LogFormatError`` when `LEDGER_LOG_FORMAT` names no format.
    static func bootstrap() throws(LogFormatError) {
        LoggingBootstrap.bootstrap(format: try resolvedFormat(), level: level)
    }
}

/// A command's own line on stderr (start-up, warnings, failures), whatever the log level: in the
/// text format `ledger <command>: [tag: ]<message>`, in JSON a record of logger `ledger.<command>`
/// at `level`, so that a JSON stderr holds only JSON.
func writeStatusLine(_ message: String, command: String? = nil, level: Logger.Level = .notice, textTag: String? = nil) {
    let line: String
    switch ProcessLogging.format {
    case .text:
        line = "ledger" + (command.map { " \($0)" } ?? "") + ": " + (textTag.map { "\($0): " } ?? "") + message + "\n"
    case .json:
        line = JSONLogLine.render(time: Date(), level: level, label: "ledger" + (command.map { ".\($0)" } ?? ""), message: message) + "\n"
    }
    StandardErrorLines.shared.write(line)
}
