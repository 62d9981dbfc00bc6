#if OTLPExport
import AsyncHTTPClient
import Foundation
import LedgerTestKit
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import Testing

/// `ledger serve` built with the `OTLPExport` trait exports its spans over OTLP/HTTP (protobuf,
/// `POST /v1/traces`) to the collector `OTEL_EXPORTER_OTLP_ENDPOINT` names: here a receiver on
/// loopback, which keeps every export it is sent.
@Suite("ledger serve exports traces over OTLP/HTTP", .database)
struct TraceExportTests {
    static let app = "com.example.game"
    static let key = "test-key-otlp-not-a-real-credential"
    static let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"

    /// What the receiver was sent: each request's method, path, content type and body.
    final class Received: Sendable {
        struct Export: Sendable {
            var method: String
            var path: String
            var contentType: String?
            var body: [UInt8]
        }

        let exports = Mutex<[Export]>([])
    }

    /// Answers every request `200` with an empty `ExportTraceServiceResponse`, keeping it.
    final class ReceiverHandler: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let received: Received
        var head: HTTPRequestHead?
        var body: [UInt8] = []

        init(_ received: Received) { self.received = received }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                self.head = head
                body = []
            case .body(let buffer):
                body += buffer.readableBytesView
            case .end:
                guard let head else { return }
                received.exports.withLock {
                    $0.append(.init(method: "\(head.method)", path: head.uri, contentType: head.headers.first(name: "content-type"),
                                    body: body))
                }
                var headers = HTTPHeaders()
                headers.add(name: "content-type", value: "application/x-protobuf")
                headers.add(name: "content-length", value: "0")
                context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .ok, headers: headers))),
                              promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }

    static func startReceiver(_ received: Received) async throws -> (any Channel) {
        try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap { channel.pipeline.addHandler(ReceiverHandler(received)) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    @Test func anAppendsSpansReachTheCollectorInTheCallersTrace() async throws {
        let received = Received()
        let receiver = try await Self.startReceiver(received)
        defer { receiver.close(promise: nil) }
        let collectorPort = try #require(receiver.localAddress?.port)
        try await TestDatabase.with { database in
            let digest = try await LedgerProcess.runDetached(["serve", "--hash-key"], stdin: {
                let file = FileManager.default.temporaryDirectory.appendingPathComponent("otlp-key-\(UUID().uuidString)")
                try? Data((Self.key + "\n").utf8).write(to: file)
                return file
            }()).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let logPath = FileManager.default.temporaryDirectory.appendingPathComponent("otlp-serve-\(UUID().uuidString).log").path
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: LedgerProcess.binary)
            process.arguments = ["serve", "--port", "0", "--no-projections", "--seal-every", "0", "--database-url", database.conninfo]
            var environment = ProcessInfo.processInfo.environment
            environment.removeValue(forKey: "LEDGER_DATABASE_URL")
            environment["LEDGER_API_KEYS"] = #"{"\#(Self.app)": "\#(digest)"}"#
            environment["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:\(collectorPort)"
            environment["OTEL_SERVICE_NAME"] = "ledger-serve-under-test"
            environment["OTEL_BSP_SCHEDULE_DELAY"] = "100"
            process.environment = environment
            process.standardOutput = FileHandle.nullDevice
            process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
            try process.run()
            defer { if process.isRunning { process.terminate() } }
            let log = { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
            var port: String?
            _ = try await waitUntil(timeout: .seconds(60)) {
                guard let range = log().range(of: "listening on http://127.0.0.1:") else { return !process.isRunning }
                port = String(log()[range.upperBound...].prefix { $0.isNumber })
                return true
            }
            let serverPort = try #require(port, "ledger serve did not start: \(log())")

            var request = HTTPClientRequest(url: "http://127.0.0.1:\(serverPort)/v1/apps/\(Self.app)/events")
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(Self.key)")
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "traceparent", value: "00-\(Self.traceID)-00f067aa0ba902b7-01")
            request.body = .bytes(ByteBuffer(string: #"{"events": [{"id": "\#(UUID().uuidString)", "type": "SKANRegistered", "device_id": "otlp-dev", "occurred_at": "2026-11-23T10:00:00Z", "data": {"skan_version": "4.0"}}]}"#))
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            _ = try await response.body.collect(upTo: 1 << 20)
            #expect(response.status == .ok)

            // The trace id travels as its 16 bytes in the protobuf body.
            let traceBytes = stride(from: 0, to: 32, by: 2).map { offset -> UInt8 in
                let start = Self.traceID.index(Self.traceID.startIndex, offsetBy: offset)
                return UInt8(Self.traceID[start..<Self.traceID.index(start, offsetBy: 2)], radix: 16)!
            }
            let exported = try await waitUntil(timeout: .seconds(30)) {
                received.exports.withLock { exports in
                    exports.contains { export in
                        export.body.count >= 16 && (0...(export.body.count - 16)).contains { index in
                            Array(export.body[index..<index + 16]) == traceBytes
                        }
                    }
                }
            }
            #expect(exported, "no export carried the request's trace id; log: \(log())")
            let exports = received.exports.withLock { $0 }
            #expect(exports.allSatisfy { $0.method == "POST" && $0.path == "/v1/traces" && $0.contentType == "application/x-protobuf" })
            #expect(exports.contains { String(decoding: $0.body, as: UTF8.self).contains("ledger-serve-under-test") })
            process.terminate()
            process.waitUntilExit()
        }
    }
}
#endif
