/// How the ledger's processes write their logs to stderr: `LEDGER_LOG_FORMAT=json|text`.
///
/// Text is for a person at a terminal; JSON (one object per line) is for a log shipper, which is
/// what reads stderr when it is not a terminal (systemd's journal, a container runtime).
public enum LogFormat: String, Sendable, CaseIterable {
    /// One JSON object per line: `time`, `level`, `logger`, `message`, `source`, `metadata`.
    case json
    /// swift-log's plain line: time, level, label, metadata, message.
    case text

    /// The environment variable that chooses the format.
    public static let environmentVariable = "LEDGER_LOG_FORMAT"

    /// The format `LEDGER_LOG_FORMAT` names, or, when it is unset or empty, text on a terminal and
    /// JSON elsewhere.
    /// - Throws: ``LogFormatError`` naming the variable and the rule `json_or_text` for any other value.
    public static func resolve(environmentValue: String?, stderrIsTerminal: Bool) throws(LogFormatError) -> LogFormat {
        guard let value = environmentValue, !value.isEmpty else { return stderrIsTerminal ? .text : .json }
        guard let format = LogFormat(rawValue: value.lowercased()) else {
            throw LogFormatError(field: environmentVariable, rule: "json_or_text", value: value)
        }
        return format
    }
}

/// A log format the ledger does not know: the setting's name, the rule it broke, and the value
/// (a format name, never a secret).
public struct LogFormatError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Where the format came from (`LEDGER_LOG_FORMAT`).
    public var field: String
    /// The rule broken: `json_or_text`.
    public var rule: String
    /// The value given.
    public var value: String

    /// A refusal of `value` for `field`, by `rule`.
    public init(field: String, rule: String, value: String) {
        self.field = field
        self.rule = rule
        self.value = value
    }

    /// One line for the operator who set it.
    public var description: String {
        "\(field): \(rule): '\(value)' is not a log format; use json or text"
    }
}
