import Foundation
import Logging

/// Keeps what a logger was told, for tests that check what an operator would see.
///
/// Entries are kept behind an `NSLock`, which ThreadSanitizer follows (`ops/test-tsan`; see
/// `PostgresLocked` on `Synchronization.Mutex`): loggers on several threads write here at once.
public final class LogCapture: @unchecked Sendable {
    // `@unchecked`: `entries` is read and written only under `lock`.
    /// One message as logged.
    public struct Entry: Sendable, Hashable, CustomStringConvertible {
        /// Its level.
        public var level: Logger.Level
        /// The message.
        public var message: String
        /// Its metadata, values as text.
        public var metadata: [String: String]

        /// The message and its metadata in one line, as a log line would show them.
        public var line: String {
            ([message] + metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }).joined(separator: " ")
        }

        /// The level, the message and every metadata key and value, for searching.
        public var description: String { "[\(level)] \(line)" }
    }

    private let lock = NSLock()
    private var entries: [Entry] = []

    /// An empty capture.
    public init() {}

    /// A logger whose messages at `level` and above land here.
    public func logger(label: String = "ledger.test", level: Logger.Level = .trace) -> Logger {
        var logger = Logger(label: label) { _ in Handler(capture: self) }
        logger.logLevel = level
        return logger
    }

    /// Everything logged so far, in order.
    public var all: [Entry] { lock.withLock { entries } }

    /// ``all``: the records so far.
    public var records: [Entry] { all }

    /// The entries whose metadata has `key` equal to `value` (`db.loop` = `projection runner`).
    public func entries(where key: String, is value: String) -> [Entry] {
        all.filter { $0.metadata[key] == value }
    }

    func append(_ entry: Entry) { lock.withLock { entries.append(entry) } }

    struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            var merged = metadata.merging(event.metadata ?? [:]) { $1 }
            // An error attached to the call is part of what an operator would see.
            if let error = event.error { merged["error (attached)"] = "\(String(reflecting: error))" }
            capture.append(Entry(level: event.level, message: "\(event.message)",
                                 metadata: merged.mapValues { "\($0)" }))
        }
    }
}
