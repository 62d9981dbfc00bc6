import Foundation

/// The server's clock as this machine estimates it: its offset from the local clock, measured
/// over one round trip (`SELECT clock_timestamp()`, taken to be read halfway through).
///
/// Lets a client stamp times "in the server's clock" without asking the server each time: the
/// event store's single appends stamp `recorded_at` this way, so that the ledger keeps one clock
/// whichever machine appends.
public struct ServerClock: Sendable, Hashable {
    /// Seconds the server's clock is ahead of this machine's (negative when behind).
    public var offset: TimeInterval
    /// Half the measurement's round trip: the server's reading lies within this of the estimate.
    public var uncertainty: TimeInterval
    /// When it was measured, on this machine's monotonic clock (for its age).
    let measuredAt: ContinuousClock.Instant

    /// The server's time now, as estimated.
    public func now() -> Date { Date().addingTimeInterval(offset) }

    /// Measures the offset from one reading of the server's clock (text as the server prints it)
    /// taken between `sent` and `received`.
    static func measured(serverText: String, sent: Date, received: Date, at instant: ContinuousClock.Instant) -> ServerClock? {
        var text = serverText
        guard let server = text.withUTF8({ PostgresTimestamp.parse(UnsafeRawBufferPointer($0)) }) else { return nil }
        let halfway = sent.addingTimeInterval(received.timeIntervalSince(sent) / 2)
        return ServerClock(offset: server.timeIntervalSince(halfway), uncertainty: received.timeIntervalSince(sent) / 2,
                           measuredAt: instant)
    }
}

extension PostgresConnection {
    /// How long a measured ``ServerClock`` is trusted before it is measured again: clocks that
    /// keep time (NTP) drift apart by far less than a millisecond in that time.
    public static let serverClockMaximumAge: Duration = .seconds(600)

    /// The server's clock as measured on this session: when it connected (in the same round trip
    /// as the session's settings), again once ``serverClockMaximumAge`` has passed.
    ///
    /// - Throws: ``PostgresError`` when the session fails while measuring again.
    public func serverClock() throws(PostgresError) -> ServerClock {
        if let clock = measuredClock, clock.measuredAt.duration(to: .now) < Self.serverClockMaximumAge { return clock }
        let sent = Date()
        let rows = try query("SELECT clock_timestamp()::text")
        let received = Date()
        guard let clock = ServerClock.measured(serverText: try rows.single().decode(String.self, at: 0), sent: sent,
                                               received: received, at: .now)
        else {
            throw PostgresError(code: .unexpectedResponse, message: "clock_timestamp() did not read as a timestamp")
        }
        measuredClock = clock
        return clock
    }
}
