import Foundation
import LedgerDomain
import LedgerProviders
import Synchronization

/// Apple AdServices attribution lookups (Apple AdServices attribution API), faked: `POST /api/v1/` with the token alone as a
/// `text/plain` body.
///
/// Every request is checked first; a bad one is refused and noted (rule in parentheses):
/// - method `POST` (`wrong_method`, `405`), no query (`unknown_parameter`, `400`);
/// - `Content-Type: text/plain` ("use a content-type of text/plain in the header",
///   `content_type_text_plain`, `400`);
/// - the body is a single token, Base64 ("a Base64 encoded string") with nothing else — no
///   whitespace, no second token (`token_required`, `token_base64`: `400`, "The token is invalid");
/// - the token is one a device made, i.e. one the test registered (``register(token:readiness:outcome:issuedAt:)``):
///   Apple answers a token it never issued `400` too (`unknown_token`).
///
/// A registered token is answered by its model:
/// - `404` while it is not "ready" (Apple: "A 404 response can occur if you make an API call too
///   quickly after receiving a valid token"), then `200` with the document's sample payload
///   (`attribution: true`) or `{"attribution": false}`;
/// - `404` for ever once past its 24 h TTL: from ``tokenLifetime`` after the `issuedAt` it was
///   registered with, by the fake's clock (``setClock(_:)``), noted as the anomaly `token_ttl` (a
///   client that tracks the TTL never sends such a token); or once ``expire(token:)``d, for tests
///   that do not keep time;
/// - `400` once ``markInvalid(token:)``;
/// - `500` on demand: `apple.enqueue(.status(500))`.
///
/// Only lookups answered by the model count towards readiness; a scripted answer replaces the
/// model for that request.
public final class FakeAppleAdServices: FakeProvider {
    /// When a token's record becomes available.
    public enum Readiness: Sendable, Hashable {
        /// At the first lookup.
        case immediately
        /// The first `n` lookups answer `404`; lookup `n + 1` finds the record.
        case afterLookups(Int)
        /// Never: every lookup answers `404`.
        case never
    }

    /// What a ready token's record says.
    public enum Outcome: Sendable, Hashable {
        /// `attribution: true` with the document's sample fields; `detailed` adds `clickDate`
        /// (the payload when the user authorized tracking).
        case attributed(detailed: Bool = false)
        /// `attribution: true`, view-through (`claimType: Impression`, detailed with `impressionDate`).
        case attributedView(detailed: Bool = false)
        /// `{"attribution": false}`: acknowledged, no match.
        case notAttributed
        /// This exact JSON body.
        case custom(String)
    }

    /// A token's lifetime: "The token has a time to live (TTL) of 24 hours" (Apple AdServices attribution API).
    public static let tokenLifetime: TimeInterval = 86_400

    /// Which provider this fakes.
    public let provider = Provider.appleAdServices
    /// Requests, script, anomalies, delay.
    public let recorder = FakeRecorder()

    private struct Token {
        var readiness: Readiness
        var outcome: Outcome
        var invalid = false
        var expired = false
        /// When the device made the token; `nil` for a token with no known age.
        var issuedAt: Date?
        var lookups = 0
    }

    private struct Model {
        var tokens: [String: Token] = [:]
        var clock: any WallClock = SystemClock()
    }

    private let model = Mutex(Model())

    init() {}

    /// Registers `token` — a token a device made, the only kind Apple answers — with its own
    /// behaviour (replacing any earlier registration, lookups reset). With `issuedAt`, lookups from
    /// ``tokenLifetime`` after it (by the fake's clock) answer `404`.
    public func register(
        token: String, readiness: Readiness = .immediately, outcome: Outcome = .attributed(), issuedAt: Date? = nil
    ) {
        model.withLock { $0.tokens[token] = Token(readiness: readiness, outcome: outcome, issuedAt: issuedAt) }
    }

    /// Registers each of `tokens` with the same behaviour.
    public func register(
        tokens: some Sequence<String>, readiness: Readiness = .immediately, outcome: Outcome = .attributed(),
        issuedAt: Date? = nil
    ) {
        model.withLock { model in
            for token in tokens { model.tokens[token] = Token(readiness: readiness, outcome: outcome, issuedAt: issuedAt) }
        }
    }

    /// Changes the readiness of every registered token (e.g. `.never`: every lookup answers 404).
    public func setReadinessOfEveryToken(_ readiness: Readiness) {
        model.withLock { model in
            for token in model.tokens.keys { model.tokens[token]?.readiness = readiness }
        }
    }

    /// Whether `token` is registered.
    public func isRegistered(token: String) -> Bool { model.withLock { $0.tokens[token] != nil } }

    /// Whether `token` was registered with an `issuedAt` that is ``tokenLifetime`` or more ago, by
    /// the fake's clock (what Branch's fake asks of an `apple_attribution_token`).
    func isPastTTL(token: String) -> Bool {
        model.withLock { model in
            guard let issuedAt = model.tokens[token]?.issuedAt else { return false }
            return model.clock.now() >= issuedAt.addingTimeInterval(Self.tokenLifetime)
        }
    }

