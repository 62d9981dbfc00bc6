import Foundation
import Logging
import Synchronization

/// A swift-log `LogHandler` that writes each record as one line of JSON (``JSONLogLine``): what a
/// log shipper reads without guessing where a message ends or which text is metadata.
///
/// Metadata is merged as swift-log defines it: the handler's own, then its metadata provider's,
/// then the call's, later keys winning. An error attached to a record is logged by its type only:
/// an error's text may quote the values it refused.
public struct JSONLogHandler: LogHandler {
    /// Where finished lines go (each with its line feed); called once per record.
    public typealias Output = @Sendable (String) -> Void

    /// The logger's label, written as `logger`.
    public let label: String
    /// The lowest level written.
    public var logLevel: Logger.Level
    /// Metadata on every record of this handler.
    public var metadata: Logger.Metadata = [:]
    /// Metadata computed for each record (task-local context).
    public var metadataProvider: Logger.MetadataProvider?
    private let output: Output
    private let now: @Sendable () -> Date

    /// A handler labelled `label` writing to `output`; `now` stamps the records (tests fix it).
    public init(
        label: String, logLevel: Logger.Level = .info, metadataProvider: Logger.MetadataProvider? = nil,
        now: @escaping @Sendable () -> Date = { Date() }, output: @escaping Output
    ) {
        self.label = label
        self.logLevel = logLevel
        self.metadataProvider = metadataProvider
        self.now = now
        self.output = output
    }

    /// A handler writing to the process's stderr, one whole line per `write(2)` under a lock,
    /// so records of concurrent tasks never interleave.
    public static func standardError(label: String, logLevel: Logger.Level = .info,
                                     metadataProvider: Logger.MetadataProvider? = nil) -> JSONLogHandler {
        JSONLogHandler(label: label, logLevel: logLevel, metadataProvider: metadataProvider,
                       output: StandardErrorLines.shared.write)
    }

    /// Gets or sets one metadata value of this handler.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Writes the record.
    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let called = event.metadata { merged.merge(called) { $1 } }
        if let error = event.error { merged["error.type"] = .string(String(reflecting: type(of: error))) }
        output(JSONLogLine.render(time: now(), level: event.level, label: label, message: event.message.description,
                                  source: event.source, metadata: merged) + "\n")
    }
}

/// The process's stderr as a sink of whole lines: one lock, so that lines written from many
/// threads (log records, a command's own status lines) never interleave.
public final class StandardErrorLines: Sendable {
    /// The one sink of the process.
    public static let shared = StandardErrorLines()
    private let lock = Mutex(())

    private init() {}

    /// Writes `line` (which carries its own line feed) in one piece.
    public func write(_ line: String) {
        let data = Data(line.utf8)
        lock.withLock { _ in FileHandle.standardError.write(data) }
    }
}
