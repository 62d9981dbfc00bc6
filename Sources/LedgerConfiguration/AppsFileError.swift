import Foundation

/// Why the apps file was refused: the app, the key path and the rule broken, so that an operator
/// finds the line to fix. Never holds a secret's value.
///
/// `ledger serve` and `ledger worker` exit 64 with it at start-up; on `SIGHUP` the running
/// configuration is kept and it is logged.
public struct AppsFileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The app whose entry is wrong; nil for the file as a whole or its `defaults`.
    public var app: String?
    /// Where in the file, e.g. `apps."com.example.game".providers.branch.key`.
    public var keyPath: String
    /// The rule broken, e.g. `live_app_live_key`, `required`, `known_provider`.
    public var rule: String
    /// What is wrong and how to fix it, in words.
    public var message: String

    /// An error at `keyPath`.
    public init(app: String?, keyPath: String, rule: String, message: String) {
        self.app = app
        self.keyPath = keyPath
        self.rule = rule
        self.message = message
    }

    /// `apps file: <key path>: <rule>: <message>`.
    public var description: String { "apps file: \(keyPath): \(rule): \(message)" }
}

/// Something the apps file allows but an operator should change, printed at start-up: a secret
/// written into the file itself (the file is then as secret as the credential).
public struct AppsFileWarning: Sendable, Hashable, CustomStringConvertible {
    /// The app, nil for `defaults`.
    public var app: String?
    /// Where in the file.
    public var keyPath: String
    /// What to change.
    public var message: String

    /// `warning: apps file: <key path>: <message>`.
    public var description: String { "warning: apps file: \(keyPath): \(message)" }
}

/// Key paths of the apps file as errors print them: `apps."com.example.game".providers.google`.
struct FileKeyPath: Sendable, CustomStringConvertible {
    /// The app whose entry this is under (nil for the top level and `defaults`).
    let app: String?
    let text: String

    static let root = FileKeyPath(app: nil, text: "")
    static let defaults = FileKeyPath(app: nil, text: "defaults")

    static func app(_ id: String) -> FileKeyPath { FileKeyPath(app: id, text: "apps.\"\(id)\"") }

    func appending(_ key: String) -> FileKeyPath { FileKeyPath(app: app, text: text.isEmpty ? key : "\(text).\(key)") }

    func index(_ index: Int) -> FileKeyPath { FileKeyPath(app: app, text: "\(text)[\(index)]") }

    var description: String { text.isEmpty ? "(top level)" : text }

    func error(_ rule: String, _ message: String) -> AppsFileError {
        AppsFileError(app: app, keyPath: description, rule: rule, message: message)
    }
}
