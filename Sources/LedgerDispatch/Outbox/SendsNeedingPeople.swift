import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerStore
import Metrics

/// A send no worker will finish by itself: failed for good (`SendFailed`: refused by its builder,
/// refused by the provider, retries exhausted, deadline passed) or parked after a try whose
/// outcome is unknown (`SendParked`, not yet settled). What `ledger sends list` prints and
/// `ledger explain` shows.
public struct SendNeedingPeople: Sendable, Codable, Hashable {
    /// Why no worker finishes it.
    public enum State: String, Sendable, Codable, CaseIterable {
        /// Failed for good (`SendFailed`).
        case failed
        /// Parked for an operator (`SendParked`, no `SendUnparked` or terminal event after it).
        case parked
    }

    /// The send.
    public var sendID: UUID
    /// Its device's app, when the device stream names one (`device-<app>/<device>`).
    public var app: String?
    /// Who it calls.
    public var provider: SendProvider
    /// Which call.
    public var kind: SendKind
    /// The device's stream.
    public var deviceStreamID: String
    /// Failed or parked.
    public var state: State
    /// The rule of its `SendFailed` or `SendParked` (e.g. `singular_outcome_unknown`,
    /// `retries_exhausted`, a builder's refusal such as `locale_invalid`).
    public var rule: String
    /// When that event was recorded by the worker (its `occurred_at`).
    public var at: Date

    /// A send that needs people.
    public init(sendID: UUID, app: String?, provider: SendProvider, kind: SendKind, deviceStreamID: String,
                state: State, rule: String, at: Date) {
        self.sendID = sendID
        self.app = app
        self.provider = provider
        self.kind = kind
        self.deviceStreamID = deviceStreamID
        self.state = state
        self.rule = rule
        self.at = at
    }

    enum CodingKeys: String, CodingKey {
        case sendID = "send_id"
        case app, provider, kind
        case deviceStreamID = "device_stream_id"
        case state, rule, at
    }

    /// Reads what ``encode(to:)`` writes.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let id = try container.decode(String.self, forKey: .sendID)
        guard let sendID = UUID(uuidString: id) else {
            throw DecodingError.dataCorruptedError(forKey: .sendID, in: container, debugDescription: "send_id must be a UUID")
        }
        self.init(sendID: sendID, app: try container.decodeIfPresent(String.self, forKey: .app),
                  provider: try container.decode(SendProvider.self, forKey: .provider),
                  kind: try container.decode(SendKind.self, forKey: .kind),
                  deviceStreamID: try container.decode(String.self, forKey: .deviceStreamID),
                  state: try container.decode(State.self, forKey: .state), rule: try container.decode(String.self, forKey: .rule),
                  at: try container.decode(Date.self, forKey: .at))
    }

    /// The send id in lowercase, as its stream (`send-<uuid>`) and `ledger sends retry|cancel` write it.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(sendID.uuidString.lowercased(), forKey: .sendID)
        try container.encodeIfPresent(app, forKey: .app)
        try container.encode(provider, forKey: .provider)
        try container.encode(kind, forKey: .kind)
        try container.encode(deviceStreamID, forKey: .deviceStreamID)
        try container.encode(state, forKey: .state)
        try container.encode(rule, forKey: .rule)
        try container.encode(at, forKey: .at)
    }
}

/// The sends that need people: listed from the log and the queue, folded from one device's
/// history, and counted in a metric as the worker leaves them so.
public enum SendsNeedingPeople {
    /// The metric's label: every send the worker failed for good or parked, by `provider`, `app`,
    /// `state` (`failed` or `parked`) and `rule`. An alert on its rate tells operators there is
    /// work for them (`ledger sends list`).
    public static let metricLabel = "ledger_sends_needing_people_total"

    /// Counts one send the worker has just failed for good or parked (``metricLabel``).
    public static func count(provider: String, deviceStreamID: String, state: SendNeedingPeople.State, rule: String) {
        let app = (try? StreamID(deviceStreamID))?.tenant?.app.rawValue ?? "unknown"
        Counter(label: metricLabel, dimensions: [("provider", provider), ("app", app), ("state", state.rawValue), ("rule", rule)])
            .increment()
    }

