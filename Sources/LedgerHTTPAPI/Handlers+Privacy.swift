import AttributionLedger
import Foundation
import HTTPTypes
import Hummingbird
import LedgerDomain
import NIOCore

/// Erasure and SKAdNetwork postbacks.
extension Handlers {
    func registerPrivacyAndPostbacks(on router: Router<BasicRequestContext>) {
        router.post("/v1/apps/{app}/devices/{device}/erase") { request, context in try await erase(request, context) }
        router.post("/v1/apps/{app}/skan/postbacks") { request, context in try await postback(request, context) }
        registerApplePostbacks(on: router)
    }

    /// The body, refused with 415 unless it is JSON and with 413 past the limit (by
    /// `Content-Length` or while reading).
    func body(of request: Request) async throws -> Data {
        try JSONBody.requireJSON(request)
        let limit = configuration.maxBodyBytes
        if let length = request.headers[.contentLength].flatMap(Int.init), length > limit {
            throw APIError.payloadTooLarge(limit: limit)
        }
        do {
            return Data(try await request.body.collect(upTo: limit).readableBytesView)
        } catch is NIOTooManyBytesError {
            throw APIError.payloadTooLarge(limit: limit)
        }
    }

    /// `POST /v1/apps/{app}/devices/{device}/erase` with `{"requested_by": "dsar-portal",
    /// "requested_at": "<ISO 8601>"}` (`requested_at` defaults to now).
    func erase(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let (device, _) = try readTarget(request, context)
        let data = try await body(of: request)
        guard case .object(let object) = try JSONBody.parse(data) else {
            throw APIError(.badRequest, code: .malformedJSON, field: "body", rule: "json_object",
                           message: "The body must be a JSON object with 'requested_by'.")
        }
        if let unknown = object.keys.sorted().first(where: { !["requested_by", "requested_at"].contains($0) }) {
            throw APIError.invalidRequest(field: unknown, rule: "unknown_field", message: "The body has 'requested_by' and 'requested_at' only.")
        }
        guard case .string(let requestedBy)? = object["requested_by"] else {
            throw APIError.invalidRequest(field: "requested_by", rule: "required",
                                          message: "'requested_by' names who asked: a role or system, never a person.")
        }
        var requestedAt = Date()
        if let value = object["requested_at"] {
            guard case .string(let text) = value, let date = LedgerTimestamp.parse(text) else {
                throw APIError.invalidRequest(field: "requested_at", rule: "iso8601_timestamp",
                                              message: "'requested_at' is an ISO 8601 timestamp.")
            }
            requestedAt = date
        }
        do {
            return try JSONResponse.make(try await ledger.erase(device, requestedBy: requestedBy, requestedAt: requestedAt))
        } catch let error as AttributionLedgerError {
            var refusal = APIError.fromLedger(error, index: nil, fieldPrefix: nil)
            if error.code == .invalid, error.field == nil || error.field == "metadata" || error.field == "actor" {
                refusal.field = "requested_by"
            }
            throw refusal
        }
    }

    /// `POST /v1/apps/{app}/skan/postbacks?network=<name>`: the body is the postback exactly as the
    /// network received it from Apple; `Idempotency-Key: <uuid>` retries safely.
    func postback(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let app = try authorize(request, context)
        let (network, eventID) = try Self.postbackIntake(request)
        let data = try await body(of: request)
        do {
            let receipt = try await ledger.ingestSKANPostback(raw: data, app: app, network: network, receivedAt: Date(),
                                                              eventID: eventID)
            return try JSONResponse.make(receipt)
        } catch let error as AttributionLedgerError {
            var refusal = APIError.fromLedger(error, index: nil, fieldPrefix: nil)
            if error.code == .invalid {
                refusal.code = error.rule == "network" || error.field == "network" ? .invalidRequest : .invalidPostback
                if let kept = error.eventID { refusal.message += " The postback is kept as refused (event \(kept.uuidString.lowercased()))." }
            }
            throw refusal
        }
    }
}
