import AttributionLedger
import Foundation
import HTTPTypes
import Hummingbird
import LedgerDomain
import LedgerPostgres
import LedgerStore
import Logging
import NIOCore
import Prometheus

/// The route handlers.
struct Handlers: Sendable {
    let ledger: AttributionLedger
    /// The API keys, read afresh by every request (a reload replaces them).
    let keys: Reloadable<APIKeys>
    let configuration: LedgerHTTPConfiguration
    let metrics: PrometheusCollectorRegistry?
    /// Each app's token bucket; nil when requests are not limited.
    let limiter: AppRateLimiter?
    let logger: Logger
    /// The one `LISTEN` session the server's open event streams share.
    let streamWakeUps: EventStreamWakeUps

    func register(on router: Router<BasicRequestContext>) {
        router.post("/v1/apps/{app}/events") { request, context in try await append(request, context) }
        router.get("/v1/apps/{app}/devices/{device}/state") { request, context in
            let (device, asOf) = try readTarget(request, context)
            return try JSONResponse.make(try await ledger.deviceState(of: device, asOf: asOf))
        }
        router.get("/v1/apps/{app}/devices/{device}/skan") { request, context in
            let (device, asOf) = try readTarget(request, context)
            return try JSONResponse.make(try await ledger.skanValues(of: device, asOf: asOf))
        }
        router.get("/v1/apps/{app}/devices/{device}/attribution") { request, context in
            let (device, asOf) = try readTarget(request, context)
            return try JSONResponse.make(try await ledger.attribution(of: device, asOf: asOf))
        }
        router.get("/v1/apps/{app}/devices/{device}/history") { request, context in try await history(request, context) }
        router.get("/v1/apps/{app}/devices/{device}/timeline") { request, context in try await timeline(request, context) }
        registerPrivacyAndPostbacks(on: router)
        registerEventStream(on: router)
        router.get("/health") { _, _ in try JSONResponse.make(["status": "ok"]) }
        router.get("/ready") { _, _ in try await ready() }
        router.get("/metrics") { _, _ in try prometheus() }
    }

    // MARK: Authentication

    /// The app of the bearer key, which must be the path's app; the request counts against that
    /// app's rate limit.
    /// - Throws: 401 without a known key, 429 over the key's app's rate limit, 403 with a key of
    ///   another app.
    func authorize(_ request: Request, _ context: BasicRequestContext) throws(APIError) -> AppID {
        var unauthenticated = APIError(.unauthorized, code: .unauthenticated, field: "Authorization", rule: "bearer_api_key",
                                       message: "Send 'Authorization: Bearer <API key>' with a key of this app.")
        unauthenticated.headers[.wwwAuthenticate] = "Bearer realm=\"ledger\""
        guard let header = request.headers[.authorization] else { throw unauthenticated }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { throw unauthenticated }
        let key = parts[1].trimmingCharacters(in: .whitespaces)
        guard !key.isEmpty, let app = keys.value.app(forKey: key) else {
            unauthenticated.rule = "known_api_key"
            unauthenticated.message = "The API key is not one the ledger knows."
            throw unauthenticated
        }
        try limiter?.admit(app)
        guard app.rawValue == context.parameters.get("app").map(Self.decoded) else {
            throw APIError(.forbidden, code: .forbidden, field: "app", rule: "key_of_this_app",
                           message: "This API key belongs to another app; it can neither read nor write this one.")
        }
        return app
    }

    /// A path segment with its percent-escapes decoded (`a%3Ab` is `a:b`); as given when they
    /// are not valid UTF-8.
    static func decoded(_ segment: String) -> String { segment.removingPercentEncoding ?? segment }

    // MARK: Append

    func append(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let app = try authorize(request, context)
        let data = try await body(of: request)
        let facts = try AppendRequest.prepare(data, app: app, ledger: ledger, maxEvents: configuration.maxEventsPerBatch,
                                              traceparent: RequestTracingMiddleware.traceParent(of: request))
        let results: [Recorded]
        do {
            results = try await ledger.recordBatch(facts)
        } catch let error as AttributionLedgerError {
            throw AppendRequest.eventError(error, index: error.index ?? 0)
        }
        let appended = results.filter { !$0.wasDuplicate }.count
        logger.info("appended a batch", metadata: [
            "ledger.app": "\(app)", "ledger.events": "\(results.count)", "ledger.appended": "\(appended)",
        ])
        return try JSONResponse.make(AppendResponse(results: results, appended: appended, duplicates: results.count - appended))
    }

    // MARK: Reads

