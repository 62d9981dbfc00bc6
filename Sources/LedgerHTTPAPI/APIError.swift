import AttributionLedger
import Foundation
import HTTPTypes
import Hummingbird
import LedgerDomain

/// The HTTP layer's one error: a refusal with a JSON body that names what to fix,
///
/// ```json
/// {"error": {"status": 400, "code": "invalid_event", "field": "events[0].data.device.idfa",
///            "rule": "uuid", "message": "The identifier must be a UUID (8-4-4-4-12 hex digits).",
///            "index": 0, "event_type": "FirstOpen"}}
/// ```
///
/// or a configuration the server refuses before it binds (``Code/invalidAPIKeys``,
/// ``Code/invalidConfiguration``: never sent). Messages never quote a value the caller sent (it may
/// be personal data), nor a key or a digest.
public struct APIError: Error, HTTPResponseError, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, spelled as the body's `code`. Opaque, as postgres-nio's `PSQLError.Code`: a
    /// new code does not break a client's `switch`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        /// The code as the JSON body spells it (`invalid_event`).
        public let description: String
        private init(_ description: String) { self.description = description }

        /// 400: a body that is not JSON or repeats a key; a refused request parameter or field; a refused event
        /// (`index`); a refused SKAN postback.
        public static let malformedJSON = Code("malformed_json"), invalidRequest = Code("invalid_request"), invalidEvent = Code("invalid_event"),
                          invalidPostback = Code("invalid_postback")
        /// 409 (an event id taken by another event), 401 (no valid API key), 403 (another app's key, or not allowed).
        public static let idConflict = Code("id_conflict"), unauthenticated = Code("unauthenticated"), forbidden = Code("forbidden")
        /// 404 (no such route, device or resource), 405 (other methods only: `Allow` lists them), 408 (the body came too late).
        public static let notFound = Code("not_found"), methodNotAllowed = Code("method_not_allowed"), requestTimeout = Code("request_timeout")
        /// 413 (the body exceeds the limit), 415 (the body is not `application/json`), 429 (the app's rate limit: see `Retry-After`).
        public static let payloadTooLarge = Code("payload_too_large"), unsupportedMediaType = Code("unsupported_media_type"),
                          rateLimited = Code("rate_limited")
        /// 503 (the database cannot be reached), another refusal of the HTTP framework (its status), 500 (logged, not sent).
        public static let databaseUnavailable = Code("database_unavailable"), httpError = Code("http_error"), `internal` = Code("internal")
        /// 503: the read database (a standby, `LEDGER_READ_DATABASE_URL`) has not replayed the
        /// `as_of_position` asked for yet (see `Retry-After`).
        public static let readDatabaseBehind = Code("read_database_behind")
        /// A refused configuration of the API keys (rules `configured`, `readable_file`, `json_object`, `sha256_hex`,
        /// `one_app_per_key`, or an app id's) or of the server (`loopback_host`, `positive_timeout`, `positive_rate_limit`):
        /// never sent, the server does not start.
        public static let invalidAPIKeys = Code("invalid_api_keys"), invalidConfiguration = Code("invalid_configuration")
    }

    /// The HTTP status.
    public var status: HTTPResponse.Status
    /// What went wrong; the body's `code`.
    public var code: Code
    /// The offending field's path (`events[0].data.device.idfa`, `as_of`, `device_id`,
    /// `Content-Type`), or the configuration's host, timeout, file or app, if one.
    public var field: String?
    /// The rule broken (`uuid`, `required`, `json_syntax`, `no_duplicate_keys`, `max_4194304_bytes`, …).
    public var rule: String
    /// A sentence for a person.
    public var message: String
    /// The offending event's place in the batch, from 0.
    public var index: Int?
    /// The offending event's type.
    public var eventType: String?
    /// Extra response headers (`WWW-Authenticate`, `Allow`, `Retry-After`, `Connection`).
    var headers: HTTPFields = [:]

    /// The message: one line for a person or an operator.
    public var description: String { message }

    /// Creates an error.
    public init(_ status: HTTPResponse.Status, code: Code, field: String? = nil, rule: String, message: String,
                index: Int? = nil, eventType: String? = nil) {
        (self.status, self.code, self.field, self.rule, self.message, self.index, self.eventType) =
            (status, code, field, rule, message, index, eventType)
    }

    /// A refused configuration (code ``Code/invalidAPIKeys`` or ``Code/invalidConfiguration``), one
    /// line for an operator; never sent.
    static func refusedConfiguration(_ code: Code, field: String? = nil, rule: String, _ message: String) -> APIError {
        APIError(.internalServerError, code: code, field: field, rule: rule, message: message)
    }

    /// A 400 for a request parameter or envelope field.
    static func invalidRequest(field: String?, rule: String, message: String, index: Int? = nil) -> APIError {
        APIError(.badRequest, code: .invalidRequest, field: field, rule: rule, message: message, index: index)
    }

    /// The facade's refusal of one event of a batch (`index`) or of a path parameter (nil).
    static func fromLedger(_ error: AttributionLedgerError, index: Int?, fieldPrefix: String?) -> APIError {
        let field = error.field.map { field in fieldPrefix.map { "\($0).\(field)" } ?? field } ?? fieldPrefix
        switch error.code {
        case .idConflict:
            return APIError(.conflict, code: .idConflict, field: field, rule: error.rule, message: error.message, index: index,
                            eventType: error.eventType)
        case .notFound:
            return APIError(.notFound, code: .notFound, field: field, rule: error.rule, message: error.message)
        case .forbidden:
            return APIError(.forbidden, code: .forbidden, field: field, rule: error.rule, message: error.message)
        case .rateLimited:
            var refusal = APIError(.tooManyRequests, code: .rateLimited, field: field, rule: error.rule, message: error.message)
            refusal.headers[.retryAfter] = "60"
            return refusal
        case .invalid:
            return APIError(.badRequest, code: index == nil ? .invalidRequest : .invalidEvent, field: field, rule: error.rule,
                            message: error.message, index: index, eventType: error.eventType)
        }
    }

    /// The JSON body.
    struct Body: Encodable {
        struct Detail: Encodable {
            var status: Int
            var code: String
            var field: String?
            var rule: String
            var message: String
            var index: Int?
            var eventType: String?

            enum CodingKeys: String, CodingKey {
                case status, code, field, rule, message, index
                case eventType = "event_type"
            }
        }

        var error: Detail
    }

    /// The response: the status, the JSON body and any extra headers.
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let body = Body(error: Body.Detail(status: status.code, code: code.description, field: field, rule: rule, message: message, index: index,
                                           eventType: eventType))
        var response = try JSONResponse.make(status: status, body)
        for field in headers { response.headers.append(field) }
        return response
    }
}

/// JSON responses encoded the ledger's way: keys sorted, timestamps as ISO 8601 with microseconds.
enum JSONResponse {
    /// A response holding `value` as JSON.
    static func make(status: HTTPResponse.Status = .ok, _ value: some Encodable) throws -> Response {
        let data = try LedgerJSON.makeEncoder().encode(value)
        return Response(status: status, headers: [.contentType: "application/json; charset=utf-8"],
                        body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}
