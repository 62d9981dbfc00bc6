import Foundation
import LedgerDomain
import LedgerProviders
import Synchronization

/// Apple AdServices attribution lookups (seed 002), faked: `POST /api/v1/` with the token alone as a
/// `text/plain` body.
///
/// - `404` while a token is not "ready" (Apple: "A 404 response can occur if you make an API call
///   too quickly after receiving a valid token"), then `200` with the document's sample payload
///   (`attribution: true`) or `{"attribution": false}`.
/// - `404` for ever once a token is past its 24 h TTL: from ``tokenLifetime`` after the `issuedAt`
///   it was registered with, by the fake's clock (``setClock(_:)``), noted as the anomaly
///   `token_ttl` (a client that tracks the TTL never sends such a token); or once
///   ``expire(token:)``d, for tests that do not keep time.
/// - `400` for tokens marked invalid, an empty body, or a body that is not `text/plain` (noted).
/// - `500` on demand: `apple.enqueue(.status(500))`.
///
/// Tokens never registered follow the defaults (``setDefaults(readiness:outcome:)``): ready at
/// once and attributed, unless changed. Only lookups answered by the model count towards readiness;
/// a scripted answer replaces the model for that request.
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

    /// A token's lifetime: "The token has a time to live (TTL) of 24 hours" (seed 002).
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
        var defaultReadiness = Readiness.immediately
        var defaultOutcome = Outcome.attributed()
        var tokens: [String: Token] = [:]
        var clock: any WallClock = SystemClock()
    }

    private let model = Mutex(Model())

    init() {}

    /// How unregistered tokens behave.
    public func setDefaults(readiness: Readiness = .immediately, outcome: Outcome = .attributed()) {
        model.withLock {
            $0.defaultReadiness = readiness
            $0.defaultOutcome = outcome
        }
    }

    /// Registers `token` with its own behaviour (replacing any earlier registration, lookups reset).
    /// With `issuedAt`, lookups from ``tokenLifetime`` after it (by the fake's clock) answer `404`.
    public func register(
        token: String, readiness: Readiness = .immediately, outcome: Outcome = .attributed(), issuedAt: Date? = nil
    ) {
        model.withLock { $0.tokens[token] = Token(readiness: readiness, outcome: outcome, issuedAt: issuedAt) }
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

    /// Forgets tokens and defaults.
    public func resetModel() { model.withLock { $0 = Model() } }

    private func update(_ token: String, _ change: (inout Token) -> Void) {
        model.withLock { model in
            var entry = model.tokens[token] ?? Token(readiness: model.defaultReadiness, outcome: model.defaultOutcome)
            change(&entry)
            model.tokens[token] = entry
        }
    }

    func handle(_ request: RecordedRequest) -> FakeReply {
        answer(request) { request in
            let contentType = request.headerValue("Content-Type")?.lowercased() ?? ""
            if !contentType.hasPrefix("text/plain") {
                note(request, "content_type_text_plain", "Content-Type must be text/plain (seed 002), got '\(contentType)'")
                return .text(400, "Bad Request")
            }
            let token = request.bodyText.trimmingCharacters(in: .whitespacesAndNewlines)
            if token.isEmpty {
                note(request, "token_required", "the body must be the attribution token (seed 002)")
                return .text(400, "Bad Request")
            }
            let (status, outcome, pastTTL) = model.withLock { model -> (Int, Outcome, Bool) in
                var entry = model.tokens[token] ?? Token(readiness: model.defaultReadiness, outcome: model.defaultOutcome)
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
                note(request, "token_ttl", "the token is past its 24-hour TTL (seed 002)")
            }
            switch status {
            case 200: return .respond(200, json: Self.payload(outcome))
            case 400: return .text(400, "Bad Request")
            default: return .text(404, "Not Found")
            }
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
