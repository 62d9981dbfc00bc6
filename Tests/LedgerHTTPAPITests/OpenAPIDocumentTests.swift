import AsyncHTTPClient
import Foundation
@testable import LedgerHTTPAPI
import LedgerTestKit
import NIOCore
import NIOHTTP1
import Testing

/// docs/openapi.yaml and the server agree: the same routes and methods, and every operation
/// answers a status its document lists.
@Suite struct OpenAPIDocumentTests {
    /// One operation of the document: path, method and documented statuses.
    struct Operation: CustomStringConvertible {
        var path: String
        var method: String
        var statuses: Set<Int> = []
        var secured = true
        var description: String { "\(method) \(path)" }
    }

    /// The operations of docs/openapi.yaml, read by indentation (paths at 2 spaces, methods at 4,
    /// `responses:` at 6, status codes at 8; `security: []` at 6 marks a public operation).
    static func operations() throws -> [Operation] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("docs/openapi.yaml"), encoding: .utf8)
        var operations: [Operation] = []
        var inPaths = false
        var path: String?
        var inResponses = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            let indent = line.prefix { $0 == " " }.count
            let content = line.trimmingCharacters(in: .whitespaces)
            if content.isEmpty { continue }
            if indent == 0 {
                inPaths = content == "paths:"
                continue
            }
            guard inPaths else { continue }
            if indent == 2, content.hasSuffix(":") {
                path = String(content.dropLast())
            } else if indent == 4, content.hasSuffix(":"), let path {
                operations.append(Operation(path: path, method: String(content.dropLast()).uppercased()))
                inResponses = false
            } else if indent == 6 {
                inResponses = content == "responses:"
                if content == "security: []" { operations[operations.count - 1].secured = false }
            } else if indent == 8, inResponses, content.hasPrefix("'"), let code = Int(content.dropFirst().prefix(3)) {
                operations[operations.count - 1].statuses.insert(code)
            }
        }
        return operations
    }

    @Test func documentAndServerHaveTheSameRoutesAndMethods() throws {
        let documented = Set(try Self.operations().map(\.description))
        let served = Set(RouteTable.routes.flatMap { route in
            route.methods.map { "\($0) /" + route.template.joined(separator: "/") }
        })
        #expect(documented == served)
        #expect(documented.count >= 8)
    }

    @Test(.database) func everyOperationAnswersADocumentedStatus() async throws {
        let operations = try Self.operations()
        try await withAPI { api in
            for operation in operations {
                let path = operation.path.replacingOccurrences(of: "{app}", with: appA)
                    .replacingOccurrences(of: "{device}", with: "install-o")
                let method = HTTPMethod(rawValue: operation.method)
                var query = ""
                var body: String?
                var expectSuccess = true
                switch operation.path {
                case "/v1/apps/{app}/events": body = batch(skanRegisteredJSON(device: "install-o"))
                case "/v1/apps/{app}/devices/{device}/erase": body = #"{"requested_by": "openapi-test"}"#
                case "/v1/apps/{app}/skan/postbacks":
                    // An unsigned, schema-less postback: refused (400) and kept as refused.
                    (query, body, expectSuccess) = ("?network=test-network", #"{"version": "4.0"}"#, false)
                case "/v1/apps/{app}/aak/postbacks":
                    // A JWS that is not one: refused (400), nothing stored.
                    (query, body, expectSuccess) = ("?network=test-network", #"{"jws-string": "a.b"}"#, false)
                case "/.well-known/skadnetwork/report-attribution", "/.well-known/appattribution/report-attribution":
                    // No copy host configured here: 404 (the developer-copy tests bind hosts).
                    (body, expectSuccess) = ("{}", false)
                default: break
                }
                let valid: (status: Int, body: Data)
                if operation.path == "/v1/apps/{app}/events/stream" {
                    // An endless answer: its status, then the client goes away.
                    let stream = try await EventStreamClient.open(api, path)
                    stream.client.kill()
                    valid = (stream.client.status, Data())
                } else if let body {
                    valid = try await api.send(method, path + query, json: body)
                } else {
                    valid = try await api.send(method, path)
                }
                #expect(operation.statuses.contains(valid.status), "\(operation) answered \(valid.status)")
                if expectSuccess { #expect(valid.status < 300, "\(operation) answered \(valid.status)") }
                if operation.secured {
                    let anonymous = try await api.send(method, path, key: nil)
                    #expect(anonymous.status == 401 && operation.statuses.contains(401), "\(operation) without a key")
                    let otherApp = try await api.send(method, path, key: keyB)
                    #expect(otherApp.status == 403 && operation.statuses.contains(403), "\(operation) with another app's key")
                }
            }
        }
    }
}
