import Foundation
import LedgerProviders
import Synchronization

/// One HTTP request a fake received, as it arrived on the wire: what tests inspect to check that
/// the ledger sent what the provider's document asks for.
public struct RecordedRequest: Sendable, Hashable {
    /// The provider whose route matched, or `nil` for a path no fake serves.
    public var provider: Provider?
    /// The order in which the server received requests, counted over all providers from 1, so a
    /// test can check the relative order of calls to different providers.
    public var sequenceNumber: Int
    /// Which connection carried it, numbered from 1 in accept order: equal numbers on successive
    /// requests show that the client reused its connection.
    public var connectionNumber: Int
    /// When the request was complete.
    public var receivedAt: Date
    /// `GET`, `POST`, …
    public var method: String
    /// The path without the query, e.g. `/pagead/conversion/app/1.0`.
    public var path: String
    /// The query string as received (still percent-encoded), without the `?`.
    public var rawQuery: String
    /// The query parameters in order, percent-decoded.
    public var query: [QueryItem]
    /// The headers in the order received.
    public var headers: [Header]
    /// The body bytes (empty when there was none).
    public var body: Data

    /// Creates a record (the server makes these; public for tests that build expectations).
    public init(
        provider: Provider?, sequenceNumber: Int, connectionNumber: Int = 0, receivedAt: Date, method: String, path: String, rawQuery: String,
        headers: [Header], body: Data
    ) {
        self.provider = provider
        self.sequenceNumber = sequenceNumber
        self.connectionNumber = connectionNumber
        self.receivedAt = receivedAt
        self.method = method
        self.path = path
        self.rawQuery = rawQuery
        self.query = Self.decodeQuery(rawQuery)
        self.headers = headers
        self.body = body
    }

    /// The value of the first query parameter with this name, decoded.
    public func queryValue(_ name: String) -> String? { query.first { $0.name == name }?.value }

    /// The value of the first header with this name (case-insensitive).
    public func headerValue(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The body as UTF-8 text.
    public var bodyText: String { String(decoding: body, as: UTF8.self) }

    /// The body as a JSON object, or `nil` when it is not one (for the fakes' models).
    func jsonObject() -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: body)) as? [String: Any]
    }

    static func decodeQuery(_ raw: String) -> [QueryItem] {
        guard !raw.isEmpty else { return [] }
        return raw.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            let value = parts.count > 1 ? String(parts[1]) : ""
            return QueryItem(name.removingPercentEncoding ?? name, value.removingPercentEncoding ?? value)
        }
    }
}

/// Something a fake noticed that breaks its provider's document (a later Branch open without the
/// `randomized_bundle_token`, a Google POST without `Content-Length`, a cross-network request for
/// an `ad_event_id` Google never issued…). Tests assert there are none — or exactly the expected ones.
public struct FakeAnomaly: Sendable, Hashable, CustomStringConvertible {
    /// The provider whose rule was broken.
    public var provider: Provider
    /// A short stable identifier, e.g. `missing_randomized_bundle_token`.
    public var rule: String
    /// More words for a failing test's output.
    public var detail: String
    /// The ``RecordedRequest/sequenceNumber`` of the offending request.
    public var requestSequenceNumber: Int

    /// An anomaly.
    public init(provider: Provider, rule: String, detail: String, requestSequenceNumber: Int) {
        self.provider = provider
        self.rule = rule
        self.detail = detail
        self.requestSequenceNumber = requestSequenceNumber
    }

    /// `provider rule: detail (#n)`.
    public var description: String { "\(provider.rawValue) \(rule): \(detail) (#\(requestSequenceNumber))" }
}