    /// The clock the TTL is judged by: the system's unless a test sets one it controls (often the
    /// ledger's own ``ManualClock``, so that both sides agree on the time).
    public func setClock(_ clock: any WallClock) { model.withLock { $0.clock = clock } }

    /// Makes every lookup of `token` answer `400` (the token is invalid).
    public func markInvalid(token: String) { update(token) { $0.invalid = true } }

    /// Makes `token` ready now, whatever its readiness said.
    public func markReady(token: String) { update(token) { $0.readiness = .immediately } }

    /// Makes every later lookup of `token` answer `404`: past its 24-hour TTL.
    public func expire(token: String) { update(token) { $0.expired = true } }

    /// How many lookups of `token` the model answered.
    public func lookups(of token: String) -> Int { model.withLock { $0.tokens[token]?.lookups ?? 0 } }

    /// Forgets tokens.
    public func resetModel() { model.withLock { $0 = Model() } }

    private func update(_ token: String, _ change: (inout Token) -> Void) {
        model.withLock { model in
            var entry = model.tokens[token] ?? Token(readiness: .immediately, outcome: .attributed())
            change(&entry)
            model.tokens[token] = entry
        }
    }

    func handle(_ request: RecordedRequest) -> FakeReply {
        answer(request, check: check, model: lookup)
    }

    /// "The token is invalid" (the Apple AdServices attribution API's 400).
    private static func invalid(_ rule: String, _ detail: String) -> FakeRefusal {
        FakeRefusal(rule: rule, detail: detail + " (Apple AdServices attribution API)", reply: .text(400, "Bad Request"))
    }

    func check(_ request: RecordedRequest) -> FakeRefusal? {
        guard request.method == "POST" else { return .wrongMethod(request, expected: "POST", document: "Apple AdServices attribution API") }
        guard request.rawQuery.isEmpty else {
            return Self.invalid("unknown_parameter", "the lookup takes no query, got '\(request.rawQuery)'")
        }
        let contentType = request.headerValue("Content-Type")?.lowercased() ?? ""
        guard contentType == "text/plain" || contentType.hasPrefix("text/plain;") else {
            return Self.invalid("content_type_text_plain", "Content-Type must be text/plain, got '\(contentType)'")
        }
        let token = request.bodyText
        guard !token.isEmpty else { return Self.invalid("token_required", "the body must be the attribution token") }
        guard FakeChecks.isBase64(token) else {
            return Self.invalid("token_base64", "the body must be a single Base64 token and nothing else, got '\(token.prefix(40))'")
        }
        guard isRegistered(token: token) else {
            return Self.invalid("unknown_token", "no device made the token '\(token.prefix(40))'")
        }
        return nil
    }

    private func lookup(_ request: RecordedRequest) -> FakeReply {
        let token = request.bodyText
        let (status, outcome, pastTTL) = model.withLock { model -> (Int, Outcome, Bool) in
            var entry = model.tokens[token] ?? Token(readiness: .immediately, outcome: .attributed())
            entry.lookups += 1
            defer { model.tokens[token] = entry }
            if entry.invalid { return (400, entry.outcome, false) }
            if let issuedAt = entry.issuedAt, model.clock.now() >= issuedAt.addingTimeInterval(Self.tokenLifetime) {
                return (404, entry.outcome, true)
            }
            if entry.expired { return (404, entry.outcome, false) }
            switch entry.readiness {
            case .immediately: return (200, entry.outcome, false)
            case .afterLookups(let n): return (entry.lookups > n ? 200 : 404, entry.outcome, false)
            case .never: return (404, entry.outcome, false)
            }
        }
        if pastTTL {
            note(request, "token_ttl", "the token is past its 24-hour TTL (Apple AdServices attribution API)")
        }
        switch status {
        case 200: return .respond(200, json: Self.payload(outcome))
        case 400: return .text(400, "Bad Request")
        default: return .text(404, "Not Found")
        }
    }

    /// The document's sample payloads.
    static func payload(_ outcome: Outcome) -> String {
        let common =
            #""orgId":40669820,"campaignId":542370539,"conversionType":"Download","adGroupId":542317095,"#
            + #""countryOrRegion":"US","keywordId":87675432,"adId":542317136"#
        switch outcome {
        case .attributed(let detailed):
            return #"{"attribution":true,\#(common),"claimType":"Click"\#(detailed ? #","clickDate":"2024-10-08T17:17Z""# : "")}"#
        case .attributedView(let detailed):
            return #"{"attribution":true,\#(common),"claimType":"Impression"\#(detailed ? #","impressionDate":"2024-10-08T17:17Z""# : "")}"#
        case .notAttributed:
            return #"{"attribution":false}"#
        case .custom(let json):
            return json
        }
    }
}