    /// The device of the path (after authorization) and the `as_of` / `as_of_position` query.
    func readTarget(_ request: Request, _ context: BasicRequestContext) throws(APIError) -> (DeviceRef, AsOf?) {
        let app = try authorize(request, context)
        let device: DeviceRef
        do {
            device = try DeviceRef(app: app.rawValue, device: context.parameters.get("device").map(Self.decoded) ?? "")
        } catch {
            throw APIError.invalidRequest(field: "device", rule: error.rule, message: error.message)
        }
        let query = request.uri.queryParameters
        let time = query.get("as_of")
        let position = query.get("as_of_position")
        switch (time, position) {
        case (nil, nil):
            return (device, nil)
        case (let text?, nil):
            guard let date = LedgerTimestamp.parse(text) else {
                throw APIError.invalidRequest(field: "as_of", rule: "iso8601_timestamp",
                                              message: "'as_of' is an ISO 8601 timestamp such as 2026-11-23T10:00:00Z.")
            }
            return (device, .recordedAt(date))
        case (nil, let text?):
            guard let number = Int64(text), number >= 0 else {
                throw APIError.invalidRequest(field: "as_of_position", rule: "integer_min_0",
                                              message: "'as_of_position' is a global position: a whole number, 0 or more.")
            }
            return (device, .position(number))
        case (_?, _?):
            throw APIError.invalidRequest(field: "as_of", rule: "one_of_as_of_or_as_of_position",
                                          message: "Give 'as_of' or 'as_of_position', not both.")
        }
    }

    func history(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let (device, asOf) = try readTarget(request, context)
        let types = try Self.eventTypes(request.uri.queryParameters.get("types"))
        let events = try await ledger.history(of: device, asOf: asOf, types: types)
        return try JSONResponse.make(HistoryResponse(events: try events.map(HistoryEvent.init), count: events.count))
    }

    // MARK: Operations

    func ready() async throws -> Response {
        do {
            if try await ledger.isReady() { return try JSONResponse.make(["status": "ready"]) }
            return try JSONResponse.make(status: .serviceUnavailable, ["status": "not_ready", "reason": "schema_missing"])
        } catch {
            logger.warning("readiness check failed", metadata: ErrorLogMetadata.of(error))
            return try JSONResponse.make(status: .serviceUnavailable, ["status": "not_ready", "reason": "database_unreachable"])
        }
    }

    func prometheus() throws -> Response {
        guard let metrics else {
            throw APIError(.notFound, code: .notFound, rule: "metrics_enabled", message: "Metrics are not enabled on this server.")
        }
        return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                        body: ResponseBody(byteBuffer: ByteBuffer(bytes: metrics.emitToBuffer())))
    }
}

/// The answer to an append.
struct AppendResponse: Encodable {
    /// One result per event, in order.
    var results: [Recorded]
    /// Events written now.
    var appended: Int
    /// Events that were already recorded (idempotent retries).
    var duplicates: Int
}

/// The answer to a history read.
struct HistoryResponse: Encodable {
    var events: [HistoryEvent]
    var count: Int
}

/// One event of a history, as stored.
struct HistoryEvent: Encodable {
    var position: Int64
    var streamID: String
    var streamVersion: Int64
    var id: UUID
    var type: String
    var schemaVersion: Int
    var occurredAt: Date
    var recordedAt: Date
    var data: JSONValue
    var metadata: JSONValue

    init(_ event: RecordedEvent) throws {
        position = event.position
        streamID = event.streamID
        streamVersion = event.streamVersion
        id = event.id
        type = event.type
        schemaVersion = event.schemaVersion
        occurredAt = event.occurredAt
        recordedAt = event.recordedAt
        data = try JSONDecoder().decode(JSONValue.self, from: event.data)
        metadata = try JSONDecoder().decode(JSONValue.self, from: event.metadata)
    }

    enum CodingKeys: String, CodingKey {
        case position
        case streamID = "stream_id"
        case streamVersion = "stream_version"
        case id, type
        case schemaVersion = "schema_version"
        case occurredAt = "occurred_at"
        case recordedAt = "recorded_at"
        case data, metadata
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(position, forKey: .position)
        try container.encode(streamID, forKey: .streamID)
        try container.encode(streamVersion, forKey: .streamVersion)
        try container.encode(id.uuidString.lowercased(), forKey: .id)
        try container.encode(type, forKey: .type)
        try container.encode(schemaVersion, forKey: .schemaVersion)
        try container.encode(occurredAt, forKey: .occurredAt)
        try container.encode(recordedAt, forKey: .recordedAt)
        try container.encode(data, forKey: .data)
        try container.encode(metadata, forKey: .metadata)
    }
}
