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


/// Something a fake noticed that breaks its provider's document: a request it refused (wrong
/// method, a missing or malformed parameter, a credential other than the configured one…), or a
/// valid request that breaks a rule of the exchange (a later Branch open without the
/// `randomized_bundle_token`, an Apple token sent past its 24 h TTL, a second cross-network report
/// of the same decision). Tests assert there are none — or exactly the expected ones.
public struct FakeAnomaly: Sendable, Hashable, CustomStringConvertible {
    /// The provider whose rule was broken, or `nil` for a request to a path no fake serves
    /// (rule `unknown_path`).
    public var provider: Provider?
    /// A short stable identifier, e.g. `missing_randomized_bundle_token`.
    public var rule: String
    /// More words for a failing test's output.
    public var detail: String
    /// The ``RecordedRequest/sequenceNumber`` of the offending request.
    public var requestSequenceNumber: Int
    /// Whether the fake refused the request (answered as the provider answers a bad request)
    /// rather than answering it and only noting the rule.
    public var refused: Bool

    /// An anomaly.
    public init(provider: Provider?, rule: String, detail: String, requestSequenceNumber: Int, refused: Bool = false) {
        self.provider = provider
        self.rule = rule
        self.detail = detail
        self.requestSequenceNumber = requestSequenceNumber
        self.refused = refused
    }

    /// `provider rule: detail (#n)`, with `refused` when the request was refused.
    public var description: String {
        "\(provider?.rawValue ?? "no provider") \(rule)\(refused ? " (refused)" : ""): \(detail) (#\(requestSequenceNumber))"
    }
}

/// Holds answers back until a test opens it: "the call is in flight" as a condition a test
/// controls, instead of a delay it hopes is long enough.
///
/// Hold one scripted answer (``FakeAnswer/held(by:)``) or every answer of a fake
/// (``FakeProvider/hold(_:)``); ``held`` tells how many answers wait now, so a test can wait until
/// the requests it expects are in flight, act, then ``open()``.
public final class FakeGate: Sendable {
    private struct State {
        var isOpen = false
        var waiting: [@Sendable () -> Void] = []
        var held = 0
        var everHeld = 0
    }

    private let state = Mutex(State())

    /// A closed gate.
    public init() {}

    /// Releases every answer held and lets later ones through at once. Idempotent.
    public func open() {
        let waiting = state.withLock { state -> [@Sendable () -> Void] in
            state.isOpen = true
            state.held = 0
            defer { state.waiting = [] }
            return state.waiting
        }
        for release in waiting { release() }
    }

    /// Whether ``open()`` was called.
    public var isOpen: Bool { state.withLock { $0.isOpen } }

    /// Answers waiting behind this gate now.
    public var held: Int { state.withLock { $0.held } }

    /// Answers this gate has held back in all (released ones included).
    public var everHeld: Int { state.withLock { $0.everHeld } }

    /// Waits until at least `count` answers are held, polling every 5 ms for at most `timeout`.
    /// Returns whether they were.
    public func waitUntilHolding(_ count: Int, timeout: Duration = .seconds(30)) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while clock.now < deadline {
            if held >= count { return true }
            do { try await Task.sleep(for: .milliseconds(5)) } catch { break }
        }
        return held >= count
    }

    /// Runs `release` once the gate is open (at once if it is).
    func whenOpen(_ release: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.isOpen { return true }
            state.waiting.append(release)
            state.held += 1
            state.everHeld += 1
            return false
        }
        if now { release() }
    }
}

/// A scripted answer: what a fake does with its next *valid* request instead of its model.
///
/// Queue answers per provider with ``FakeProvider/enqueue(_:)``: "the next three Apple answers are
/// 404, 404, then the model" is `apple.enqueue(.status(404), .status(404))`. A request that breaks
/// the provider's document never takes a scripted answer: it is refused as the provider refuses
/// it, and noted.
public struct FakeAnswer: Sendable {
    /// What to do.
    public enum Action: Sendable, Hashable {
        /// Answer with exactly this status, headers and body (`Content-Length` is added).
        case respond(status: Int, headers: [Header], body: Data)
        /// Let the provider's model answer, as it would without a script (after any delay).
        case model
        /// Close the connection without answering (the request did arrive).
        case dropConnection
        /// Answer with this status and a body that repeats the request as received, credentials
        /// included: a provider whose error answer echoes what it was sent. The body is
        /// `template` with ``FakeAnswer/requestPlaceholder`` replaced by the echo as a JSON string
        /// (`json`), or the echo alone as text (`json` false).
        case echoRequest(status: Int, json: Bool, template: String)
    }

    /// What to do.
    public var action: Action
    /// How long to wait before doing it: stalls an answer past a client's timeout.
    public var delay: Duration
    /// A gate the answer waits for (before its delay), or `nil`.
    public var gate: FakeGate?

