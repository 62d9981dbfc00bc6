import AttributionLedger
import Foundation
import HTTPTypes
import Hummingbird
import LedgerDomain

/// An HTTP refusal with a JSON body that names what to fix:
///
/// ```json
/// {"error": {"status": 400, "code": "invalid_event", "field": "events[0].data.device.idfa",
///            "rule": "uuid", "message": "The identifier must be a UUID (8-4-4-4-12 hex digits).",
///            "index": 0, "event_type": "FirstOpen"}}
/// ```
///
/// Messages never quote a value the caller sent (it may be personal data).
public struct APIError: Error, HTTPResponseError, Sendable, Hashable {
    /// The HTTP status.
    public var status: HTTPResponse.Status
    /// A stable code: `malformed_json`, `invalid_request`, `invalid_event`, `id_conflict`,
    /// `unauthenticated`, `forbidden`, `not_found`, `method_not_allowed`, `request_timeout`,
    /// `payload_too_large`, `unsupported_media_type`, `rate_limited`, `not_ready`, `internal`.
    public var code: String
    /// The offending field's path (`events[0].data.device.idfa`, `as_of`, `device_id`,
    /// `Content-Type`), if one.
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

    /// Creates an error.
    public init(_ status: HTTPResponse.Status, code: String, field: String? = nil, rule: String, message: String,
                index: Int? = nil, eventType: String? = nil) {
        self.status = status
        self.code = code
        self.field = field
        self.rule = rule
        self.message = message
        self.index = index
        self.eventType = eventType
    }

    /// A 400 for a request parameter or envelope field.
    static func invalidRequest(field: String?, rule: String, message: String, index: Int? = nil) -> APIError {
        APIError(.badRequest, code: "invalid_request", field: field, rule: rule, message: message, index: index)
    }

    /// The facade's refusal of one event of a batch (`index`) or of a path parameter (nil).
    static func fromLedger(_ error: AttributionLedgerError, index: Int?, fieldPrefix: String?) -> APIError {
        let field = error.field.map { field in fieldPrefix.map { "\($0).\(field)" } ?? field } ?? fieldPrefix
        switch error.code {
        case .idConflict:
            return APIError(.conflict, code: "id_conflict", field: field, rule: error.rule, message: error.message, index: index,
                            eventType: error.eventType)
        case .notFound:
            return APIError(.notFound, code: "not_found", field: field, rule: error.rule, message: error.message)
        case .forbidden:
            return APIError(.forbidden, code: "forbidden", field: field, rule: error.rule, message: error.message)
        case .rateLimited:
            var refusal = APIError(.tooManyRequests, code: "rate_limited", field: field, rule: error.rule, message: error.message)
            refusal.headers[.retryAfter] = "60"
            return refusal
        case .invalid:
            return APIError(.badRequest, code: index == nil ? "invalid_request" : "invalid_event", field: field, rule: error.rule,
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
        let body = Body(error: Body.Detail(status: status.code, code: code, field: field, rule: rule, message: message, index: index,
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
