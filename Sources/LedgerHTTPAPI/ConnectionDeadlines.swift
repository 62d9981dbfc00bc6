import NIOCore

/// A connection's timers as a pure state machine (no I/O): what expires when, given the
/// connection's events. ``ConnectionTimeoutHandler`` feeds it and acts on its answers.
///
/// - Between requests, the idle timeout runs from the end of the last response.
/// - From the first byte of a request (or the connection's opening, for its first request), the
///   header timeout runs until its head is read and the request timeout until its end is read.
/// - While a fully read request waits for its response, no timer runs: the server is working.
struct ConnectionDeadlines {
    /// The three timeouts.
    struct Timeouts: Sendable {
        var header: TimeAmount
        var idle: TimeAmount
        var request: TimeAmount
    }

    /// Where the connection is.
    enum Phase: Equatable {
        /// Between requests, since then.
        case idle(since: NIODeadline)
        /// A request's head is arriving; its first byte came then.
        case head(since: NIODeadline)
        /// A request's body is arriving; its first byte came then.
        case body(since: NIODeadline)
        /// The request timed out: the connection closes after the response.
        case timedOut
    }

    /// What to do when the timer fires.
    enum Action: Equatable {
        /// Nothing expired (the phase moved on): schedule the next deadline.
        case reschedule
        /// Close the connection.
        case close
        /// Fail the request being read, so that it is answered 408.
        case failRequest
    }

    let timeouts: Timeouts
    private(set) var phase: Phase
    /// Whether a response (not an informational one) has been started and not ended.
    private(set) var responseInProgress = false
    private var requestsRead = 0
    private var responsesEnded = 0

    /// A connection opened at `now`: its first request's head is due within the header timeout.
    init(timeouts: Timeouts, openedAt now: NIODeadline) {
        self.timeouts = timeouts
        self.phase = .head(since: now)
    }

    /// Whether a fully read request is waiting for its response.
    var isServing: Bool { requestsRead > responsesEnded }

    /// The next deadline and what expires then; nil while no timer runs.
    var nextDeadline: (at: NIODeadline, closes: Bool)? {
        guard !isServing else { return nil }
        switch phase {
        case .idle(let since): return (since + timeouts.idle, true)
        case .head(let since): return (since + timeouts.header, true)
        case .body(let since): return (since + timeouts.request, false)
        case .timedOut: return nil
        }
    }

    /// Bytes arrived: between requests, they start the next one.
    mutating func bytesReceived(at now: NIODeadline) {
        if case .idle = phase { phase = .head(since: now) }
    }

    /// A request's head was read.
    mutating func headReceived(at now: NIODeadline) {
        switch phase {
        case .head(let since): phase = .body(since: since)
        case .idle, .body: phase = .body(since: now)
        case .timedOut: break
        }
    }

    /// A request's end was read.
    mutating func endReceived(at now: NIODeadline) {
        requestsRead += 1
        if phase != .timedOut { phase = .idle(since: now) }
    }

    /// A response head with `status` was written.
    mutating func responseHeadWritten(status: Int) {
        if status >= 200 { responseInProgress = true }
    }

    /// A response ended. - Returns: whether the connection closes after it.
    mutating func responseEndWritten(at now: NIODeadline) -> Bool {
        let wasServing = isServing
        responsesEnded += 1
        responseInProgress = false
        switch phase {
        case .timedOut:
            return true
        case .idle, .head, .body:
            // The timers waited while the server worked: they start again now.
            if wasServing, !isServing { phase = phase.restarted(at: now) }
            return false
        }
    }

    /// The timer fired at `now`.
    mutating func expire(at now: NIODeadline) -> Action {
        guard let next = nextDeadline, next.at <= now else { return .reschedule }
        if next.closes || responseInProgress { return .close }
        phase = .timedOut
        return .failRequest
    }
}

extension ConnectionDeadlines.Phase {
    /// The same phase, timed from `now`.
    func restarted(at now: NIODeadline) -> Self {
        switch self {
        case .idle: .idle(since: now)
        case .head: .head(since: now)
        case .body: .body(since: now)
        case .timedOut: .timedOut
        }
    }
}

extension ConnectionDeadlines.Timeouts {
    /// The configuration's timeouts.
    init(_ configuration: LedgerHTTPConfiguration) {
        self.init(header: TimeAmount(configuration.headerTimeout), idle: TimeAmount(configuration.idleTimeout),
                  request: TimeAmount(configuration.requestTimeout))
    }
}
