import Foundation
import LedgerProviders
import Logging
import NIOCore
import NIOHTTP1

/// One connection of ``FakeProviders``: collects a request, asks the fakes for the answer and
/// writes it — all on the connection's event loop.
///
/// The fakes answer from NIO's own threads, never from Swift's cooperative pool: tests, the demo
/// and the benchmarks keep that pool busy (two threads here), and a fake that waited its turn
/// there would look like a slow provider to the transport's deadlines.
final class FakeHTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let server: FakeProviders
    private var connection = 0
    private var head: HTTPRequestHead?
    private var body = ByteBuffer()
    private var tooLarge = false
    /// An answer is being delayed or written: later requests on the connection (pipelining) wait.
    private var busy = false
    private var queued: [(HTTPRequestHead, ByteBuffer, Bool)] = []

    init(server: FakeProviders) {
        self.server = server
    }

    func channelActive(context: ChannelHandlerContext) {
        connection = server.connectionOpened(context.channel)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        // Requests waiting behind an answer will never be answered now.
        if !queued.isEmpty {
            server.requestsInFlight(changedBy: -queued.count)
            queued.removeAll()
        }
        server.connectionClosed(context.channel)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        server.logger.trace("fake provider connection ended", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let received):
            head = received
            body.clear()
            tooLarge = false
        case .body(var chunk):
            if body.readableBytes + chunk.readableBytes > server.configuration.maximumRequestBodyBytes {
                tooLarge = true
            } else {
                body.writeBuffer(&chunk)
            }
        case .end:
            guard let request = head else { return }
            head = nil
            queued.append((request, body, tooLarge))
            server.requestsInFlight(changedBy: 1)
            body = ByteBuffer()
            answerNext(context: context)
        }
    }

    private func answerNext(context: ChannelHandlerContext) {
        guard !busy, !queued.isEmpty else { return }
        let (request, body, tooLarge) = queued.removeFirst()
        busy = true
        let reply = server.reply(to: request, body: Data(body.readableBytesView), tooLarge: tooLarge, connection: connection)
        let keepAlive = request.isKeepAlive && !tooLarge
        release(reply, keepAlive: keepAlive, after: reply.gates[...], context: context)
    }

    /// Finishes `reply` once every gate is open and then its delay has passed.
    private func release(_ reply: FakeReply, keepAlive: Bool, after gates: ArraySlice<FakeGate>, context: ChannelHandlerContext) {
        guard let gate = gates.first else {
            if reply.delay > .zero {
                let loop = context.eventLoop.assumeIsolated()
                loop.scheduleTask(in: TimeAmount(reply.delay)) { [self] in
                    finish(reply, keepAlive: keepAlive, context: context)
                }
            } else {
                finish(reply, keepAlive: keepAlive, context: context)
            }
            return
        }
        let loop = context.eventLoop
        let bound = NIOLoopBound((self, context), eventLoop: loop)
        let rest = gates.dropFirst()
        gate.whenOpen {
            loop.execute {
                let (handler, context) = bound.value
                handler.release(reply, keepAlive: keepAlive, after: rest, context: context)
            }
        }
    }

    private func finish(_ reply: FakeReply, keepAlive: Bool, context: ChannelHandlerContext) {
        server.requestsInFlight(changedBy: -1)
        guard context.channel.isActive else { return }
        if reply.drop {
            context.close(promise: nil)
            return
        }
        var headers = HTTPHeaders()
        for header in reply.headers where header.name.lowercased() != "content-length" {
            headers.add(name: header.name, value: header.value)
        }
        headers.replaceOrAdd(name: "Content-Length", value: String(reply.body.count))
        if !keepAlive { headers.replaceOrAdd(name: "Connection", value: "close") }
        let head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: reply.status), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if !reply.body.isEmpty { context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: reply.body)))), promise: nil) }
        if keepAlive {
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            busy = false
            answerNext(context: context)
        } else {
            context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }
    }
}
