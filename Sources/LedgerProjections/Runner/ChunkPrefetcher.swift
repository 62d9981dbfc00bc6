import Foundation
import LedgerPostgres
import LedgerStore
import Logging

/// Reads a rebuild's bulk chunks on a thread and a session of its own, a chunk or two ahead of
/// the fold: scanning and parsing the log (and opening personal fields) overlaps with folding,
/// so the bulk phase takes about the longer of the two instead of their sum.
///
/// The reader follows the same gap-safe order and horizon rule as every scan
/// (``LogScan/chunk(after:types:limit:on:)``); the rebuild's own checkpoint stays the last event
/// it folded, so nothing read ahead is skipped or counted twice.
final class ChunkPrefetcher: @unchecked Sendable {
    // `@unchecked`: every mutable member is read and written under `condition`.
    private let condition = NSCondition()
    private var ready: [Result<[RecordedEvent], any Error>] = []
    private var finished = false
    private var cancelled = false

    private let conninfo: String
    private let store: EventStore
    private let types: [String]
    private let chunkSize: Int
    private let depth: Int
    private let logger: Logger

    /// A prefetcher of `types`' events from the start of the log, `chunkSize` at a time, holding
    /// at most `depth` chunks that were read but not yet taken.
    init(conninfo: String, store: EventStore, types: [String], chunkSize: Int, depth: Int = 2, logger: Logger) {
        self.conninfo = conninfo
        self.store = store
        self.types = types
        self.chunkSize = chunkSize
        self.depth = max(1, depth)
        self.logger = logger
    }

    /// Starts the reading thread.
    func start() {
        Thread { [self] in read() }.start()
    }

    /// The next chunk in log order; nil after the last. Rethrows the reader's error.
    func next() throws -> [RecordedEvent]? {
        condition.lock()
        defer { condition.unlock() }
        while ready.isEmpty && !finished { condition.wait() }
        guard !ready.isEmpty else { return nil }
        let chunk = try ready.removeFirst().get()
        condition.broadcast()
        return chunk.isEmpty ? nil : chunk
    }

    /// Stops the reader (after the chunk it is reading); chunks not taken are dropped.
    func cancel() {
        condition.lock()
        cancelled = true
        ready.removeAll()
        condition.broadcast()
        condition.unlock()
    }

    private func read() {
        defer {
            condition.lock()
            finished = true
            condition.broadcast()
            condition.unlock()
        }
        do {
            let connection = try PostgresConnection(conninfo: conninfo, logger: logger)
            var checkpoint = GlobalCheckpoint.start
            while true {
                var chunk = try LogScan.chunk(after: checkpoint, types: types, limit: chunkSize, on: connection)
                try store.privacy.reveal(&chunk, on: connection)  // personal fields opened as every read does
                guard hand(.success(chunk)), let last = chunk.last, chunk.count == chunkSize else { return }
                checkpoint = last.checkpoint
            }
        } catch {
            _ = hand(.failure(error))
        }
    }

    /// Hands a chunk to the fold, waiting while `depth` chunks are already waiting; false once cancelled.
    private func hand(_ chunk: Result<[RecordedEvent], any Error>) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while ready.count >= depth && !cancelled { condition.wait() }
        guard !cancelled else { return false }
        ready.append(chunk)
        condition.broadcast()
        return true
    }
}
