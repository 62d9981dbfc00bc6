import AttributionLedger
import Foundation
import HTTPTypes
import Hummingbird
import LedgerPostgres
import LedgerStore
import Logging
import Metrics
import NIOCore

/// Turns every failure into a JSON error body: ``APIError``s as they are, Hummingbird's 404 into
/// `not_found` (or `method_not_allowed` with `Allow` when the path exists under another method),
/// an oversize body into 413, a body that outlasted the request timeout into 408, anything else
/// into a 500 logged by type and SQLSTATE only (a database error's message, DETAIL and statement
/// may quote row values, so none of them is logged).
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            Counter(label: "ledger_http_refusals_total", dimensions: [("code", error.code.description), ("rule", error.rule)]).increment()
            throw error
        } catch let error as HTTPError where error.status == .notFound {
            let allowed = RouteTable.methods(forPath: request.uri.path)
            if !allowed.isEmpty {
                var refusal = APIError(.methodNotAllowed, code: .methodNotAllowed, rule: "allowed_methods",
                                       message: "This path answers \(allowed.joined(separator: ", ")) only.")
                refusal.headers[.allow] = allowed.joined(separator: ", ")
                throw refusal
            }
            throw APIError(.notFound, code: .notFound, rule: "known_route", message: "No such route; see docs/openapi.yaml.")
        } catch let error as HTTPError {
            throw APIError(error.status, code: .httpError, rule: "http_\(error.status.code)",
                           message: error.body ?? error.status.reasonPhrase)
        } catch is NIOTooManyBytesError {
            throw APIError.payloadTooLarge(limit: nil)
        } catch let error as AttributionLedgerError {
            // A facade refusal a route did not map itself (reads refused by a tenant check).
            let refusal = APIError.fromLedger(error, index: error.index, fieldPrefix: nil)
            Counter(label: "ledger_http_refusals_total", dimensions: [("code", refusal.code.description), ("rule", refusal.rule)]).increment()
            throw refusal
        } catch EventStoreError.readDatabaseBehind(let position, let readableThrough, _) {
            // A read as of a position the standby has not replayed yet: it will, shortly.
            var refusal = APIError(.serviceUnavailable, code: .readDatabaseBehind, field: "as_of_position", rule: "read_database_caught_up",
                                   message: "The read database holds the log through position \(readableThrough), not yet \(position); retry shortly.")
            refusal.headers[.retryAfter] = "1"
            Counter(label: "ledger_http_refusals_total", dimensions: [("code", refusal.code.description), ("rule", refusal.rule)]).increment()
            throw refusal
        } catch let error as RequestTimeoutError {
            throw APIError.requestTimeout(error.timeout)
        } catch let error where ConnectionLossRetry.isConnectionLoss(error) {
            // The database is away (a restart, a failover): nothing was acknowledged, the same
            // request with the same ids succeeds once it is back.
            logger.warning("request failed: the database is unreachable", metadata: [
                "http.method": "\(request.method)", "http.route": "\(context.endpointPath ?? "unknown")"])
            Counter(label: "ledger_http_unavailable_total").increment()
            var refusal = APIError(.serviceUnavailable, code: .databaseUnavailable, rule: "database_reachable",
                                   message: "The ledger's database is unreachable; retry with the same ids shortly.")
            refusal.headers[.retryAfter] = "2"
            throw refusal
        } catch {
            var metadata = Self.loggable(error)
            metadata["http.method"] = "\(request.method)"
            metadata["http.route"] = "\(context.endpointPath ?? "unknown")"
            logger.error("request failed", metadata: metadata)
            Counter(label: "ledger_http_internal_errors_total").increment()
            throw APIError(.internalServerError, code: .internal, rule: "internal_error",
                           message: "The ledger failed to answer; the error is logged. Retrying with the same ids is safe.")
        }
    }
}

extension ErrorMiddleware {
    /// What may be logged of an internal error: its type, and for a database error its code and
    /// SQLSTATE.
    static func loggable(_ error: any Error) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["error.type": "\(String(reflecting: type(of: error)))"]
        if let error = error as? PostgresError {
            metadata["db.code"] = "\(error.code)"
            if let sqlState = error.sqlState { metadata["db.sqlstate"] = "\(sqlState)" }
        }
        return metadata
    }
}

extension APIError {
    /// 408 for a request whose body did not arrive within the request timeout; the connection
    /// closes after it.
    static func requestTimeout(_ timeout: TimeAmount) -> APIError {
        let milliseconds = timeout.nanoseconds / 1_000_000
        let limit = milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(milliseconds) ms"
        var refusal = APIError(.requestTimeout, code: .requestTimeout, field: "body", rule: "request_timeout",
                               message: "The request did not arrive within \(limit) of its first byte; the connection is closed.")
        refusal.headers[.connection] = "close"
        return refusal
    }

    /// 413 for a body over the limit.
    static func payloadTooLarge(limit: Int?) -> APIError {
        APIError(.contentTooLarge, code: .payloadTooLarge, field: "body", rule: limit.map { "max_\($0)_bytes" } ?? "max_body_bytes",
                 message: "The request body is larger than the server accepts\(limit.map { " (\($0) bytes)" } ?? "").")
    }
}

/// The API's routes by path shape, for `405 Method Not Allowed` answers.
enum RouteTable {
    /// Path templates (`{…}` matches one segment) and their methods.
    static let routes: [(template: [String], methods: [String])] = [
        (["v1", "apps", "{app}", "events"], ["POST"]),
        (["v1", "apps", "{app}", "devices", "{device}", "state"], ["GET"]),
        (["v1", "apps", "{app}", "devices", "{device}", "skan"], ["GET"]),
        (["v1", "apps", "{app}", "devices", "{device}", "attribution"], ["GET"]),
        (["v1", "apps", "{app}", "devices", "{device}", "history"], ["GET"]),
        (["v1", "apps", "{app}", "devices", "{device}", "timeline"], ["GET"]),
        (["v1", "apps", "{app}", "devices", "{device}", "erase"], ["POST"]),
        (["v1", "apps", "{app}", "skan", "postbacks"], ["POST"]),
        (["v1", "apps", "{app}", "aak", "postbacks"], ["POST"]),
        ([".well-known", "skadnetwork", "report-attribution"], ["POST"]),
        ([".well-known", "appattribution", "report-attribution"], ["POST"]),
        (["v1", "apps", "{app}", "events", "stream"], ["GET"]),
        (["health"], ["GET"]), (["ready"], ["GET"]), (["metrics"], ["GET"]),
    ]

    /// The methods a path answers (empty when no route has its shape).
    static func methods(forPath path: String) -> [String] {
        let segments = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        for route in routes where route.template.count == segments.count {
            let matches = zip(route.template, segments).allSatisfy { template, segment in
                template.hasPrefix("{") || template == segment
            }
            if matches { return route.methods }
        }
        return []
    }
}
