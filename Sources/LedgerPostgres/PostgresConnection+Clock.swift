import CLedgerPQ
import Foundation

/// The server's clock as this machine estimates it: one reading of it (`SELECT
/// clock_timestamp()`), taken to be made halfway through the round trip, carried forward by this
/// machine's monotonic clock.
///
/// Lets a client stamp times "in the server's clock" without asking the server each time: the
/// event store's single appends stamp `recorded_at` this way, so that the ledger keeps one clock
/// whichever machine appends. Carried forward by the monotonic clock, a step of this machine's
/// wall clock does not move it; and since a step, or a pause of the machine (which the monotonic
/// clock does not count), makes the two clocks disagree, ``PostgresConnection/serverClock()``
/// then measures again.
public struct ServerClock: Sendable, Hashable {
    /// The server's reading.
    let reading: Date
    /// When, on this machine's monotonic clock, the server is taken to have read it.
    let readAt: ContinuousClock.Instant
    /// Half the measurement's round trip: how far off the reading's moment may be.
    public let uncertainty: TimeInterval
    /// This machine's wall clock at `readAt`, to notice a step or a pause since.
    let localAtRead: Date

    /// A clock from one reading of the server's, taken at `readAt` within `uncertainty`.
    init(reading: Date, readAt: ContinuousClock.Instant, uncertainty: TimeInterval, localAtRead: Date? = nil) {
        self.reading = reading
        self.readAt = readAt
        self.uncertainty = uncertainty
        self.localAtRead = localAtRead ?? Date().addingTimeInterval(-Self.seconds(readAt.duration(to: .now)))
    }

    /// Whether this machine's wall clock and monotonic clock disagree about the time since the
    /// reading by more than `tolerance`: the wall clock was stepped, or the machine paused.
    /// `age`, when the caller has just read it, spares reading the monotonic clock again.
    func clocksDisagree(tolerance: TimeInterval = 0.005, age: Duration? = nil) -> Bool {
        abs(Date().timeIntervalSince(localAtRead) - Self.seconds(age ?? self.age)) > tolerance
    }

    /// The server's time now, as estimated.
    public func now() -> Date { reading.addingTimeInterval(Self.seconds(readAt.duration(to: .now))) }

    /// Seconds the server's clock is ahead of this machine's wall clock (negative when behind), now.
    public var offset: TimeInterval { now().timeIntervalSinceNow }

    /// How long ago it was measured.
    var age: Duration { readAt.duration(to: .now) }

    /// The clock from the server's text (as the server prints a `timestamptz`) read between
    /// `sent` and `received`.
    static func measured(serverText: String, sent: ContinuousClock.Instant, received: ContinuousClock.Instant) -> ServerClock? {
        var text = serverText
        guard let reading = text.withUTF8({ PostgresTimestamp.parse(UnsafeRawBufferPointer($0)) }) else { return nil }
        let roundTrip = sent.duration(to: received)
        return ServerClock(reading: reading, readAt: sent.advanced(by: roundTrip / 2), uncertainty: seconds(roundTrip) / 2,
                           localAtRead: Date().addingTimeInterval(-seconds(roundTrip / 2 + received.duration(to: .now))))
    }

    static func seconds(_ duration: Duration) -> TimeInterval {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

extension PostgresConnection {
    /// How long a measured ``ServerClock`` is trusted before it is measured again: clocks that
    /// keep time (NTP) drift apart by far less than a millisecond in that time.
    public static let serverClockMaximumAge: Duration = .seconds(600)
    /// A measurement less certain than this (a slow round trip) is tried again after
    /// ``serverClockRetryAge``, and the more certain of the two kept.
    public static let serverClockWantedUncertainty: TimeInterval = 0.005
    /// See ``serverClockWantedUncertainty``.
    public static let serverClockRetryAge: Duration = .seconds(30)

    /// The server's clock as measured on this session: when it connected (in the same round trip
    /// as the session's settings), again once ``serverClockMaximumAge`` has passed, when this
    /// machine's clock was stepped or the machine paused since, and sooner while the measurement
    /// is uncertain (``serverClockWantedUncertainty``).
    ///
    /// - Throws: ``PostgresError`` when the session fails while measuring again.
    public func serverClock() throws(PostgresError) -> ServerClock {
        // Every single append asks: the clock's age is read once for both checks.
        if let clock = measuredClock, case let age = clock.age, age < Self.serverClockMaximumAge,
            !clock.clocksDisagree(age: age),
            clock.uncertainty <= Self.serverClockWantedUncertainty
                || (clockMeasuredAt.map { $0.duration(to: .now) < Self.serverClockRetryAge } ?? false)
        {
            return clock
        }
        guard let fresh = try readServerClock() else {
            throw PostgresError(code: .unexpectedResponse, message: "clock_timestamp() did not read as a timestamp")
        }
        // The more certain reading, unless it is too old or the clocks moved apart since.
        if let old = measuredClock, old.age < Self.serverClockMaximumAge, !old.clocksDisagree(),
            old.uncertainty < fresh.uncertainty
        {
            return old
        }
        measuredClock = fresh
        return fresh
    }

    /// Drops this session's reading of the server's clock, so that the next
    /// ``serverClock()`` measures it again: for when the server refused a time stamped with it
    /// (its clock was stepped since the reading).
    public func forgetServerClock() {
        measuredClock = nil
        clockMeasuredAt = nil
    }

    /// Runs `settings` (trusted SQL, may be empty) and `SELECT clock_timestamp()` in one round
    /// trip, timed by this machine's monotonic clock; the server's clock as that reading gives
    /// it, or nil when it does not read as a timestamp.
    func readServerClock(running settings: String = "") throws(PostgresError) -> ServerClock? {
        let script = settings + "SELECT clock_timestamp()::text"
        let sent = ContinuousClock.now
        clockMeasuredAt = sent
        let rows = try consume(PQexec(handle, script), sql: script)
        let received = ContinuousClock.now
        guard rows.count == 1, let text = try? rows[0].decode(String.self, at: 0) else { return nil }
        return ServerClock.measured(serverText: text, sent: sent, received: received)
    }
}
