import Logging
import Synchronization

/// Every record logged through its ``logger``, at trace level and above, kept for assertions.
final class LogCapture: Sendable {
    /// One log record, its metadata flattened to text.
    struct Record: Sendable, CustomStringConvertible {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]

        /// The message and every metadata key and value, for searching.
        var description: String {
            "[\(level)] \(message) " + metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
    }

    private let stored = Mutex<[Record]>([])

    /// The records so far.
    var records: [Record] { stored.withLock { $0 } }

    /// A logger at trace level that writes here.
    var logger: Logger {
        var logger = Logger(label: "ledger.test.capture") { _ in Handler(capture: self) }
        logger.logLevel = .trace
        return logger
    }

    fileprivate func append(_ record: Record) { stored.withLock { $0.append(record) } }

    private struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            var merged = metadata
            if let extra = event.metadata { merged.merge(extra) { $1 } }
            if let error = event.error { merged["error (attached)"] = "\(String(reflecting: error))" }
            capture.append(Record(level: event.level, message: "\(event.message)",
                                  metadata: merged.mapValues { "\($0)" }))
        }
    }
}
