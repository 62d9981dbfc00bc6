import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1

/// A request whose head and body did not arrive within the request timeout. The route reading
/// the body sees it and answers 408; the connection then closes.
struct RequestTimeoutError: Error, Sendable {
    /// The request timeout.
    var timeout: TimeAmount
}

/// Tells ``ConnectionTimeoutHandler`` that bytes arrived (the first handler of the pipeline
/// sends it, before the HTTP decoder has a whole head to show).
struct InboundBytesEvent: Sendable {}

/// Sends ``InboundBytesEvent`` up the pipeline for every read.
final class InboundBytesMarker: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.fireUserInboundEventTriggered(InboundBytesEvent())
        context.fireChannelRead(data)
    }
}

/// Runs ``ConnectionDeadlines`` on a connection, right after the HTTP/1 decoder: closes
/// connections whose head or idleness outlast their timeout, and fails a request whose body
/// outlasts the request timeout (answered 408, then closed).
final class ConnectionTimeoutHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let timeouts: ConnectionDeadlines.Timeouts
    private let logger: Logger
    private var deadlines: ConnectionDeadlines?
    private var timer: Scheduled<Void>?
    private var timerDeadline: NIODeadline?

    init(timeouts: ConnectionDeadlines.Timeouts, logger: Logger) {
        self.timeouts = timeouts
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) { cancelTimer() }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelTimer()
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is InboundBytesEvent else { return context.fireUserInboundEventTriggered(event) }
        if case .idle = deadlines?.phase {
            deadlines?.bytesReceived(at: .now())
            updateTimer(context)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            deadlines?.headReceived(at: .now())
            updateTimer(context)
        case .end:
            deadlines?.endReceived(at: .now())
            updateTimer(context)
        case .body:
            break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            deadlines?.responseHeadWritten(status: Int(head.status.code))
            context.write(data, promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            let closes = deadlines?.responseEndWritten(at: .now()) ?? false
            updateTimer(context)
            guard closes else { return context.write(data, promise: promise) }
            let written = promise ?? context.eventLoop.makePromise()
            context.writeAndFlush(data, promise: written)
            written.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }
    }

    private func start(_ context: ChannelHandlerContext) {
        guard deadlines == nil else { return }
        deadlines = ConnectionDeadlines(timeouts: timeouts, openedAt: .now())
        updateTimer(context)
    }

    private func cancelTimer() {
        timer?.cancel()
        timer = nil
        timerDeadline = nil
    }

    /// Schedules the timer for the next deadline (or cancels it when none runs).
    private func updateTimer(_ context: ChannelHandlerContext) {
        guard let next = deadlines?.nextDeadline else { return cancelTimer() }
        guard next.at != timerDeadline else { return }
        cancelTimer()
        timerDeadline = next.at
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: next.at) {
            self.timer = nil
            self.timerDeadline = nil
            self.expire(context)
        }
    }

    private func expire(_ context: ChannelHandlerContext) {
        guard var deadlines else { return }
        let action = deadlines.expire(at: .now())
        self.deadlines = deadlines
        switch action {
        case .reschedule:
            updateTimer(context)
        case .close:
            logger.debug("closing an HTTP connection: a timeout expired", metadata: ["http.phase": "\(deadlines.phase)"])
            context.close(promise: nil)
        case .failRequest:
            logger.debug("failing an HTTP request: its body outlasted the request timeout")
            context.fireErrorCaught(RequestTimeoutError(timeout: timeouts.request))
        }
    }
}

/// Hummingbird's HTTP/1 channel with ``ConnectionTimeoutHandler`` (after the HTTP decoder) and
/// ``InboundBytesMarker`` (first) added to every connection's pipeline.
struct TimedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    /// The plain HTTP/1 channel.
    let base: HTTP1Channel
    /// The connection timeouts.
    let timeouts: ConnectionDeadlines.Timeouts

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let timeouts = timeouts
        return base.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let pipeline = channel.pipeline.syncOperations
            let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try pipeline.addHandler(ConnectionTimeoutHandler(timeouts: timeouts, logger: logger), position: .after(decoder))
            try pipeline.addHandler(InboundBytesMarker(), position: .first)
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
