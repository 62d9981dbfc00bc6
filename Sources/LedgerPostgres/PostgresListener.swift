import Foundation
import Logging
import Synchronization

/// A dedicated session that `LISTEN`s to channels and delivers notifications as an async sequence.
///
/// It runs on a thread of its own, waiting on the socket with `poll`, so no task or cooperative
/// thread is held while it waits. When the session breaks (server restart, terminated backend) it
/// reconnects at once and then with back-off (``ReconnectBackoff/standard``: 100 ms doubling to
/// 5 s, with jitter) until the server is back, `LISTEN`s again, and yields
/// ``Event/connected(reconnected:)`` with `reconnected: true`: notifications sent while it was
/// away are lost, so a consumer treats that event as "catch up from your checkpoint". The break
/// is logged once at `warning`, the reconnection at `notice` (``ConnectionLossRetry``, loop
/// `listener`). Notifications are wake-up calls, not data: when the consumer is slow, the oldest
/// are dropped (it will read the log anyway).
public final class PostgresListener: Sendable {
    /// What the listener reports.
    public enum Event: Sendable, Hashable {
        /// The session is listening. `reconnected` is true after a break: catch up now.
        case connected(reconnected: Bool)
        /// A notification arrived.
        case notification(PostgresNotification)
    }

    /// The events, for one consumer. Ending the iteration stops the listener.
    public let events: AsyncStream<Event>
    private let stopped = StopFlag()
    private let wakeWriter: Int32

    /// Starts listening on `channels` in the background.
    public init(conninfo: String, channels: [String], logger: Logger = Logger(label: "ledger.postgres.listener")) {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(1024))
        self.events = stream
        var descriptors: [Int32] = [0, 0]
        _ = pipe(&descriptors)
        let (wakeReader, wakeWriter) = (descriptors[0], descriptors[1])
        _ = fcntl(wakeReader, F_SETFL, O_NONBLOCK)
        self.wakeWriter = wakeWriter
        let thread = Thread { [stopped] in
            Self.loop(conninfo: conninfo, channels: channels, logger: logger, stopped: stopped,
                      wakeReader: wakeReader, continuation: continuation)
            close(wakeReader)
        }
        thread.name = "ledger.postgres.listener"
        continuation.onTermination = { [weak self] _ in self?.stop() }
        thread.start()
    }

    deinit {
        stop()
        close(wakeWriter)
    }

    /// Stops listening and ends ``events``.
    public func stop() {
        guard !stopped.value.exchange(true, ordering: .acquiringAndReleasing) else { return }
        var byte: UInt8 = 1
        _ = write(wakeWriter, &byte, 1)
    }

    private static func loop(
        conninfo: String, channels: [String], logger: Logger, stopped: StopFlag, wakeReader: Int32,
        continuation: AsyncStream<Event>.Continuation
    ) {
        var session: PostgresConnection?
        var hasConnected = false
        let outage = ConnectionLossRetry(loop: "listener", logger: logger)
        while !stopped.value.load(ordering: .acquiring) {
            if session == nil {
                do {
                    let fresh = try PostgresConnection(conninfo: conninfo, logger: logger)
                    for channel in channels { try fresh.execute("LISTEN \(identifier: channel)") }
                    session = fresh
                    outage.succeeded()
                    continuation.yield(.connected(reconnected: hasConnected))
                    hasConnected = true
                } catch {
                    let wait = outage.delay(after: error) ?? {
                        // Not a lost connection (a LISTEN refused): said every time, tried again slowly.
                        logger.warning("listener cannot listen; retrying", metadata: [
                            "db.error": "\(ConnectionLossRetry.describe(error))",
                        ])
                        return ReconnectBackoff.standard.maximum
                    }()
                    var descriptor = pollfd(fd: wakeReader, events: Int16(POLLIN), revents: 0)
                    _ = poll(&descriptor, 1, Int32(ReconnectBackoff.seconds(wait) * 1000))
                    continue
                }
            }
            guard let current = session else { continue }
            if !current.waitForInput(timeout: 1, wakeDescriptor: wakeReader) {
                // Reconnect at once (a terminated backend on a server that is up); back off only
                // if that fails.
                _ = outage.delay(after: current.connectionError(sql: nil))
                session = nil
                continue
            }
            for notification in current.drainNotifications() {
                continuation.yield(.notification(notification))
            }
            var sink = [UInt8](repeating: 0, count: 64)
            while read(wakeReader, &sink, sink.count) > 0 {}
        }
        continuation.finish()
    }
}

/// A stop flag shared between the listener and its thread.
private final class StopFlag: Sendable {
    let value = Atomic<Bool>(false)
}
