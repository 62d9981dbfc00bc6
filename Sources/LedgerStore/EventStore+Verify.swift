import Crypto
import Foundation
import LedgerPostgres
import Logging

/// What `verify` found.
public struct VerificationReport: Sendable, Hashable {
    /// Events whose hash was recomputed.
    public var eventsChecked: Int
    /// Streams whose chain was walked.
    public var streamsChecked: Int
    /// Seals whose digest was recomputed.
    public var sealsChecked: Int
    /// The first broken link, or nil when the history is intact.
    public var problem: VerificationProblem?
    /// True when nothing was found broken.
    public var isIntact: Bool { problem == nil }
}

/// A broken link in the ledger's history.
public struct VerificationProblem: Sendable, Hashable, CustomStringConvertible {
    /// What kind of break.
    public enum Kind: String, Sendable, Hashable {
        /// The stored hash does not match the event's content and its predecessor: the event (or
        /// one before it in its stream) was edited.
        case hashMismatch = "hash_mismatch"
        /// A stream's versions are not 1, 2, 3…: an event was removed.
        case versionGap = "version_gap"
        /// A seal's digest or count does not match the events it covers: events were removed,
        /// added behind it, or reordered.
        case sealMismatch = "seal_mismatch"
    }
    public var kind: Kind
    public var streamID: String?
    public var eventID: UUID?
    public var position: Int64?
    public var streamVersion: Int64?
    public var sealNumber: Int64?
    public var message: String

    public var description: String { message }
}

/// A seal: a digest committing to every event before it in the global order.
public struct Seal: Sendable, Hashable {
    public var number: Int64
    public var upTo: GlobalCheckpoint
    public var eventCount: Int64
    public var digest: Data
}

extension EventStore {
    /// Recomputes every stream's hash chain and every seal's digest.
    ///
    /// Reads in one repeatable-read snapshot, so concurrent appends neither disturb nor get
    /// counted. Stops at the first broken link and names it.
    /// - Parameter progress: called now and then with (events checked, events in all).
    public func verify(progress: (@Sendable (Int, Int) -> Void)? = nil) async throws -> VerificationReport {
        try await pool.withConnection { connection in
            try connection.transaction(isolation: .repeatableRead) { connection in
                try Self.verify(on: connection, progress: progress)
            }
        }
    }

    static func verify(on connection: PostgresConnection, progress: (@Sendable (Int, Int) -> Void)?) throws
        -> VerificationReport
    {
        let total = try connection.query("SELECT count(*) FROM events").single().decode(Int.self, at: 0)
        var report = VerificationReport(eventsChecked: 0, streamsChecked: 0, sealsChecked: 0, problem: nil)
        var lastStream = ""
        var lastVersion: Int64 = 0
        var previousHash = Data()
        progress?(0, total)
        while true {
            let rows = try connection.query("""
                SELECT stream_id, stream_version, event_id, position, hash, event_type, schema_version::text,
                       data::text, metadata::text,
                       (extract(epoch FROM occurred_at) * 1000000)::bigint::text,
                       (extract(epoch FROM recorded_at) * 1000000)::bigint::text
                FROM events WHERE (stream_id, stream_version) > (\(lastStream), \(lastVersion))
                ORDER BY events.stream_id, events.stream_version LIMIT 5000
                """, prepare: true)
            if rows.isEmpty { break }
            for row in rows {
                let stream = try row.decode(String.self, at: 0)
                let version = try row.decode(Int64.self, at: 1)
                let eventID = try row.decode(UUID.self, at: 2)
                let position = try row.decode(Int64.self, at: 3)
                let stored = try row.decode(Data.self, at: 4)
                if stream != lastStream {
                    report.streamsChecked += 1
                    previousHash = Data()
                    lastVersion = 0
                }
                if version != lastVersion + 1 {
                    report.problem = VerificationProblem(
                        kind: .versionGap, streamID: stream, eventID: eventID, position: position, streamVersion: version,
                        message: "stream \(stream) jumps from version \(lastVersion) to \(version) at event \(eventID.uuidString.lowercased()) "
                            + "(position \(position)): an event was removed")
                    return report
                }
                var canonical = [stream, String(version), eventID.uuidString.lowercased()]
                for column in 5...10 { canonical.append(try row.decode(String.self, at: column)) }
                var hasher = SHA256()
                hasher.update(data: previousHash)
                hasher.update(data: Data(canonical.joined(separator: "\n").utf8))
                let computed = Data(hasher.finalize())
                if computed != stored {
                    report.problem = VerificationProblem(
                        kind: .hashMismatch, streamID: stream, eventID: eventID, position: position, streamVersion: version,
                        message: "event \(eventID.uuidString.lowercased()) (stream \(stream), version \(version), position \(position)) does not "
                            + "match its hash: it, or the chain before it, was changed")
                    return report
                }
                previousHash = stored
                lastStream = stream
                lastVersion = version
                report.eventsChecked += 1
            }
            progress?(report.eventsChecked, total)
        }
        report.problem = try verifySeals(on: connection, checked: &report.sealsChecked)
        return report
    }