/// A scripted answer: what a fake does with the next request instead of (or before) its model.
///
/// Queue answers per provider with ``FakeProvider/enqueue(_:)``: "the next three Apple answers are
/// 404, 404, then the model" is `apple.enqueue(.status(404), .status(404))`.
public struct FakeAnswer: Sendable, Hashable {
    /// What to do.
    public enum Action: Sendable, Hashable {
        /// Answer with exactly this status, headers and body (`Content-Length` is added).
        case respond(status: Int, headers: [Header], body: Data)
        /// Let the provider's model answer, as it would without a script (after any delay).
        case model
        /// Close the connection without answering (the request did arrive).
        case dropConnection
    }

    /// What to do.
    public var action: Action
    /// How long to wait before doing it: stalls an answer past a client's timeout or a worker's lease.
    public var delay: Duration

    /// An answer from its parts.
    public init(_ action: Action, delay: Duration = .zero) {
        self.action = action
        self.delay = delay
    }

    /// A bare status with an optional text body.
    public static func status(_ status: Int, body: String = "", headers: [Header] = []) -> FakeAnswer {
        FakeAnswer(.respond(status: status, headers: headers, body: Data(body.utf8)))
    }

    /// A JSON answer (`Content-Type: application/json`).
    public static func json(_ status: Int = 200, _ json: String, headers: [Header] = []) -> FakeAnswer {
        FakeAnswer(
            .respond(status: status, headers: [Header("Content-Type", "application/json")] + headers, body: Data(json.utf8)))
    }

    /// The model's own answer (useful after a delay: `.model.delayed(by: .seconds(2))`).
    public static let model = FakeAnswer(.model)

    /// Close the connection without an answer.
    public static let dropConnection = FakeAnswer(.dropConnection)

    /// The model's answer, but only after `duration`: a stalled provider.
    public static func stall(_ duration: Duration) -> FakeAnswer { FakeAnswer(.model, delay: duration) }