    /// An answer from its parts.
    public init(_ action: Action, delay: Duration = .zero, gate: FakeGate? = nil) {
        self.action = action
        self.delay = delay
        self.gate = gate
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

    /// Where ``echoingRequest(_:json:)``'s JSON template takes the echoed request (a JSON string).
    public static let requestPlaceholder = "$REQUEST"

    /// An error answer that repeats the request as received (method, path, decoded query,
    /// headers, body), credentials included, as text: what a provider's careless error page does.
    public static func echoingRequest(_ status: Int) -> FakeAnswer {
        FakeAnswer(.echoRequest(status: status, json: false, template: ""))
    }

    /// A JSON answer whose ``requestPlaceholder`` is replaced by the request as received, as a JSON
    /// string: e.g. Singular's `{"status":"error","reason":$REQUEST}` or Google's
    /// `{"ad_events":[],"errors":[$REQUEST],"attributed":false}` — an error code or reason that
    /// echoes the request, credentials included.
    public static func echoingRequest(_ status: Int, json template: String) -> FakeAnswer {
        FakeAnswer(.echoRequest(status: status, json: true, template: template))
    }

    /// The request as an echoing provider repeats it.
    static func echo(of request: RecordedRequest) -> String {
        let query = request.query.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
        let headers = request.headers.map { "\($0.name): \($0.value)" }.joined(separator: "; ")
        return "\(request.method) \(request.path)?\(query) [\(headers)] \(request.bodyText)"
    }

    /// The model's own answer (useful after a delay: `.model.delayed(by: .seconds(2))`).
    public static let model = FakeAnswer(.model)

    /// Close the connection without an answer.
    public static let dropConnection = FakeAnswer(.dropConnection)

    /// The model's answer, but only after `duration`: a stalled provider.
    public static func stall(_ duration: Duration) -> FakeAnswer { FakeAnswer(.model, delay: duration) }

    /// The model's answer, held until `gate` opens: a call kept in flight for as long as the test
    /// needs.
    public static func held(by gate: FakeGate) -> FakeAnswer { FakeAnswer(.model, gate: gate) }

    /// Singular's error answer: `200 {"status":"error","reason":…}` (Singular SKAdNetwork 4 implementation guide,
    /// "Possíveis erros").
    public static func singularError(_ reason: String) -> FakeAnswer {
        .json(200, #"{"status":"error","reason":\#(jsonString(reason))}"#)
    }

    /// Google's answer carrying machine-readable error codes (the Google App Conversion Tracking
    /// API's "request contained errors").
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
    var delay: Duration = .zero
    var drop = false
    /// Gates the answer waits for, in order, before its delay.
    var gates: [FakeGate] = []

    static func respond(_ status: Int, json: String, headers: [Header] = []) -> FakeReply {
        FakeReply(status: status, headers: [Header("Content-Type", "application/json")] + headers, body: Data(json.utf8))
    }

    static func empty(_ status: Int, headers: [Header] = []) -> FakeReply {
        FakeReply(status: status, headers: headers, body: Data())
    }

    static func text(_ status: Int, _ text: String) -> FakeReply {
        FakeReply(status: status, headers: [Header("Content-Type", "text/plain")], body: Data(text.utf8))
    }
}

/// Why a fake refused a request, and the answer it gives: what the provider answers to that bad
/// request, or `400` naming the rule where the document is silent.
struct FakeRefusal: Sendable {
    /// The anomaly's rule, e.g. `missing_parameter`.
    var rule: String
    /// For the test's output.
    var detail: String
    /// The answer.
    var reply: FakeReply

    /// `405`: every provider's document names one method per route.
    static func wrongMethod(_ request: RecordedRequest, expected: String, document: String) -> FakeRefusal {
        FakeRefusal(
            rule: "wrong_method", detail: "\(request.method) \(request.path); \(document) says \(expected)",
            reply: .text(405, "method not allowed: \(expected) \(request.path) (\(document))"))
    }
}

/// JSON string literal for `text`, escaped as the providers' own writer does.
func jsonString(_ text: String) -> String { ProviderJSON.string(text).serialized }

/// The parts every fake shares: the requests it received, its scripted answers, its anomalies,
/// its default delay and gate. Thread-safe; every accessor returns a copy.
public final class FakeRecorder: Sendable {
    struct State {
        var requests: [RecordedRequest] = []
        var script: [FakeAnswer] = []
        var anomalies: [FakeAnomaly] = []
        var delay: Duration = .zero
        var gate: FakeGate?
    }

    let state = Mutex(State())

    init() {}

    /// Every request received, in order.
    public var requests: [RecordedRequest] { state.withLock { $0.requests } }
    /// Every anomaly noticed, in order.
    public var anomalies: [FakeAnomaly] { state.withLock { $0.anomalies } }
    /// Scripted answers not yet used.
    public var pendingScript: [FakeAnswer] { state.withLock { $0.script } }

    /// Appends scripted answers; each valid request takes the first one left.
    public func enqueue(_ answers: [FakeAnswer]) { state.withLock { $0.script += answers } }

    /// A delay added to every answer of this fake (scripted, modelled or refusing).
    public func setDelay(_ delay: Duration) { state.withLock { $0.delay = delay } }

    /// A gate every answer of this fake waits for (`nil`: none).
    public func hold(_ gate: FakeGate?) { state.withLock { $0.gate = gate } }

    /// Forgets requests, anomalies, script, delay and gate.
    public func reset() { state.withLock { $0 = State() } }

    /// Records `request`; when it is valid (`refusal` is `nil`) takes the next scripted answer, in
    /// one step so concurrent requests take distinct answers in arrival order. Returns the answer
    /// (if any), the default delay and gate, and notes the refusal.
    func receive(_ request: RecordedRequest, provider: Provider, refusal: FakeRefusal?)
        -> (answer: FakeAnswer?, delay: Duration, gate: FakeGate?)
    {
        state.withLock { state in
            state.requests.append(request)
            if let refusal {
                state.anomalies.append(
                    FakeAnomaly(
                        provider: provider, rule: refusal.rule, detail: refusal.detail,
                        requestSequenceNumber: request.sequenceNumber, refused: true))
                return (nil, state.delay, state.gate)
            }
            let answer = state.script.isEmpty ? nil : state.script.removeFirst()
            return (answer, state.delay, state.gate)
        }
    }

    func note(_ anomaly: FakeAnomaly) { state.withLock { $0.anomalies.append(anomaly) } }
}

/// What every fake provider offers tests: its record of requests, a script of answers, anomalies,
/// an injected delay or gate.
public protocol FakeProvider: AnyObject, Sendable {
    /// Which provider this fakes.
    var provider: Provider { get }
    /// The shared parts (requests, script, anomalies, delay, gate).
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

    /// Scripts the answers to the next valid requests, in order; once used up, the model answers
    /// again.
    public func enqueue(_ answers: FakeAnswer...) { recorder.enqueue(answers) }
    /// Scripts the answers to the next valid requests, in order.
    public func enqueue(_ answers: [FakeAnswer]) { recorder.enqueue(answers) }
    /// Delays every answer of this fake by `delay` (on top of a scripted answer's own delay).
    public func setDelay(_ delay: Duration) { recorder.setDelay(delay) }
    /// Holds every answer of this fake until `gate` opens (`nil`: no longer).
    public func hold(_ gate: FakeGate?) { recorder.hold(gate) }
    /// Forgets requests, anomalies, script, delay, gate and the model's state.
    public func reset() {
        recorder.reset()
        resetModel()
    }

    /// Waits until this fake has received at least `count` requests, polling every 5 ms for at most
    /// `timeout`. Returns whether it got there.
    public func waitForRequests(_ count: Int, timeout: Duration = .seconds(30)) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while clock.now < deadline {
            if requestCount >= count { return true }
            do { try await Task.sleep(for: .milliseconds(5)) } catch { return requestCount >= count }
        }
        return requestCount >= count
    }

    /// Records the request, checks it against the document (`check`), and answers: a refused
    /// request with the refusal's answer; a valid one from the script or, when there is none (or
    /// it says `.model`), from `model`.
    func answer(
        _ request: RecordedRequest, check: (RecordedRequest) -> FakeRefusal?, model: (RecordedRequest) -> FakeReply
    ) -> FakeReply {
        let refusal = check(request)
        let (scripted, delay, gate) = recorder.receive(request, provider: provider, refusal: refusal)
        var reply: FakeReply
        if let refusal {
            reply = refusal.reply
        } else {
            switch scripted?.action {
            case .respond(let status, let headers, let body)?:
                reply = FakeReply(status: status, headers: headers, body: body)
            case .dropConnection?:
                reply = FakeReply(status: 0, headers: [], body: Data(), drop: true)
            case .echoRequest(let status, let json, let template)?:
                let echo = FakeAnswer.echo(of: request)
                reply = json
                    ? .respond(status, json: template.replacingOccurrences(of: FakeAnswer.requestPlaceholder, with: jsonString(echo)))
                    : .text(status, "bad request: " + echo)
            case .model?, nil:
                reply = model(request)
            }
        }
        reply.delay += delay + (scripted?.delay ?? .zero)
        reply.gates = [scripted?.gate, gate].compactMap { $0 }
        return reply
    }

    /// Notes an anomaly of a request that was answered (not refused).
    func note(_ request: RecordedRequest, _ rule: String, _ detail: String) {
        recorder.note(
            FakeAnomaly(provider: provider, rule: rule, detail: detail, requestSequenceNumber: request.sequenceNumber))
    }
}
