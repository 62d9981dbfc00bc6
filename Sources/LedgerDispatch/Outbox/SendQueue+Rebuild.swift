import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerStore

extension SendQueue {
    /// Rebuilds the queue from the log: every send with a `SendRequested` and no terminal event is
    /// pending — or parked, when its latest `SendParked` has no `SendUnparked` after it — with the attempt count, the tries that made no call and the next due time its
    /// stream records. The queue is a projection: this is what ops run if it was lost or damaged.
    /// Nothing is sent by it.
    ///
    /// The send streams are folded from the store's scan of the log, under one snapshot taken
    /// after the queue is locked (`LOCK` takes none), so no send committed behind the scan is
    /// missed; a send leaves the fold as soon as its terminal event is read.
    ///
    /// `progress`, when given, is called after each chunk of the scan with (the log position the
    /// scan reached, the log's last position): a measure of the scan, not a count of sends.
    @discardableResult
    public static func rebuild(deadline: TimeInterval = 7 * 86_400, on connection: PostgresConnection,
                               progress: ((Int, Int) -> Void)? = nil) throws -> Int {
        try connection.transaction(isolation: .repeatableRead) { connection in
            try connection.execute("LOCK TABLE send_queue IN EXCLUSIVE MODE")
            var fold = PendingSendFold()
            var checkpoint = GlobalCheckpoint.start
            let chunkSize = 10_000
            let lastPosition = try progress.map { _ in Int(try EventStore.lastPosition(on: connection)) } ?? 0
            while true {
                let chunk = try LogScan.chunk(after: checkpoint, types: PendingSendFold.types, limit: chunkSize,
                                              wholeSnapshot: true, on: connection)
                for event in chunk { fold.apply(event) }
                progress?(chunk.count == chunkSize ? Int(chunk.last?.position ?? 0) : lastPosition, lastPosition)
                guard let last = chunk.last, chunk.count == chunkSize else { break }
                checkpoint = GlobalCheckpoint(transactionID: last.transactionID, position: last.position)
            }
            try connection.execute("DELETE FROM send_queue")
            let rows = fold.rows()
            var inserted = 0
            // In statements of `chunkSize` sends: a backlog of any size stays far from a jsonb
            // value's limit, and only one chunk's text is held at a time.
            for start in stride(from: 0, to: rows.count, by: chunkSize) {
                let sends = "[" + rows[start..<min(start + chunkSize, rows.count)].joined(separator: ",") + "]"
                inserted += try insert(sends, deadline: deadline, on: connection)
            }
            return inserted
        }
    }

    /// Inserts the pending sends of `sends` (a JSON array of ``PendingSendFold/rows()``).
    private static func insert(_ sends: String, deadline: TimeInterval, on connection: PostgresConnection) throws -> Int {
        try connection.execute("""
            INSERT INTO send_queue (send_id, stream_id, provider, kind, device_stream_id, lane, enqueued_position,
                enqueued_at, not_before, deadline, attempt, uncalled, request, state, shard_key)
            SELECT (s.request ->> 'send_id')::uuid, s.stream_id, s.request ->> 'provider', s.request ->> 'kind',
                s.request ->> 'device_stream_id',
                CASE s.request ->> 'provider' WHEN 'branch' THEN s.request ->> 'device_stream_id'
                    WHEN 'singular' THEN 'singular:' || (s.request ->> 'device_stream_id') END,  -- lane(provider:deviceStreamID:)
                s.position, s.occurred_at,
                greatest(coalesce((s.request ->> 'not_before')::timestamptz, s.occurred_at),
                         coalesce((SELECT max(t.n::timestamptz) FROM jsonb_array_elements_text(s.not_befores) AS t(n)),
                                  s.occurred_at)),
                s.occurred_at + \(deadline) * interval '1 second', s.attempt, s.uncalled, s.request,
                CASE WHEN s.parked THEN 'parked' ELSE 'pending' END,
                ledger_shard_key(s.request ->> 'device_stream_id', '{}', NULL)
            FROM jsonb_to_recordset(\(sends)::jsonb) AS s(stream_id text, position bigint, occurred_at timestamptz,
                request jsonb, not_befores jsonb, attempt integer, uncalled integer, parked boolean)
            """)
    }
}

/// The pending sends of the log, folded from its send events in scan order: per send stream, its
/// `SendRequested`, its tries' highest attempt, its retries' due times (raw JSON), its tries
/// that made no call, and whether it is parked (a `SendParked` not followed by `SendUnparked`). A stream leaves the fold when its terminal event is read; one whose terminal
/// event comes first (a later transaction id can commit first) drops its request when it comes.
struct PendingSendFold {
    private struct Send {
        var request: RecordedEvent?
        var attempt = 0
        var notBefores: [String] = []
        var uncalled = 0
        var parked = false
    }

    private static let terminalTypes = EventCatalog.standard.streamEndingTypes
    private static let sendPrefix = StreamCategory.send.rawValue + "-"
    /// The event types the fold reads.
    static let types = [SendRequested.eventType, SendAttempted.eventType, RetryScheduled.eventType,
                        SendOutcomeUnknown.eventType, SendParked.eventType, SendUnparked.eventType] + terminalTypes.sorted()
    private var sends: [String: Send] = [:]
    private var endedEarly: Set<String> = []

    mutating func apply(_ event: RecordedEvent) {
        let stream = event.streamID
        guard stream.hasPrefix(Self.sendPrefix) else { return }
        if endedEarly.contains(stream) {
            if event.type == SendRequested.eventType { endedEarly.remove(stream) }
        } else if Self.terminalTypes.contains(event.type) {
            if sends.removeValue(forKey: stream)?.request == nil { endedEarly.insert(stream) }
        } else if event.type == SendRequested.eventType {
            sends[stream, default: Send()].request = event
        } else if event.type == SendParked.eventType {
            sends[stream, default: Send()].parked = true
        } else if event.type == SendUnparked.eventType {
            sends[stream, default: Send()].parked = false
        } else {
            let members = JSONObjectBytes.members(of: ArraySlice(event.data)) ?? []
            func member(_ key: String) -> String? { members.first { $0.key == key }.map { String(decoding: $0.raw, as: UTF8.self) } }
            var send = sends[stream] ?? Send()
            send.attempt = max(send.attempt, member("attempt").flatMap { Int($0) } ?? 0)
            if event.type == RetryScheduled.eventType {
                if let notBefore = member("not_before") { send.notBefores.append(notBefore) }
                if member("called") == "false" { send.uncalled += 1 }
            }
            sends[stream] = send
        }
    }

    /// The pending sends as the JSON objects the rebuild inserts from.
    func rows() -> [String] {
        sends.compactMap { stream, send in
            guard let request = send.request,
                let streamJSON = try? JSONSerialization.data(withJSONObject: stream, options: [.fragmentsAllowed])
            else { return nil }
            return #"{"stream_id":\#(String(decoding: streamJSON, as: UTF8.self)),"position":\#(request.position),"occurred_at":"\#(PostgresTimestamp.format(request.occurredAt))","#
                + #""request":\#(String(decoding: request.data, as: UTF8.self)),"not_befores":[\#(send.notBefores.joined(separator: ","))],"#
                + #""attempt":\#(send.attempt),"uncalled":\#(send.uncalled),"parked":\#(send.parked)}"#
        }
    }
}
