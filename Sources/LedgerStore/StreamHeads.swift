import Foundation
import Synchronization

/// The last version and hash this process saw appended to each stream: a hint that lets the
/// next single-event append skip reading the stream's head.
///
/// A hint only, never trusted: the append that uses it (``EventStore/appendNextSQL``) inserts
/// nothing unless the event it names is stored with exactly that hash and the version after it
/// is free, and then falls back to the statement that reads the head. So a hint from a
/// transaction that rolled back, from another process's later append, or from a database that
/// was restored costs one extra statement, never a wrong chain.
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

    /// Remembers `stream`'s newest event as this process just appended it.
    func remember(_ stream: String, version: Int64, hash: Data) {
        heads.withLock { heads in
            if heads.count >= Self.capacity, heads[stream] == nil { heads.removeAll(keepingCapacity: true) }
            heads[stream] = Head(version: version, hash: hash)
        }
    }
}
