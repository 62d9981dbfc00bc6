import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerProjections
import LedgerStore
import LedgerTestKit

/// A device's history built in memory, as the store would record it: typed events encoded by the
/// catalog, positions in order, to append to a real store.
struct History {
    let device: String
    var events: [RecordedEvent] = []
    var newEvents: [(stream: String, event: NewEvent)] = []
    private var versions: [String: Int64] = [:]
    static let epoch = testEpoch

    init(device: String = "device-app1/dev1") { self.device = device }

    /// Appends `event` to `stream` (the device's own by default), happening at `at`.
    @discardableResult
    mutating func add<E: LedgerEvent>(_ event: E, stream: String? = nil, at: Date) throws -> RecordedEvent {
        let stream = stream ?? device
        let data = try EventCatalog.standard.encode(event)
        let version = versions[stream, default: 0] + 1
        versions[stream] = version
        let id = UUID()
        let record = RecordedEvent(
            position: Int64(events.count + 1), transactionID: UInt64(1000 + events.count), streamID: stream,
            streamVersion: version, id: id, type: E.eventType, schemaVersion: E.schemaVersion, data: data,
            metadata: Data("{}".utf8), occurredAt: at, recordedAt: at, hash: Data())
        events.append(record)
        newEvents.append((stream, NewEvent(id: id, type: E.eventType, schemaVersion: E.schemaVersion, data: data, occurredAt: at)))
        return record
    }

    /// Requests a send for this device, caused by `cause`; returns the send's stream.
    @discardableResult
    mutating func requestSend(_ provider: SendProvider, _ kind: SendKind, cause: RecordedEvent, at: Date,
                              parameters: [String: String]? = nil, notBefore: Date? = nil) throws -> String {
        let sendID = UUID()
        let stream = StreamID.send(id: sendID).rawValue
        try add(SendRequested(sendID: sendID, provider: provider, kind: kind, causeEventID: cause.id,
                              causeStreamID: try StreamID(cause.streamID), deviceStreamID: try StreamID(device),
                              idempotencyKey: "\(provider.rawValue):\(kind.rawValue):\(cause.id)", notBefore: notBefore,
                              parameters: parameters),
                stream: stream, at: at)
        return stream
    }

    /// One try of a send: `SendAttempted`, then the provider's answer.
    mutating func attempt(_ send: String, number: Int, status: Int, body: String?, at: Date) throws {
        try add(SendAttempted(attempt: number, request: RecordedRequest(method: "POST", url: "https://example.test/", headers: [])),
                stream: send, at: at)
        try add(ResponseReceived(attempt: number, status: status, headers: [], body: body.map { RecordedBody(bytes: Data($0.utf8)) },
                                 latencyMilliseconds: 12), stream: send, at: at.addingTimeInterval(0.05))
    }
}

/// An iOS device context with everything an install needs.
func iosDevice() -> DeviceContext {
    DeviceContext(platform: .ios, idfv: "21DB6612-09B3-4ECC-84AC-B353B0AF1334", limitAdTracking: false, ip: "203.0.113.7",
                  userAgent: UserAgentParts(appName: "App", appVersion: "1.2.3", osName: "iOS", osVersion: "17.1",
                                            locale: "en_US", deviceModel: "iPhone15,2", build: "21B74"),
                  osVersion: "17.1", appVersion: "1.2.3", bundleID: "com.example.app")
}

/// Appends a history's events to the store, stream by stream in order.
func append(_ history: History, to store: EventStore) async throws {
    for (stream, event) in history.newEvents {
        try await store.append([event], to: stream)
    }
}

/// Every row of a table as text, sorted: what "equal projections" means in these tests.
func tableDump(_ table: String, on connection: PostgresConnection) throws -> [String] {
    try connection.query("SELECT t::text FROM \(identifier: table) AS t").map { try $0.decode(String.self, at: 0) }.sorted()
}
