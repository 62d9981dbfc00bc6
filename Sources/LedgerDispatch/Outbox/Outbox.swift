import Crypto
import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerStore

/// The transactional outbox: a decision to send is a `SendRequested` event, appended in the same
/// transaction as the fact that caused it, with its queue row and a `NOTIFY ledger_sends`.
///
/// Enqueueing is idempotent: a send's id is derived from its idempotency key (the same intended
/// call always has the same key, e.g. `google:first_open:<cause event id>`), and its
/// `SendRequested` is appended under that id, so the same cause never enqueues twice — not after
/// a retry, not after the send finished and left the queue.
public enum Outbox {
    /// The channel workers listen on.
    public static let channel = "ledger_sends"

    /// The send id for an idempotency key: a name-based UUID (SHA-256, version 8 layout) of
    /// `ledger.send:` + the key.
    public static func sendID(forKey key: String) -> UUID {
        nameBasedID("ledger.send:" + key)
    }

    /// The id of a try's `SendAttempted`: name-based on the send and the attempt number, so that a
    /// try recorded twice (its first statement committed, but the answer lost with the connection)
    /// is refused as a duplicate instead of stored twice.
    public static func attemptEventID(sendID: UUID, attempt: Int) -> UUID {
        nameBasedID("ledger.attempt:\(sendID.lowercasedText):\(attempt)")
    }

    /// A name-based UUID (SHA-256 of `name`, version 8 layout).
    private static func nameBasedID(_ name: String) -> UUID {
        var bytes = Array(SHA256.hash(data: Data(name.utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x80
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }

    /// A send request whose id follows from its idempotency key.
    public static func request(
        provider: SendProvider, kind: SendKind, cause: RecordedEvent, deviceStreamID: StreamID, idempotencyKey: String,
        notBefore: Date? = nil, parameters: [String: String]? = nil
    ) throws(RuleViolation) -> SendRequested {
        SendRequested(
            sendID: sendID(forKey: idempotencyKey), provider: provider, kind: kind, causeEventID: cause.id,
            causeStreamID: try StreamID(cause.streamID), deviceStreamID: deviceStreamID, idempotencyKey: idempotencyKey,
            notBefore: notBefore, parameters: parameters)
    }

    /// What an enqueue did.
    public struct Enqueued: Sendable, Hashable {
        /// The send.
        public var sendID: UUID
        /// The `SendRequested` event's position.
        public var position: Int64
        /// True when this send had been requested before: nothing was written.
        public var wasDuplicate: Bool
    }

    /// Requests a send inside the caller's transaction (open one around the cause's append and
    /// this call, so both commit or neither does).
    ///
    /// - Parameters:
    ///   - request: the send; its `send_id` should come from ``sendID(forKey:)``.
    ///   - now: when it is requested (the queue's `enqueued_at`, and `not_before` when the
    ///     request has none).
    ///   - deadline: how long the send may keep retrying before it fails for good.
    public static func enqueue(_ request: SendRequested, store: EventStore, now: Date, deadline: TimeInterval = 7 * 86_400,
                               on connection: PostgresConnection) throws -> Enqueued {
        let event = try NewEvent(request, id: request.sendID, occurredAt: now)
        let data = event.data
        let stream = StreamID.send(id: request.sendID).rawValue
        let result = try store.append([event], to: stream, expected: .noStream, on: connection)
        let position = result.events.first?.position ?? 0
        if !result.wasDuplicate {
            let lane = SendQueue.lane(provider: request.provider, deviceStreamID: request.deviceStreamID.rawValue)
            try connection.execute("""
                INSERT INTO send_queue (send_id, stream_id, provider, kind, device_stream_id, lane, enqueued_position,
                    enqueued_at, not_before, deadline, request, shard_key)
                VALUES (\(request.sendID), \(stream), \(request.provider.rawValue), \(request.kind.rawValue),
                    \(request.deviceStreamID.rawValue), \(lane), \(position), \(now), \(request.notBefore ?? now),
                    \(now.addingTimeInterval(deadline)), \(PostgresValue.jsonb(String(decoding: data, as: UTF8.self))),
                    ledger_shard_key(\(request.deviceStreamID.rawValue)::text, '{}', NULL))
                ON CONFLICT DO NOTHING
                """)
            try connection.notify(channel: channel)
        }
        return Enqueued(sendID: request.sendID, position: position, wasDuplicate: result.wasDuplicate)
    }
}
