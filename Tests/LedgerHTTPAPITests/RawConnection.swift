import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// A plain TCP connection to the server, for what an HTTP client library will not do: send half a
/// request, stall, and see when the server closes the connection.
final class RawConnection {
    private let channel: any Channel
    private let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    private var iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator

    private init(channel: any Channel, inbound: NIOAsyncChannelInboundStream<ByteBuffer>,
                 outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>) {
        self.channel = channel
        self.outbound = outbound
        self.iterator = inbound.makeAsyncIterator()
    }

    /// Connects to 127.0.0.1:`port`, runs `body`, closes the connection.
    static func with<T>(port: Int, _ body: (RawConnection) async throws -> T) async throws -> T {
        let connection = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await connection.executeThenClose { inbound, outbound in
            try await body(RawConnection(channel: connection.channel, inbound: inbound, outbound: outbound))
        }
    }

    /// Sends `text` as it is (`\r\n` line ends included by the caller).
    func send(_ text: String) async throws {
        try await outbound.write(ByteBuffer(string: text))
    }

    /// Reads one response: its head and the `Content-Length` bytes of its body.
    func readResponse() async throws -> String {
        var bytes: [UInt8] = []
        let separator = Array("\r\n\r\n".utf8)
        while true {
            if let end = bytes.firstRange(of: separator) {
                let head = String(decoding: bytes[..<end.lowerBound], as: UTF8.self)
                let length = head.split(separator: "\r\n").compactMap { line -> Int? in
                    let parts = line.split(separator: ":", maxSplits: 1)
                    guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
                    return Int(parts[1].trimmingCharacters(in: .whitespaces))
                }.first ?? 0
                if bytes.count - end.upperBound >= length { return String(decoding: bytes, as: UTF8.self) }
            }
            guard let chunk = try await iterator.next() else { return String(decoding: bytes, as: UTF8.self) }
            bytes += chunk.readableBytesView
        }
    }

    /// Waits for the server to close the connection, at most `bound`.
    /// - Returns: what the server sent meanwhile and how long after the call it closed; nil when
    ///   the connection was still open at `bound` (it is closed here then).
    func waitForServerClose(within bound: Duration) async throws -> (text: String, after: Duration)? {
        let timedOut = Flag()
        let channel = channel
        let deadline = channel.eventLoop.scheduleTask(in: TimeAmount(bound)) {
            timedOut.raise()
            channel.close(promise: nil)
        }
        let start = ContinuousClock.now
        var bytes: [UInt8] = []
        do {
            while let chunk = try await iterator.next() { bytes += chunk.readableBytesView }
        } catch {
            // A reset by the server is a close too.
        }
        let after = ContinuousClock.now - start
        deadline.cancel()
        return timedOut.isRaised ? nil : (String(decoding: bytes, as: UTF8.self), after)
    }
}

/// A flag raised once, from any thread.
final class Flag: Sendable {
    private let raised = Mutex(false)

    /// Raises the flag.
    func raise() { raised.withLock { $0 = true } }

    /// Whether it was raised.
    var isRaised: Bool { raised.withLock { $0 } }
}