    static func verifySeals(on connection: PostgresConnection, checked: inout Int) throws -> VerificationProblem? {
        let seals = try connection.query("""
            SELECT seal_number, up_to_transaction::text, up_to_position, event_count, previous_digest, digest
            FROM seals ORDER BY seal_number
            """)
        var from = GlobalCheckpoint.start
        var previous: Data?
        for row in seals {
            let number = try row.decode(Int64.self, at: 0)
            let upTo = GlobalCheckpoint(transactionID: try row.decode(UInt64.self, at: 1),
                                        position: try row.decode(Int64.self, at: 2))
            let count = try row.decode(Int64.self, at: 3)
            let storedPrevious = try row.decode(Data?.self, at: 4)
            let digest = try row.decode(Data.self, at: 5)
            let (computed, computedCount) = try sealDigest(previous: previous, from: from, through: upTo, on: connection)
            if storedPrevious != previous || computed != digest || computedCount != count {
                return VerificationProblem(
                    kind: .sealMismatch, streamID: nil, eventID: nil, position: upTo.position, streamVersion: nil,
                    sealNumber: number,
                    message: "seal \(number) (through position \(upTo.position)) covers \(count) events but "
                        + "\(computedCount) are there now, or their hashes differ: events before it were removed or reordered")
            }
            checked += 1
            previous = digest
            from = upTo
        }
        return nil
    }

    /// sha256(previous digest || the hashes of the events after `from` through `through`, in
    /// global order), and how many events that is.
    static func sealDigest(previous: Data?, from: GlobalCheckpoint, through: GlobalCheckpoint,
                           on connection: PostgresConnection) throws -> (Data, Int64)
    {
        var hasher = SHA256()
        if let previous { hasher.update(data: previous) }
        var count: Int64 = 0
        var cursor = from
        while true {
            var query = PostgresQuery(
                sql: "SELECT transaction_id::text AS transaction_text, position, hash FROM events WHERE (transaction_id, position) > (")
            query.append(bind: String(cursor.transactionID))
            query.append(sql: "::xid8, ")
            query.append(bind: cursor.position)
            query.append(sql: ") AND (transaction_id, position) <= (")
            query.append(bind: String(through.transactionID))
            query.append(sql: "::xid8, ")
            query.append(bind: through.position)
            query.append(sql: ") ORDER BY events.transaction_id, events.position LIMIT 10000")
            let rows = try connection.query(query)
            if rows.isEmpty { break }
            for row in rows {
                hasher.update(data: try row.decode(Data.self, at: 2))
                count += 1
            }
            let last = rows[rows.count - 1]
            cursor = GlobalCheckpoint(transactionID: try last.decode(UInt64.self, at: 0),
                                      position: try last.decode(Int64.self, at: 1))
        }
        return (Data(hasher.finalize()), count)
    }

    /// Seals until cancelled: every `interval`, whatever is readable and not sealed yet
    /// (``seal()``), so that dropping whole events from the log's tail is detected without a
    /// cron job. A seal that loses its connection (a server restart) is tried again with
    /// back-off until the database is back (``ConnectionLossRetry``, loop `sealer`: logged once);
    /// any other failure is logged and tried again at the next interval. Several processes may
    /// run this at once (seals are made one at a time).
    public func sealPeriodically(every interval: Duration) async {
        let outage = ConnectionLossRetry(loop: "sealer", logger: logger)
        while !Task.isCancelled {
            do {
                if let made = try await outage.retrying({ try await seal() }) {
                    logger.debug("sealed", metadata: ["seal": "\(made.number)", "events": "\(made.eventCount)"])
                }
            } catch is CancellationError {
                return
            } catch {
                logger.error("sealing failed; trying again next interval", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: interval)
        }
    }

    /// Seals every event readable now that no seal covers yet. Returns nil when there was none.
    ///
    /// Safe to run from several processes: seals are made one at a time under an advisory lock.
    @discardableResult
    public func seal() async throws -> Seal? {
        try await pool.withConnection { connection in
            try connection.transaction { connection in
                try connection.execute("SELECT pg_advisory_xact_lock(\(Int64(0x5345_414C)))")
                let last = try connection.query("""
                    SELECT seal_number, up_to_transaction::text, up_to_position, digest FROM seals
                    ORDER BY seal_number DESC LIMIT 1
                    """).first
                let number = try last?.decode(Int64.self, at: 0) ?? 0
                let from = try last.map {
                    GlobalCheckpoint(transactionID: try $0.decode(UInt64.self, at: 1),
                                     position: try $0.decode(Int64.self, at: 2))
                } ?? .start
                let previous = try last?.decode(Data.self, at: 3)
                // Fix the horizon first, so the digest and the boundary cover the same events.
                let horizon = try connection.query("""
                    SELECT transaction_id::text AS transaction_text, position FROM events
                    WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())
                    ORDER BY events.transaction_id DESC, events.position DESC LIMIT 1
                    """).first
                guard let horizon else { return nil }
                let upTo = GlobalCheckpoint(transactionID: try horizon.decode(UInt64.self, at: 0),
                                            position: try horizon.decode(Int64.self, at: 1))
                guard upTo > from else { return nil }
                let (digest, count) = try Self.sealDigest(previous: previous, from: from, through: upTo, on: connection)
                try connection.execute("""
                    INSERT INTO seals (seal_number, up_to_transaction, up_to_position, event_count, previous_digest, digest)
                    VALUES (\(number + 1), \(String(upTo.transactionID))::xid8, \(upTo.position), \(count), \(previous), \(digest))
                    """)
                return Seal(number: number + 1, upTo: upTo, eventCount: count, digest: digest)
            }
        }
    }
}
