import Foundation
import LedgerPostgres
import Synchronization

/// The last version and `recorded_at` this process saw committed to each stream: lets the next
/// single-event append skip reading the stream's head (the cached-head insert,
/// ``EventStore/appendNextSQL``).
///
/// A hint names an event that was committed: it is remembered only once its append has
/// committed (at once outside a transaction, after the commit inside one), so the append that
/// uses it (``EventStore/appendNextSQL``) need not look for that event again. A hint may be stale,
/// since another writer may have appended since: the version after it is then taken, the unique
/// key `(stream_id, stream_version)` makes the hinted insert store nothing, and the store falls
/// back to the statement that reads the head.
///
/// A committed event can still be lost beneath a running process: a crash with
/// `synchronous_commit = off`, a failover to a standby that had not received it, a restore to an
/// earlier point. Each of those ends the sessions that saw the event (a failover: once the old
/// primary is stopped; a standby's own sessions survive its promotion, so sessions opened on a
/// standby never use hints). So a hint keeps how many sessions the process had opened before the
/// statement that stored its event was sent (``PostgresConnection/sessionsOpened``), and is used
/// only on a session opened before that (``PostgresConnection/sessionNumber``): one that, still
/// working, has been talking to the same server since before the event was committed. Newer
/// sessions read the head, and learn hints of their own. (docs/operations.md: what deployments
/// this assumes.)
final class StreamHeads: Sendable {
    struct Head: Equatable, Sendable {
        var version: Int64
        /// The event's `recorded_at`: the stream's next event is never recorded before it.
        var recordedAt: Date
        /// The event's `shard_key` (schema/0021; nil for an event stored before it): a send's
        /// next event takes the same.
        var shardKey: String?
        /// ``PostgresConnection/sessionsOpened`` before the statement that stored the event.
        var sessionsOpened: UInt64
    }

    /// Streams remembered at most; past it the hints are dropped and learnt again (a shard's
    /// share at a time).
    static let capacity = 50_000

    /// The hints, in shards chosen by the stream's hash: every append reads and writes one, so
    /// with a single lock concurrent writers queued on it.
    private let shards: [Shard] = (0..<Shard.count).map { _ in Shard() }

    private final class Shard: Sendable {
        static let count = 16
        static let capacity = StreamHeads.capacity / count
        let heads = Mutex<[String: Head]>([:])
    }

    /// The shard of `stream`: FNV-1a over its last eight bytes (where stream ids differ: a device's
    /// or send's id, a sequence number), cheaper than hashing all of it once more.
    private func shard(of stream: String) -> Shard {
        var hash: UInt32 = 2_166_136_261
        for byte in stream.utf8.suffix(8) { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        return shards[Int(hash % UInt32(Shard.count))]
    }
    private let hits = Atomic<Int>(0)

    /// Appends that went in through a hint (``EventStore/appendNextSQL`` inserted the event).
    var hitCount: Int { hits.load(ordering: .relaxed) }

    /// Counts an append that went in through its hint.
    func noteHit() { hits.add(1, ordering: .relaxed) }

    /// The hint for `stream`, if any, whichever session it could be used on.
    func head(of stream: String) -> Head? {
        shard(of: stream).heads.withLock { $0[stream] }
    }

    /// The hint for `stream` if `connection` may use it: a session opened before the hinted
    /// event's statement was sent.
    func head(of stream: String, usableOn connection: PostgresConnection) -> Head? {
        head(of: stream).flatMap { usable($0, on: connection) }
    }

    /// `head` if `connection` may use it (as ``head(of:usableOn:)``).
    func usable(_ head: Head, on connection: PostgresConnection) -> Head? {
        connection.sessionNumber <= head.sessionsOpened ? head : nil
    }

    /// Remembers `stream`'s newest event, appended on `connection` by a statement sent when
    /// ``PostgresConnection/sessionsOpened`` was `sessionsOpened`, once it is committed: now
    /// outside a transaction (the statement committed it), after the commit of a transaction the
    /// wrapper manages, and not at all inside one it does not (a plain `BEGIN`), whose end it
    /// cannot see.
    func rememberCommitted(_ stream: String, version: Int64, recordedAt: Date, shardKey: String?, sessionsOpened: UInt64,
                           on connection: PostgresConnection) {
        let head = Head(version: version, recordedAt: recordedAt, shardKey: shardKey, sessionsOpened: sessionsOpened)
        guard connection.isInTransaction else { return remember(stream, head) }
        connection.afterCommit { [self] in remember(stream, head) }
    }

    /// Remembers `head` for `stream` unless the hint already there names a later event and is
    /// usable on as many sessions (transactions' commit actions may run out of order). Any
    /// committed event makes a safe hint; an older one only costs a fallback.
    private func remember(_ stream: String, _ head: Head) {
        shard(of: stream).heads.withLock { heads in
            if let index = heads.index(forKey: stream) {  // one look-up for a known stream
                let known = heads.values[index]
                if known.version >= head.version, known.sessionsOpened >= head.sessionsOpened { return }
                heads.values[index] = head
                return
            }
            if heads.count >= Shard.capacity { heads.removeAll(keepingCapacity: true) }
            heads[stream] = head
        }
    }
}
