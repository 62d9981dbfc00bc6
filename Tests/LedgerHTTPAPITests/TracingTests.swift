import AsyncHTTPClient
import AttributionLedger
import Foundation
import InMemoryTracing
import LedgerDecisions
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import LedgerHTTPAPI
import LedgerHTTPTransport
import LedgerPostgres
import LedgerProviders
import LedgerStore
import LedgerTestKit
import NIOCore
import NIOHTTP1
import Prometheus
import Testing
import Tracing

/// One trace from an HTTP append, through the store's append, to the worker's try of the send the
/// fact caused: the request's W3C `traceparent` (W3C Trace Context) continued, recorded in the
/// events' metadata, and picked up again by the worker from the send's cause.
@Suite("Traces from an HTTP append through the send it caused", .database)
struct TracingTests {
    /// A caller's trace context, as the W3C Trace Context's own example writes it.
    static let incomingTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let incomingParentID = "00f067aa0ba902b7"
    static let incoming = "00-\(incomingTraceID)-\(incomingParentID)-01"
    /// The same header with its trace id in capitals: W3C Trace Context allows lowercase hex only.
    static let uppercase = "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"

    /// A server whose facade causes Apple AdServices lookups only, the fakes, and a worker over the
    /// same database; the fakes' anomalies end the test.
    struct Rig {
        let api: RunningAPI
        let fakes: FakeProviders
        let worker: SendWorker
    }