    /// Singular's error answer: `200 {"status":"error","reason":…}` (seed 004, "Possíveis erros").
    public static func singularError(_ reason: String) -> FakeAnswer {
        .json(200, #"{"status":"error","reason":\#(jsonString(reason))}"#)
    }

    /// Google's answer carrying machine-readable error codes (seed 000's "request contained errors").
    public static func googleErrors(_ codes: [String]) -> FakeAnswer {
        .json(200, #"{"ad_events":[],"errors":[\#(codes.map(jsonString).joined(separator: ","))],"attributed":false}"#)
    }

    /// This answer, after `duration` more.
    public func delayed(by duration: Duration) -> FakeAnswer {
        var copy = self
        copy.delay += duration
        return copy
    }
}

/// What the server does with one request, decided by a fake.
struct FakeReply: Sendable {
    var status: Int
    var headers: [Header]
    var body: Data
    var delay: Duration
    var drop: Bool

    static func respond(_ status: Int, json: String, headers: [Header] = []) -> FakeReply {
        FakeReply(
            status: status, headers: [Header("Content-Type", "application/json")] + headers, body: Data(json.utf8),
            delay: .zero, drop: false)
    }

    static func empty(_ status: Int, headers: [Header] = []) -> FakeReply {
        FakeReply(status: status, headers: headers, body: Data(), delay: .zero, drop: false)
    }

    static func text(_ status: Int, _ text: String) -> FakeReply {
        FakeReply(
            status: status, headers: [Header("Content-Type", "text/plain")], body: Data(text.utf8), delay: .zero,
            drop: false)
    }
}

/// JSON string literal for `text`, escaped as the providers' own writer does.
func jsonString(_ text: String) -> String { ProviderJSON.string(text).serialized }

/// The parts every fake shares: the requests it received, its scripted answers, its anomalies and
/// its default delay. Thread-safe; every accessor returns a copy.
public final class FakeRecorder: Sendable {
    struct State {
        var requests: [RecordedRequest] = []
        var script: [FakeAnswer] = []
        var anomalies: [FakeAnomaly] = []
        var delay: Duration = .zero
    }

    let state = Mutex(State())

    init() {}

    /// Every request received, in order.
    public var requests: [RecordedRequest] { state.withLock { $0.requests } }
    /// Every anomaly noticed, in order.
    public var anomalies: [FakeAnomaly] { state.withLock { $0.anomalies } }
    /// Scripted answers not yet used.
    public var pendingScript: [FakeAnswer] { state.withLock { $0.script } }

    /// Appends scripted answers; each request takes the first one left.
    public func enqueue(_ answers: [FakeAnswer]) { state.withLock { $0.script += answers } }

    /// A delay added to every answer of this fake (scripted or modelled).
    public func setDelay(_ delay: Duration) { state.withLock { $0.delay = delay } }

    /// Forgets requests, anomalies, script and delay.
    public func reset() { state.withLock { $0 = State() } }

    /// Records `request`, then takes the next scripted answer (if any) and the default delay, in
    /// one step so concurrent requests take distinct answers in arrival order.
    func receive(_ request: RecordedRequest) -> (answer: FakeAnswer?, delay: Duration) {
        state.withLock { state in
            state.requests.append(request)
            let answer = state.script.isEmpty ? nil : state.script.removeFirst()
            return (answer, state.delay)
        }
    }

    func note(_ anomaly: FakeAnomaly) { state.withLock { $0.anomalies.append(anomaly) } }
}

/// What every fake provider offers tests: its record of requests, a script of answers, anomalies,
/// an injected delay.
public protocol FakeProvider: AnyObject, Sendable {
    /// Which provider this fakes.
    var provider: Provider { get }
    /// The shared parts (requests, script, anomalies, delay).
    var recorder: FakeRecorder { get }
    /// Forgets the model's state (tokens, devices, counts), not the recorder's.
    func resetModel()
}

extension FakeProvider {
    /// Every request this fake received, in order.
    public var requests: [RecordedRequest] { recorder.requests }
    /// The number of requests received.
    public var requestCount: Int { recorder.state.withLock { $0.requests.count } }
    /// Everything this fake noticed that breaks the provider's document.
    public var anomalies: [FakeAnomaly] { recorder.anomalies }

    /// Scripts the next answers, in order; once used up, the model answers again.
    public func enqueue(_ answers: FakeAnswer...) { recorder.enqueue(answers) }
    /// Scripts the next answers, in order.
    public func enqueue(_ answers: [FakeAnswer]) { recorder.enqueue(answers) }
    /// Delays every answer of this fake by `delay` (on top of a scripted answer's own delay).
    public func setDelay(_ delay: Duration) { recorder.setDelay(delay) }
    /// Forgets requests, anomalies, script, delay and the model's state.
    public func reset() {
        recorder.reset()
        resetModel()
    }

    /// Waits until this fake has received at least `count` requests, polling every 5 ms for at most
    /// `timeout`. Returns whether it got there.
    public func waitForRequests(_ count: Int, timeout: Duration = .seconds(5)) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while clock.now < deadline {
            if requestCount >= count { return true }
            do { try await Task.sleep(for: .milliseconds(5)) } catch { return requestCount >= count }
        }
        return requestCount >= count
    }

    /// Records the request, then answers from the script or, when there is none (or it says
    /// `.model`), from `model`.
    func answer(_ request: RecordedRequest, model: (RecordedRequest) -> FakeReply) -> FakeReply {
        let (scripted, delay) = recorder.receive(request)
        var reply: FakeReply
        switch scripted?.action {
        case .respond(let status, let headers, let body)?:
            reply = FakeReply(status: status, headers: headers, body: body, delay: .zero, drop: false)
        case .dropConnection?:
            reply = FakeReply(status: 0, headers: [], body: Data(), delay: .zero, drop: true)
        case .model?, nil:
            reply = model(request)
        }
        reply.delay += delay + (scripted?.delay ?? .zero)
        return reply
    }

    func note(_ request: RecordedRequest, _ rule: String, _ detail: String) {
        recorder.note(
            FakeAnomaly(provider: provider, rule: rule, detail: detail, requestSequenceNumber: request.sequenceNumber))
    }
}
