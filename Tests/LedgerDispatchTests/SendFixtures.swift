import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerPostgres
import LedgerStore
import Testing

/// An iOS device with everything the providers need. Devices that are meant to be different
/// devices need ids of their own (``deviceUUID(_:_:kind:)``): the providers tell devices apart by them.
func iosDevice(
    idfv: String = "21DB6612-09B3-4ECC-84AC-B353B0AF1334", idfa: String = "DFC5A647-9043-4699-B2A5-76F03A97064B",
    ip: String = "203.0.113.7"
) -> DeviceContext {
    DeviceContext(platform: .ios, idfa: idfa, idfv: idfv, limitAdTracking: false,
                  attStatus: .authorized, ip: ip,
                  userAgent: UserAgentParts(appName: "App", appVersion: "1.2.3", osName: "iOS", osVersion: "17.1",
                                            locale: "en_US", deviceModel: "iPhone15,2", build: "21B74"),
                  osVersion: "17.1", appVersion: "1.2.3", bundleID: "com.example.app")
}

/// Appends `event` to `stream` and returns it as recorded.
@discardableResult
func record<E: LedgerEvent>(_ event: E, to stream: String, at: Date, store: EventStore) async throws -> RecordedEvent {
    let appended = try await store.append(
        [NewEvent(type: E.eventType, schemaVersion: E.schemaVersion, data: try EventCatalog.standard.encode(event), occurredAt: at)],
        to: stream)
    return try #require(try await store.event(id: appended.events[0].id))
}

/// Enqueues a send caused by `cause`, in its own transaction.
@discardableResult
func enqueue(_ provider: SendProvider, _ kind: SendKind, cause: RecordedEvent, device: String, key: String, now: Date,
             parameters: [String: String]? = nil, store: EventStore) async throws -> Outbox.Enqueued {
    let request = try Outbox.request(provider: provider, kind: kind, cause: cause, deviceStreamID: try StreamID(device),
                                     idempotencyKey: key, parameters: parameters)
    return try await store.pool.withConnection { connection in
        try connection.transaction { try Outbox.enqueue(request, store: store, now: now, on: $0) }
    }
}

/// The rows of `send_queue`.
func queueCount(_ store: EventStore) async throws -> Int {
    try await store.pool.query("SELECT count(*) FROM send_queue").single().decode(Int.self, at: 0)
}

/// Event types of a stream, in order.
func streamTypes(_ stream: String, store: EventStore) async throws -> [String] {
    try await store.readStream(stream).map(\.type)
}

/// A UUID of its own for device `index` of the devices named `prefix`: its IDFA (`kind` `"A"`) or
/// IDFV (`"F"`).
func deviceUUID(_ prefix: String, _ index: Int, kind: Character) -> String {
    let seed = prefix.utf8.reduce(UInt64(17)) { ($0 &* 31 &+ UInt64($1)) & 0xFFFF_FFFF_FFFF }
    return String(format: "%08X-000%@-4000-8000-%012llX", index, String(kind), seed)
}
