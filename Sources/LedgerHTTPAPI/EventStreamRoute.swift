import AttributionLedger
import Foundation
import HTTPTypes
import Hummingbird
import LedgerDomain
import LedgerPostgres
import LedgerStore
import Logging
import Metrics
import NIOCore
import ServiceLifecycle

/// `GET /v1/apps/{app}/events/stream`: the app's events as Server-Sent Events, a catch-up
/// subscription over HTTP.
///
/// Every event of the app (``EventStore/appStreams(of:)``: its device, decision and SKAN streams
/// and the send streams its devices' facts caused) after the starting point, in the log's
/// gap-safe order, then each new one as it becomes readable. A message is `id: <position>` and
/// `data: <the event as the history route shows it>`; `Last-Event-ID: <position>` (which wins
/// over `?after=`) resumes just after that event.
extension Handlers {
    func registerEventStream(on router: Router<BasicRequestContext>) {
        router.get("/v1/apps/{app}/events/stream") { request, context in try await eventStream(request, context) }
    }

    func eventStream(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let app = try authorize(request, context)
        let types = try Self.eventTypes(request.uri.queryParameters.get("types"))
        let start: (checkpoint: GlobalCheckpoint, readable: Bool)
        if let lastEventID = request.headers[HTTPField.Name("Last-Event-ID")!] {
            start = try await checkpoint(after: lastEventID, field: "Last-Event-ID")
        } else if let after = request.uri.queryParameters.get("after") {
            start = try await checkpoint(after: after, field: "after")
        } else {
            start = (.start, true)
        }
        let session = EventStreamSession(
            store: ledger.store, app: app.rawValue, types: types, start: start.checkpoint, startIsReadable: start.readable,
            heartbeat: configuration.eventStreamHeartbeat,
            wakeUps: streamWakeUps, logger: logger)
        return Response(
            status: .ok,
            headers: [.contentType: "text/event-stream; charset=utf-8", .cacheControl: "no-store",
                      HTTPField.Name("X-Accel-Buffering")!: "no"],
            body: ResponseBody { writer in
                try await session.run(&writer)
                try await writer.finish(nil)
            })
    }

    /// The checkpoint after the event at the position `text` names (`0`: the log's start), and
    /// whether that event is readable yet (the position a client just got from an append may be
    /// committed behind a transaction still running: the stream then waits for it).
    /// - Throws: 400 naming `field`: `integer_min_0` when it is not a whole number ≥ 0,
    ///   `readable_position` when no committed event has that position.
    func checkpoint(after text: String, field: String) async throws -> (checkpoint: GlobalCheckpoint, readable: Bool) {
        guard let position = Int64(text), position >= 0 else {
            throw APIError.invalidRequest(field: field, rule: "integer_min_0",
                                          message: "'\(field)' is a global position: a whole number, 0 or more.")
        }
        if position == 0 { return (.start, true) }
        guard let checkpoint = try await ledger.store.checkpoint(atPosition: position) else {
            throw APIError.invalidRequest(field: field, rule: "readable_position",
                                          message: "'\(field)' is 0 or the position of an event in the log (an id this stream sent).")
        }
        return checkpoint
    }

    /// The `types` query (comma-separated), each an event type of the catalog; empty for all.
    /// - Throws: 400 (`types`, `unknown_type`) naming the first unknown entry's index.
    static func eventTypes(_ list: String?) throws(APIError) -> [String] {
        guard let list, !list.isEmpty else { return [] }
        let types = list.split(separator: ",").map { String($0) }
        if let unknown = types.firstIndex(where: { EventCatalog.standard.entry(named: $0) == nil }) {
            throw APIError.invalidRequest(field: "types", rule: "unknown_type",
                                          message: "Entry \(unknown) of 'types' is not an event type of the catalog.")
        }
        return types
    }
}

/// One open event stream: reads the log in batches, each on a pooled connection given back
/// before the batch is written, so a slow or vanished client holds no database connection; waits
/// for the shared wake-ups (or a poll) when caught up; writes a heartbeat when idle. Ends when a
/// write fails (the client is gone: at the latest one heartbeat after it went), when the request's
/// task is cancelled, or within a poll interval of a graceful shutdown (the server's in-flight
/// requests must end for it to stop; the client reconnects with `Last-Event-ID`).
struct EventStreamSession: Sendable {
    let store: EventStore
    let app: String
    let types: [String]
    let start: GlobalCheckpoint
    /// False when `start` is after an event not readable yet: nothing is read until it is.
    let startIsReadable: Bool
    let heartbeat: Duration
    let wakeUps: EventStreamWakeUps
    let logger: Logger
    /// Events per read.
    var batchSize = 200
    /// How long to wait for a wake-up before looking anyway (a lost notification, or events that
    /// became readable when an older transaction ended without an append of its own).
    var pollInterval: Duration = .milliseconds(500)

    func run(_ writer: inout any ResponseBodyWriter) async throws {
        let (id, bell) = wakeUps.join()
        let open = Gauge(label: "ledger_http_event_streams_open")
        open.record(wakeUps.openStreams)
        defer {
            wakeUps.leave(id)
            open.record(wakeUps.openStreams)
        }
        let clock = ContinuousClock()
        // Tells the client how soon to reconnect (ms), and sends the head at once.
        try await writer.write(ByteBuffer(string: "retry: 1000\n\n"))
        var lastWrite = clock.now
        var checkpoint = start
        var waitingForStart = !startIsReadable
        let filter = EventFilter(types: types, app: app)
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            if waitingForStart {
                waitingForStart = try await store.checkpoint(atPosition: start.position)?.readable != true
            }
            if !waitingForStart {
                let batch = try await store.readAllSkippingUnmatched(after: checkpoint, limit: batchSize, filter: filter)
                checkpoint = batch.checkpoint
                if !batch.events.isEmpty {
                    try await writer.write(try messages(batch.events))
                    lastWrite = clock.now
                    continue
                }
            }
            let sinceWrite = clock.now - lastWrite
            if sinceWrite >= heartbeat {
                try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                lastWrite = clock.now
                continue
            }
            _ = await bell.wait(upTo: min(pollInterval, heartbeat - sinceWrite))
        }
    }

    /// The events as SSE messages; one whose metadata names another app is left out (and logged:
    /// a stream written under an older naming).
    func messages(_ events: [RecordedEvent]) throws -> ByteBuffer {
        var buffer = ByteBuffer()
        // Compact JSON (one line): a `data:` line cannot hold a line break.
        let encoder = LedgerJSON.makeEncoder()
        for event in events {
            if let recorded = Self.recordedApp(in: event.metadata), recorded != app {
                logger.critical("left another app's event out of an event stream", metadata: ["ledger.app": "\(app)"])
                continue
            }
            let json = try encoder.encode(HistoryEvent(event))
            buffer.writeString("id: \(event.position)\ndata: ")
            buffer.writeBytes(json)
            buffer.writeString("\n\n")
        }
        return buffer
    }

    /// The `app_id` of an event's metadata JSON, if it names one.
    static func recordedApp(in metadata: Data) -> String? {
        struct AppOnly: Decodable { var app_id: String? }
        return (try? JSONDecoder().decode(AppOnly.self, from: metadata))?.app_id
    }
}