    /// The sends in `state`, oldest first, of `app` only when given. Failed sends are read from
    /// the log (their `SendFailed` and `SendRequested`; indexed by type), parked ones from the
    /// queue (state `parked`) with their latest `SendParked`. Personal fields are not read.
    public static func list(state: SendNeedingPeople.State, app: AppID? = nil,
                            on connection: PostgresConnection) throws -> [SendNeedingPeople] {
        // The app's device streams begin `device-<app>/` (no app id holds '/').
        let prefix = app.map { StreamCategory.device.rawValue + "-" + $0.rawValue + "/" } ?? ""
        let rows: PostgresRows
        switch state {
        case .failed:
            rows = try connection.query("""
                SELECT r.data ->> 'send_id', r.data ->> 'provider', r.data ->> 'kind', r.data ->> 'device_stream_id',
                       f.data ->> 'rule', f.occurred_at
                FROM events AS f
                JOIN events AS r ON r.stream_id = f.stream_id AND r.event_type = 'SendRequested'
                WHERE f.event_type = 'SendFailed' AND starts_with(r.data ->> 'device_stream_id', \(prefix))
                ORDER BY f.position
                """)
        case .parked:
            rows = try connection.query("""
                SELECT q.send_id::text, q.provider, q.kind, q.device_stream_id, p.data ->> 'rule', p.occurred_at
                FROM send_queue AS q
                CROSS JOIN LATERAL (SELECT data, occurred_at FROM events AS e
                                    WHERE e.stream_id = q.stream_id AND e.event_type = 'SendParked'
                                    ORDER BY e.stream_version DESC LIMIT 1) AS p
                WHERE q.state = 'parked' AND starts_with(q.device_stream_id, \(prefix))
                ORDER BY p.occurred_at, q.enqueued_position
                """)
        }
        return try rows.map { row in
            let device = try row.decode(String.self, at: 3)
            guard let sendID = UUID(uuidString: try row.decode(String.self, at: 0)),
                let provider = SendProvider(rawValue: try row.decode(String.self, at: 1)),
                let kind = SendKind(rawValue: try row.decode(String.self, at: 2))
            else { throw SendSettlementError.unreadableSend(deviceStreamID: device) }
            return SendNeedingPeople(
                sendID: sendID, app: (try? StreamID(device))?.tenant?.app.rawValue, provider: provider, kind: kind,
                deviceStreamID: device, state: state, rule: try row.decode(String.self, at: 4), at: try row.decode(Date.self, at: 5))
        }
    }

    /// The event types ``fold(_:)`` reads from a device's history.
    public static let eventTypes = [
        SendRequested.eventType, SendParked.eventType, SendUnparked.eventType,
        SendSucceeded.eventType, SendFailed.eventType, SendCancelled.eventType,
    ]

    /// The device's sends that need people, from its history (``eventTypes``, in log order, as
    /// `readHistory(of: .deviceHistory(…))` returns it): a send whose last word is `SendFailed`,
    /// or `SendParked` with nothing after it but another parking. Oldest first.
    public static func fold(_ events: [RecordedEvent]) -> [SendNeedingPeople] {
        let decoder = LedgerJSON.makeDecoder()
        var requests: [String: SendRequested] = [:]
        var found: [String: SendNeedingPeople] = [:]
        var order: [String] = []
        for event in events where event.streamID.hasPrefix(StreamCategory.send.rawValue + "-") {
            let stream = event.streamID
            switch event.type {
            case SendRequested.eventType:
                requests[stream] = try? decoder.decode(SendRequested.self, from: event.data)
            case SendParked.eventType, SendFailed.eventType:
                guard let request = requests[stream] else { continue }
                let parked = event.type == SendParked.eventType
                let rule = parked ? (try? decoder.decode(SendParked.self, from: event.data))?.rule
                    : (try? decoder.decode(SendFailed.self, from: event.data))?.rule
                if found[stream] == nil { order.append(stream) }
                found[stream] = SendNeedingPeople(
                    sendID: request.sendID, app: request.deviceStreamID.tenant?.app.rawValue, provider: request.provider,
                    kind: request.kind, deviceStreamID: request.deviceStreamID.rawValue, state: parked ? .parked : .failed,
                    rule: rule ?? "unreadable", at: event.occurredAt)
            case SendUnparked.eventType, SendSucceeded.eventType, SendCancelled.eventType:
                found[stream] = nil
            default:
                continue
            }
        }
        return order.compactMap { found[$0] }
    }
}
