import AsyncHTTPClient
import AttributionLedger
import Foundation
import LedgerDomain
import LedgerHTTPAPI
import LedgerPostgres
import LedgerTestKit
import Logging
import NIOCore
import NIOHTTP1
import Prometheus
import Testing

let appA = "com.example.game"
let appB = "com.example.other"
let keyA = "test-key-a-not-a-real-credential"
let keyB = "test-key-b-not-a-real-credential"

/// A running HTTP API on 127.0.0.1 (a port the kernel chose) over a fresh database.
struct RunningAPI: Sendable {
    let baseURL: String
    /// The port the server listens on (for raw connections).
    let port: Int
    let pool: PostgresPool
    /// The registry `GET /metrics` renders: the test's own, which receives what the server emits
    /// for this test's requests (`ScopedMetrics`) and nothing else.
    let metrics: PrometheusCollectorRegistry

    /// Sends a request and returns the status and the body.
    /// Sends a request (a body with `Content-Type: contentType`, unless nil) and returns the
    /// status, the body and the response headers.
    func exchange(_ method: HTTPMethod, _ path: String, key: String? = keyA, body: HTTPClientRequest.Body? = nil,
                  contentType: String? = "application/json", headers: [(String, String)] = []) async throws
        -> (status: Int, body: Data, headers: HTTPHeaders)
    {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        if let key { request.headers.add(name: "Authorization", value: "Bearer \(key)") }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            if let contentType { request.headers.add(name: "Content-Type", value: contentType) }
            request.body = body
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 64 * 1_048_576)
        return (Int(response.status.code), Data(bytes.readableBytesView), response.headers)
    }

    /// Sends a request and returns the status and the body.
    func send(_ method: HTTPMethod, _ path: String, key: String? = keyA, body: HTTPClientRequest.Body? = nil,
              headers: [(String, String)] = []) async throws -> (status: Int, body: Data) {
        let answer = try await exchange(method, path, key: key, body: body, headers: headers)
        return (answer.status, answer.body)
    }

    /// `send` with a JSON text body.
    func send(_ method: HTTPMethod, _ path: String, key: String? = keyA, json: String) async throws -> (status: Int, body: Data) {
        try await send(method, path, key: key, body: .bytes(ByteBuffer(string: json)))
    }

    /// Rows in `events`.
    func eventCount() async throws -> Int {
        try await pool.query("SELECT count(*) FROM events").single().decode(Int.self, at: 0)
    }
}

/// Runs `body` against a server on a fresh database, keys for `appA` and `appB`, bodies up to
/// `maxBodyBytes`, the configuration `configure` makes of that; the facade and the server log to
/// `logger`. Stops the server afterwards.
func withAPI<T: Sendable>(maxBodyBytes: Int = 256 * 1024, configure: (inout LedgerHTTPConfiguration) -> Void = { _ in },
                          logger: Logger = TestDatabase.quietLogger, _ body: (RunningAPI) async throws -> T) async throws -> T {
    try await TestDatabase.with { database throws in
        let pool = PostgresPool(conninfo: database.conninfo, maxConnections: 4, logger: TestDatabase.quietLogger)
        defer { pool.close() }
        let ledger = AttributionLedger(pool: pool, logger: logger)
        let keys = try APIKeys(digests: [appA: [APIKeys.digest(of: keyA)], appB: [APIKeys.digest(of: keyB)]])
        let registry = PrometheusCollectorRegistry()
        var configuration = LedgerHTTPConfiguration(host: "127.0.0.1", port: 0, maxBodyBytes: maxBodyBytes)
        configure(&configuration)
        let server = LedgerHTTPServer(ledger: ledger, keys: keys, configuration: configuration, metrics: registry, logger: logger)
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        // The server's tasks report their metrics to this test's registry.
        let running = await ScopedMetrics.withMetrics(PrometheusMetricsFactory(registry: registry)) {
            Task { try await server.runUntilCancelled { port in continuation.yield(port) } }
        }
        defer { running.cancel() }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())
        return try await body(RunningAPI(baseURL: "http://127.0.0.1:\(port)", port: port, pool: pool, metrics: registry))
    }
}

/// The JSON object of a response body.
func json(_ data: Data) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
}

/// The `error` object of a refusal.
func apiError(_ data: Data) throws -> [String: Any] {
    try #require(try json(data)["error"] as? [String: Any])
}

/// A first open of `app` as the HTTP API takes it.
func firstOpenJSON(id: UUID = UUID(), device: String, app: String = appA, idfa: String = "DFC5A647-9043-4699-B2A5-76F03A97064B")
    -> String
{
    """
    {"id": "\(id.uuidString)", "type": "FirstOpen", "device_id": "\(device)", "occurred_at": "2026-11-23T10:00:00.000000Z",
     "data": {"app_id": "\(app)", "device": {"platform": "ios", "idfa": "\(idfa)", "limit_ad_tracking": false,
       "att_status": "authorized", "ip": "203.0.113.7", "os_version": "17.4.1", "app_version": "3.2.0", "bundle_id": "\(app)",
       "user_agent": {"app_name": "Game", "app_version": "3.2.0", "os_name": "iOS", "os_version": "17.4.1", "locale": "en_US",
                      "device_model": "iPhone15,2", "build": "21E236"}}}}
    """
}

/// A SKAN registration as the HTTP API takes it.
func skanRegisteredJSON(id: UUID = UUID(), device: String, at time: String = "2026-11-23T10:00:01.000000Z") -> String {
    #"{"id": "\#(id.uuidString)", "type": "SKANRegistered", "device_id": "\#(device)", "occurred_at": "\#(time)", "data": {"skan_version": "4.0"}}"#
}

/// A SKAN conversion value update as the HTTP API takes it.
func skanUpdateJSON(id: UUID = UUID(), device: String, fine: Int, at time: String = "2026-11-23T11:00:00.000000Z") -> String {
    #"{"id": "\#(id.uuidString)", "type": "SKANConversionValueUpdated", "device_id": "\#(device)", "occurred_at": "\#(time)", "data": {"fine_value": \#(fine), "coarse_value": "high", "lock_window": false}}"#
}

/// A batch body.
func batch(_ events: String...) -> String { #"{"events": ["# + events.joined(separator: ",") + "]}" }

/// The samples of a Prometheus text exposition whose series starts with `prefix` (a metric name,
/// or a name and `{`), by series (`name{labels}`), each with its value.
func prometheusSamples(_ text: String, prefix: String) -> [String: Double] {
    var samples: [String: Double] = [:]
    for line in text.split(separator: "\n") where !line.hasPrefix("#") && line.hasPrefix(prefix) {
        guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
        samples[String(line[..<space])] = value
    }
    return samples
}
