import Foundation
import LedgerPostgres
import LedgerStore

/// Reads a rebuild's bulk chunks ahead of the fold, in two stages on threads and sessions of
/// their own: one scans the log (the server's `COPY` and the parsing of its lines), the next
/// opens personal fields (docs/privacy.md). With the fold on the rebuild's thread, the three
/// overlap, so the bulk phase takes about as long as the slowest of them, not their sum.
///
/// Both stages follow the same gap-safe order and horizon rule as every scan
/// (``LogScan/chunk(after:types:limit:on:)``); the rebuild's own checkpoint stays the last event
/// it folded, so nothing read ahead is skipped or counted twice.
final class ChunkPrefetcher: Sendable {
    private let scanned = ChunkPipe()
    private let opened = ChunkPipe()
    private let store: EventStore
    private let types: [String]
    private let selection: PersonalFieldSelection
    private let chunkSize: Int

    /// A prefetcher of `types`' events from the start of `store`'s log, `chunkSize` at a time,
    /// with the personal fields in `selection` opened; its sessions are opened like the store
    /// pool's (``PostgresPool/openSession()``), outside the pool's limit.
    init(store: EventStore, types: [String], selection: PersonalFieldSelection, chunkSize: Int) {
        self.store = store
        self.types = types
        self.selection = selection
        self.chunkSize = chunkSize
    }

    /// Starts both stages.
    func start() {
        Thread { [self] in scan() }.start()
        Thread { [self] in open() }.start()
    }

    /// The next chunk in log order, its personal fields opened; nil after the last. Rethrows a
    /// stage's error.
    func next() throws -> [RecordedEvent]? { try opened.next() }

    /// Stops both stages; chunks not taken are dropped.
    func cancel() {
        scanned.cancel()
        opened.cancel()
    }

    private func scan() {
        defer { scanned.finish() }
        do {
            let connection = try store.pool.openSession()
            var checkpoint = GlobalCheckpoint.start
            while true {
                let chunk = try LogScan.chunk(after: checkpoint, types: types, limit: chunkSize, on: connection)
                guard scanned.hand(.success(chunk)), let last = chunk.last, chunk.count == chunkSize else { return }
                checkpoint = last.checkpoint
            }
        } catch {
            _ = scanned.hand(.failure(error))
        }
    }

    private func open() {
        defer { opened.finish() }
        do {
            let connection = store.privacy.isEnabled ? try store.pool.openSession() : nil
            while var chunk = try scanned.next() {
                if let connection { try store.privacy.reveal(&chunk, keeping: selection, on: connection) }
                guard opened.hand(.success(chunk)) else { return }
            }
            _ = opened.hand(.success([]))
        } catch {
            _ = opened.hand(.failure(error))
        }
    }
}

/// A bounded hand-over of chunks between two threads.
final class ChunkPipe: @unchecked Sendable {
    // `@unchecked`: every mutable member is read and written under `condition`.
    private let condition = NSCondition()
    private var ready: [Result<[RecordedEvent], any Error>] = []
    private var finished = false
    private var cancelled = false
    private let depth: Int

    /// A pipe holding at most `depth` chunks handed over but not yet taken.
    init(depth: Int = 2) { self.depth = max(1, depth) }

    /// Hands a chunk over, waiting while `depth` are already waiting; false once cancelled.
    func hand(_ chunk: Result<[RecordedEvent], any Error>) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while ready.count >= depth && !cancelled { condition.wait() }
        guard !cancelled else { return false }
        ready.append(chunk)
        condition.broadcast()
        return true
    }

    /// The next chunk; nil after the last (an empty chunk, or the sender finished). Rethrows the
    /// sender's error.
    func next() throws -> [RecordedEvent]? {
        condition.lock()
        defer { condition.unlock() }
        while ready.isEmpty && !finished && !cancelled { condition.wait() }
        guard !ready.isEmpty else { return nil }
        let chunk = try ready.removeFirst().get()
        condition.broadcast()
        return chunk.isEmpty ? nil : chunk
    }

    /// No more chunks will come.
    func finish() {
        condition.lock()
        finished = true
        condition.broadcast()
        condition.unlock()
    }

    /// Stops both sides; chunks not taken are dropped.
    func cancel() {
        condition.lock()
        cancelled = true
        ready.removeAll()
        condition.broadcast()
        condition.unlock()
    }
}