    static func withRig(_ body: (Rig) async throws -> Void) async throws {
        try await TestDatabase.with { database throws in
            let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 4, logger: TestDatabase.quietLogger)
            defer { pool.close() }
            let store = EventStore(pool: pool, catalog: .standard, logger: TestDatabase.quietLogger)
            let settings = AttributionSettings(defaults: AppAttributionSettings(providers: [.appleAdServices]))
            let ledger = AttributionLedger(store: store, settings: settings, logger: TestDatabase.quietLogger)
            let keys = try APIKeys(digests: [appA: [APIKeys.digest(of: keyA)]])
            let server = LedgerHTTPServer(ledger: ledger, keys: keys, configuration: LedgerHTTPConfiguration(host: "127.0.0.1", port: 0),
                                          logger: TestDatabase.quietLogger)
            let (ports, continuation) = AsyncStream<Int>.makeStream()
            let running = Task { try await server.runUntilCancelled { port in continuation.yield(port) } }
            defer { running.cancel() }
            var iterator = ports.makeAsyncIterator()
            let port = try #require(await iterator.next())
            let api = RunningAPI(baseURL: "http://127.0.0.1:\(port)", port: port, pool: pool, metrics: .init())
            try await withCheckedFakeProviders { fakes in
                let transport = HTTPProviderTransport()
                let worker = SendWorker(
                    store: store, rules: ProviderSendRules(adServices: fakes.appleEndpoint), transport: transport,
                    configuration: .init(workerID: "trace-worker", slots: 2, lease: 30, requestTimeout: .seconds(5)),
                    jitter: { 0.5 }, logger: TestDatabase.quietLogger)
                do {
                    try await body(Rig(api: api, fakes: fakes, worker: worker))
                } catch {
                    await transport.shutdown()
                    throw error
                }
                await transport.shutdown()
            }
        }
    }

    /// Appends one iOS first open at `time`, with `traceparent` when given, carrying the Apple
    /// AdServices token issued then (Apple honours a token for 24 hours) unless `token` is false;
    /// returns the status, the fact's id and the answer's body.
    static func appendFirstOpen(_ rig: Rig, traceparent: String?, id: UUID = UUID(), at time: Date = Date(), token: Bool = true)
        async throws -> (status: Int, id: UUID, body: Data)
    {
        let now = try #require(LedgerTimestamp.format(time))
        // A token of its own per device: the token names the device's lookup.
        let deviceToken = Data("token-\(id.uuidString)".utf8).base64EncodedString()
        if token { rig.fakes.apple.register(token: deviceToken) }
        let adServices = token ? #", "adservices_token": {"token": "\#(deviceToken)", "issued_at": "\#(now)"}"# : ""
        let fact = """
            {"id": "\(id.uuidString)", "type": "FirstOpen", "device_id": "dev-\(id.uuidString.prefix(8))", "occurred_at": "\(now)",
             "data": {"app_id": "\(appA)", "device": {"platform": "ios", "idfa": "DFC5A647-9043-4699-B2A5-76F03A97064B",
               "limit_ad_tracking": false, "att_status": "authorized", "ip": "203.0.113.7", "os_version": "17.4.1",
               "app_version": "3.2.0", "bundle_id": "\(appA)",
               "user_agent": {"app_name": "Game", "app_version": "3.2.0", "os_name": "iOS", "os_version": "17.4.1", "locale": "en_US",
                              "device_model": "iPhone15,2", "build": "21E236"}}\(adServices)}}
            """
        // A client of the test's own, without a tracer: AsyncHTTPClient's shared client takes the
        // tracer current when it is made, and would add a `traceparent` of its own span.
        var configuration = HTTPClient.Configuration()
        configuration.tracing.tracer = nil
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        var request = HTTPClientRequest(url: rig.api.baseURL + "/v1/apps/\(appA)/events")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(keyA)")
        request.headers.add(name: "Content-Type", value: "application/json")
        if let traceparent { request.headers.add(name: "traceparent", value: traceparent) }
        request.body = .bytes(ByteBuffer(string: batch(fact)))
        let status: Int
        let body: Data
        do {
            let response = try await client.execute(request, timeout: .seconds(30))
            status = Int(response.status.code)
            body = Data(try await response.body.collect(upTo: 1 << 20).readableBytesView)
        } catch {
            try await client.shutdown()
            throw error
        }
        try await client.shutdown()
        if status != 200 { Issue.record("the append was refused: \(String(decoding: body, as: UTF8.self))") }
        return (status, id, body)
    }

    /// The metadata of every event whose stream is the fact's device or a send it caused.
    static func metadata(of id: UUID, _ rig: Rig) async throws -> [String: Any] {
        let text = try await rig.api.pool.query("SELECT metadata::text FROM events WHERE event_id = \(id)").single()
            .decode(String.self, at: 0)
        return try json(Data(text.utf8))
    }

    @Test func anHTTPAppendAndTheSendTryItCausedShareOneTrace() async throws {
        let tracer = W3CInMemoryTracer()
        try await withTracer(tracer) {
            try await Self.withRig { rig in
                let (status, id, _) = try await Self.appendFirstOpen(rig, traceparent: Self.incoming)
                #expect(status == 200)
                #expect(try await rig.worker.drain() == 1)

                let spans = tracer.finishedSpans.filter { $0.spanContext.traceID == Self.incomingTraceID }
                let server = try #require(spans.first { $0.kind == .server }, "no HTTP span continues the request's trace")
                #expect(server.spanContext.parentSpanID == Self.incomingParentID)
                #expect(server.operationName == "POST /v1/apps/{app}/events")
                #expect(server.attributes.get("http.route") == "/v1/apps/{app}/events")
                #expect(server.attributes.get("http.response.status_code") == 200)

                // The append of the fact and its send's request, under the request's span.
                let appends = spans.filter { $0.operationName == "append events" }
                #expect(appends.contains { $0.spanContext.parentSpanID == server.spanContext.spanID })
                #expect(appends.allSatisfy { $0.attributes.get("db.system.name") == "postgresql" })

                // The events' metadata names the request's span; correlation ids are the caller's.
                let recorded = try await Self.metadata(of: id, rig)
                #expect(recorded["traceparent"] as? String == "00-\(Self.incomingTraceID)-\(server.spanContext.spanID)-01")

                // The worker's try continues that trace, from the span the fact was recorded in.
                let tryOfSend = try #require(spans.first { $0.operationName == "send try" }, "the send's try is not in the trace")
                #expect(tryOfSend.spanContext.parentSpanID == server.spanContext.spanID)
                #expect(tryOfSend.kind == .client)
                #expect(tryOfSend.attributes.get("ledger.send.provider") == "apple_adservices")
                #expect(tryOfSend.attributes.get("ledger.send.outcome") == "succeeded")
                #expect(tryOfSend.attributes.get("http.response.status_code") == 200)
                #expect(tryOfSend.status == nil)
                // The try's outcome is appended under the try (the trace's other appends).
                #expect(appends.allSatisfy {
                    $0.spanContext.parentSpanID == server.spanContext.spanID || $0.spanContext.parentSpanID == tryOfSend.spanContext.spanID
                })

                // The trace stays ours: the provider's request carries no trace context.
                #expect(rig.fakes.apple.requests.count == 1)
                #expect(rig.fakes.apple.requests.allSatisfy { $0.headerValue("traceparent") == nil })
                // No attribute holds the device's id, its IDFA or the token.
                for span in spans {
                    var text = ""
                    span.attributes.forEach { key, value in text += "\(key)=\(value) " }
                    #expect(!text.contains("dev-") && !text.contains("DFC5A647") && !text.contains("dG9rZW4t"), "\(span.operationName)")
                }
            }
        }
    }

    @Test func anInvalidTraceparentIsNeitherContinuedNorStored() async throws {
        let tracer = W3CInMemoryTracer()
        try await withTracer(tracer) {
            try await Self.withRig { rig in
                let (status, id, _) = try await Self.appendFirstOpen(rig, traceparent: Self.uppercase)
                #expect(status == 200)
                let server = try #require(tracer.finishedSpans.first { $0.kind == .server })
                #expect(server.spanContext.parentSpanID == nil)
                #expect(server.spanContext.traceID.lowercased() != Self.incomingTraceID)
                let recorded = try #require(try await Self.metadata(of: id, rig)["traceparent"] as? String)
                #expect(recorded == "00-\(server.spanContext.traceID)-\(server.spanContext.spanID)-01")
                _ = try await rig.worker.drain()
            }
        }
    }

    @Test func withoutATracerAValidTraceparentIsStoredAsReceivedAndAnInvalidOneIsNot() async throws {
        try await Self.withRig { rig in
            let valid = try await Self.appendFirstOpen(rig, traceparent: Self.incoming)
            #expect(valid.status == 200)
            #expect(try await Self.metadata(of: valid.id, rig)["traceparent"] as? String == Self.incoming)
            // A retry of the same fact from another trace is the same fact: a duplicate, not a
            // conflict, and the first trace stays recorded.
            let other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
            let time = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
            let first = try await Self.appendFirstOpen(rig, traceparent: Self.incoming, at: time, token: false)
            let retry = try await Self.appendFirstOpen(rig, traceparent: other, id: first.id, at: time, token: false)
            #expect(retry.status == 200)
            let results = try #require(try json(retry.body)["results"] as? [[String: Any]])
            #expect(results.first?["duplicate"] as? Bool == true)
            #expect(try await Self.metadata(of: first.id, rig)["traceparent"] as? String == Self.incoming)
            for invalid in [Self.uppercase, "00-\(Self.incomingTraceID)-0000000000000000-01", "ff-\(Self.incomingTraceID)-\(Self.incomingParentID)-01",
                            "00-\(Self.incomingTraceID)-\(Self.incomingParentID)-01-extra", "not a trace"] {
                let refused = try await Self.appendFirstOpen(rig, traceparent: invalid)
                #expect(refused.status == 200, "\(invalid)")
                let recorded = try await Self.metadata(of: refused.id, rig)
                #expect(recorded["traceparent"] == nil, "\(invalid)")
                #expect(recorded["actor"] as? String == "http-api")
            }
            _ = try await rig.worker.drain()
        }
    }
}
