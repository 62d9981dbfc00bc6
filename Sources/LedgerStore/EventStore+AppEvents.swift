import Foundation
import LedgerDomain
import LedgerPostgres

/// Which events of the log are one app's, for readers that follow the log for that app (the HTTP
/// API's catch-up subscriptions, through ``EventFilter/app``).
///
/// An app's events are those of:
/// - its per-app streams: `device-<app>/…` (its devices' facts and erasures), `decision-<app>/…`
///   (the attribution decisions about them), `skan-<app>/…` (its SKAdNetwork postbacks, refused
///   ones included) and `skan-model-<app>` (its conversion model);
/// - the send streams (`send-<uuid>`) whose `SendRequested` names one of the app's device streams
///   in `device_stream_id`: the provider calls its devices' facts caused.
///
/// Stream ids decide it, not metadata: every per-app stream id names its app before the first
/// `/`, which no app id holds, and a send stream belongs to the device its request names (the
/// rule ``DataSubjects/ledger`` seals and erases by). A reader should still refuse an event whose
/// metadata `app_id` names another app (a stream written under an older encoding).
extension EventStore {
    /// The stream-id prefixes (matched as text) and exact names of `app`'s own streams.
    public static func appStreams(of app: String) -> (prefixes: [String], exact: [String]) {
        let prefixes = [StreamCategory.device, .decision, .skan].map { "\($0.rawValue)-\(app)/" }
        return (prefixes, [StreamID.skanModelPrefix + app])
    }

    /// Appends ` AND (…)`: the event's stream is one of `app`'s (see the extension's comment).
    /// Per-app streams are matched by prefix on the "C"-collated stream id (an index range each);
    /// send streams through the partial index on `SendRequested`'s `device_stream_id`.
    static func appendAppStreams(of app: String, to query: inout PostgresQuery) {
        let (prefixes, exact) = appStreams(of: app)
        query.append(sql: " AND (stream_id = ANY(")
        query.append(bind: PostgresQuery.textArrayLiteral(exact))
        query.append(sql: "::text[])")
        for prefix in prefixes {
            query.append(sql: " OR stream_id LIKE ")
            query.append(bind: likePrefix(prefix) + "%")
        }
        query.append(sql: """
             OR (stream_id LIKE 'send-%' AND stream_id IN (SELECT stream_id FROM events \
            WHERE event_type = '\(SendRequested.eventType)' AND data ->> 'device_stream_id' LIKE 
            """)
        query.append(bind: likePrefix(StreamCategory.device.rawValue + "-" + app + "/") + "%")
        query.append(sql: ")))")
    }

    /// The checkpoint just after the event at `position`, and whether that event is readable yet
    /// by the gap-safe rule (``readAll(after:limit:filter:asOf:)``). Nil when no committed event
    /// has that position.
    ///
    /// A reader resumed from the checkpoint of a readable event sees every event after that one
    /// in the log's order, exactly once. One that is committed but not readable yet (a
    /// transaction that began before it, anywhere on the server, is still running) may still have
    /// events placed before it in the log's order: a reader must wait until it is readable before
    /// starting from it, or it would skip them.
    public func checkpoint(atPosition position: Int64) async throws -> (checkpoint: GlobalCheckpoint, readable: Bool)? {
        try await pool.withConnection { connection in
            let rows = try connection.query("""
                SELECT transaction_id::text, transaction_id < pg_snapshot_xmin(pg_current_snapshot())
                FROM events WHERE position = \(position)
                """)
            guard let row = rows.first else { return nil }
            return (GlobalCheckpoint(transactionID: try row.decode(UInt64.self, at: 0), position: position),
                    try row.decode(Bool.self, at: 1))
        }
    }
}

extension EventStore {
    /// ``readAll(after:limit:filter:asOf:)``, except that a read finding no event that matches
    /// `filter` still moves the checkpoint: to the last readable event of the whole log.
    ///
    /// A follower of a narrow filter (one quiet app among many busy ones) would otherwise read
    /// from the same old checkpoint on every wake-up, scanning every other app's events since. Both
    /// statements run in one read-only `REPEATABLE READ` transaction, so they share one snapshot
    /// and one read horizon: every event below that horizon is final, none of them matched, so
    /// none that matches can ever appear between the old checkpoint and the new one. The
    /// transaction takes no transaction id, so it holds no other reader's horizon back.
    public func readAllSkippingUnmatched(after checkpoint: GlobalCheckpoint, limit: Int, filter: EventFilter) async throws
        -> GlobalBatch
    {
        let query = Self.globalReadQuery(after: checkpoint, limit: limit, filter: filter, asOf: nil)
        return try await pool.withConnection { [privacy] connection in
            try connection.run(script: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            var events: [RecordedEvent]
            var tail: GlobalCheckpoint?
            do {
                events = try connection.query(query).map(Self.record)
                if events.isEmpty {
                    tail = try connection.query("""
                        SELECT transaction_id::text, position FROM events
                        WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())
                        ORDER BY events.transaction_id DESC, events.position DESC LIMIT 1
                        """).first.map { GlobalCheckpoint(transactionID: try $0.decode(UInt64.self, at: 0),
                                                          position: try $0.decode(Int64.self, at: 1)) }
                }
                try connection.run(script: "COMMIT")
            } catch {
                try? connection.run(script: "ROLLBACK")
                throw error
            }
            try privacy.reveal(&events, on: connection)
            let next = events.last?.checkpoint ?? max(checkpoint, tail ?? checkpoint)
            return GlobalBatch(events: events, checkpoint: next)
        }
    }
}
