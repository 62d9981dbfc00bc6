import Foundation

/// A credential from the apps file (a Google developer token, a Branch key or secret, a Singular
/// SDK key), read once when the file is loaded.
///
/// Why a type of its own: a credential must never reach a log line, an error, `--help` or the log
/// of events. Its ``description``, ``debugDescription`` and mirror (`dump`, test failure output)
/// name only where it came from; the value comes out only through ``revealed()``, which the code
/// that builds a provider's configuration calls and nothing else should.
public struct Secret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Where a secret's value came from; safe to print.
    public enum Source: Sendable, Hashable, CustomStringConvertible {
        /// `{"env": NAME}`: the environment variable `NAME`.
        case environment(String)
        /// `{"file": PATH}`: the file's contents, trailing newlines trimmed.
        case file(String)
        /// A string written in the apps file itself (accepted with a start-up warning).
        case literal

        /// `env NAME`, `file PATH` or `literal`.
        public var description: String {
            switch self {
            case .environment(let name): "env \(name)"
            case .file(let path): "file \(path)"
            case .literal: "literal"
            }
        }
    }

    /// Where the value came from.
    public let source: Source
    private let value: String

    /// A secret with its value and where it came from.
    public init(_ value: String, source: Source) {
        self.value = value
        self.source = source
    }

    /// The value, for building a provider's configuration; never print or store it.
    public func revealed() -> String { value }

    /// `Secret(env NAME)`: where it came from, never the value.
    public var description: String { "Secret(\(source))" }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// Reflection shows only the source.
    public var customMirror: Mirror {
        Mirror(self, children: ["source": source.description], displayStyle: .struct)
    }
}
