import Foundation
import LedgerPostgres
import Synchronization

/// The last version and hash this process saw committed to each stream: lets the next
/// single-event append skip reading the stream's head.
///
/// A hint names an event that is stored for good: it is remembered only once its append has
/// committed (events are never changed or removed), so the append that uses it
/// (``EventStore/appendNextSQL``) need not look for that event again. It may be stale, since
/// another writer may have appended since: the version after it is then taken, the unique key
/// `(stream_id, stream_version)` makes the hinted insert store nothing, and the store falls back
/// to the statement that reads the head. (A database restored to an earlier point under a
/// running process is the one thing a hint cannot see: restart the processes that append after
/// a restore, docs/operations.md.)
final class StreamHeads: Sendable {
    struct Head: Equatable, Sendable {
        var version: Int64
        var hash: Data
    }

    /// Streams remembered at most; past it the hints are dropped and learnt again.
    static let capacity = 50_000

    private let heads = Mutex<[String: Head]>([:])
    private let hits = Atomic<Int>(0)

    /// Appends that went in through a hint (``EventStore/appendNextSQL`` inserted the event).
    var hitCount: Int { hits.load(ordering: .relaxed) }

    /// Counts an append that went in through its hint.
    func noteHit() { hits.add(1, ordering: .relaxed) }

    /// The hint for `stream`, if any.
    func head(of stream: String) -> Head? {
        heads.withLock { $0[stream] }
    }

    /// Remembers `stream`'s newest event, appended on `connection`, once it is committed: now
    /// outside a transaction (the statement committed it), after the commit of a transaction the
    /// wrapper manages, and not at all inside one it does not (a plain `BEGIN`), whose end it
    /// cannot see.
    func rememberCommitted(_ stream: String, version: Int64, hash: Data, on connection: PostgresConnection) {
        guard connection.isInTransaction else { return remember(stream, version: version, hash: hash) }
        connection.afterCommit { [self] in remember(stream, version: version, hash: hash) }
    }

    /// Remembers `stream`'s newest committed event, unless a later one is already remembered
    /// (transactions' commit actions may run out of order).
    private func remember(_ stream: String, version: Int64, hash: Data) {
        heads.withLock { heads in
            if let known = heads[stream], known.version >= version { return }
            if heads.count >= Self.capacity, heads[stream] == nil { heads.removeAll(keepingCapacity: true) }
            heads[stream] = Head(version: version, hash: hash)
        }
    }
}
