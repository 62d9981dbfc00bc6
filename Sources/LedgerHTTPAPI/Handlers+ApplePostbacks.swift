import AttributionLedger
import Foundation
import HTTPTypes
import Hummingbird
import LedgerDomain
import NIOCore

/// AdAttributionKit postbacks forwarded by networks, and the developer copies Apple's device
/// sends to the app's own domain (SKAdNetwork and AdAttributionKit).
extension Handlers {
    /// Apple's well-known path for SKAdNetwork copies ("Configuring an advertised app", SKAdNetwork).
    static let skanCopyPath = "/.well-known/skadnetwork/report-attribution/"
    /// Apple's well-known path for AdAttributionKit copies ("Configuring an advertised app", AdAttributionKit).
    static let aakCopyPath = "/.well-known/appattribution/report-attribution/"

    func registerApplePostbacks(on router: Router<BasicRequestContext>) {
        router.post("/v1/apps/{app}/aak/postbacks") { request, context in try await aakPostback(request, context) }
        let copyLimiter = AppRateLimiter(limit: configuration.applePostbacks.copyRateLimit)
        router.post(RouterPath(Self.skanCopyPath)) { request, _ in
            try await developerCopy(request, system: .skan, limiter: copyLimiter)
        }
        router.post(RouterPath(Self.aakCopyPath)) { request, _ in
            try await developerCopy(request, system: .aak, limiter: copyLimiter)
        }
    }

    /// The `network` query (required) and the `Idempotency-Key` header (a UUID; a fresh id when
    /// absent) that both postback routes, SKAdNetwork and AdAttributionKit, take.
    /// - Throws: 400 naming `network` (`required`) or `Idempotency-Key` (`uuid`).
    static func postbackIntake(_ request: Request) throws(APIError) -> (network: String, eventID: UUID) {
        guard let network = request.uri.queryParameters.get("network"), !network.isEmpty else {
            throw APIError.invalidRequest(field: "network", rule: "required", message: "'network' names the network that forwarded the postback.")
        }
        guard let key = request.headers[HTTPField.Name("Idempotency-Key")!] else { return (network, UUID()) }
        guard key.utf8.count == 36, let id = UUID(uuidString: key) else {
            throw APIError.invalidRequest(field: "Idempotency-Key", rule: "uuid", message: "The idempotency key is a UUID.")
        }
        return (network, id)
    }

    /// `POST /v1/apps/{app}/aak/postbacks?network=<name>`: the body is the stanza exactly as the
    /// network received it from Apple; `Idempotency-Key: <uuid>` retries safely.
    func aakPostback(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let app = try authorize(request, context)
        let (network, eventID) = try Self.postbackIntake(request)
        let data = try await body(of: request)
        do {
            return try JSONResponse.make(try await ledger.ingestAAKPostback(
                raw: data, app: app, network: network, receivedAt: Date(),
                allowDevelopmentKeys: configuration.applePostbacks.developmentKeyApps.contains(app), eventID: eventID))
        } catch let error as AttributionLedgerError {
            throw Self.postbackRefusal(error)
        }
    }

    enum PostbackSystem { case skan, aak }

    /// A developer copy: no credential; the host the request reached names the app (404 when it
    /// names none, so nothing is ever stored under another app). Answered 200 once stored, whether
    /// the signature verified or not (the event says); 400 for a body no retry could make valid.
    func developerCopy(_ request: Request, system: PostbackSystem, limiter: AppRateLimiter) async throws -> Response {
        let settings = configuration.applePostbacks
        guard let app = settings.app(forHost: request.head.authority) else {
            throw APIError(.notFound, code: .notFound, field: "Host", rule: "configured_copy_host",
                           message: "No app receives Apple's postback copies at this host name.")
        }
        try limiter.admit(app)
        let limit = min(settings.copyMaxBytes, configuration.maxBodyBytes)
        if let length = request.headers[.contentLength].flatMap(Int.init), length > limit { throw APIError.payloadTooLarge(limit: limit) }
        let data: Data
        do {
            data = Data(try await request.body.collect(upTo: limit).readableBytesView)
        } catch is NIOTooManyBytesError {
            throw APIError.payloadTooLarge(limit: limit)
        }
        let network = "apple-developer-copy"
        do {
            switch system {
            case .skan:
                _ = try await ledger.ingestSKANPostback(raw: data, app: app, network: network, receivedAt: Date())
            case .aak:
                _ = try await ledger.ingestAAKPostback(raw: data, app: app, network: network, receivedAt: Date(),
                                                       allowDevelopmentKeys: settings.developmentKeyApps.contains(app))
            }
        } catch let error as AttributionLedgerError {
            throw Self.postbackRefusal(error)
        }
        return Response(status: .ok)
    }

    static func postbackRefusal(_ error: AttributionLedgerError) -> APIError {
        var refusal = APIError.fromLedger(error, index: nil, fieldPrefix: nil)
        if error.code == .invalid {
            refusal.code = error.field == "network" ? .invalidRequest : .invalidPostback
            if let kept = error.eventID { refusal.message += " The postback is kept as refused (event \(kept.uuidString.lowercased()))." }
        }
        return refusal
    }
}
