import Dispatch
import Logging
import Tracing

/// A small pool of libpq connections for async code.
///
/// libpq blocks the calling thread, and Swift's cooperative pool has only as many threads as
/// cores (two here), so blocking it would stall every task in the process. Each pooled
/// connection therefore has a serial `DispatchQueue` of its own, and every libpq call on it runs
/// there; an `await` suspends the task, not a cooperative thread. A connection is lent to one
/// task at a time and handed back afterwards, rolled back if the body left a transaction open.
///
/// Broken connections are noticed when lent out (libpq's status, and any bytes the server sent
/// while the connection was idle, such as the FATAL from `pg_terminate_backend` or the end of the
/// stream after a server restart) and replaced, so the next statement runs on a fresh session; a
/// session whose statement failed with a connection loss is dropped at once. The pool retries
/// nothing itself: while the server is away each caller gets its own `.connectionFailed` at
/// once, and the first caller after it is back gets a fresh session. The first session that
/// cannot be opened is logged at `warning`, the first opened again after it at `notice`
/// (``ConnectionLossRetry``, loop `connection pool`). Cancelling the calling task cancels the
/// running statement with `PQcancel` (the statement fails with SQLSTATE 57014).
///
/// The calling task's trace context and tracer (swift-distributed-tracing) go with the body to
/// the connection's thread, so that a span the body starts (the store's append) is a child of
/// the caller's span, as it would be on the caller's own thread.
public final class PostgresPool: Sendable {
    /// How the pool connects and how many sessions it keeps.
    public struct Configuration: Sendable {
        /// A libpq conninfo string or `postgresql://` URI.
        public var conninfo: String
        /// The most sessions open at once; callers beyond that wait in line.
        public var maxConnections: Int
        /// Settings (`name` → value) made on every session the pool opens, before it is lent,
        /// with `set_config(name, value, false)`: for the whole session, whatever the conninfo's
        /// `options` say. A session that cannot take them is not lent (the error is the caller's).
        /// Leave out `TimeZone`, `DateStyle` and `client_encoding`: ``PostgresConnection`` fixes
        /// them when it connects, and its decoding relies on them.
        public var sessionSettings: [String: String]
        public init(conninfo: String, maxConnections: Int = 4, sessionSettings: [String: String] = [:]) {
            self.conninfo = conninfo
            self.maxConnections = max(1, maxConnections)
            self.sessionSettings = sessionSettings
        }
    }

    private struct State {
        var idle: [PooledConnection] = []
        var opened = 0
        var waiters: [(id: Int, continuation: CheckedContinuation<PooledConnection, any Error>)] = []
        var nextWaiterID = 0
        var closed = false
    }

    /// The pool's configuration.
    public let configuration: Configuration
    /// The logger its sessions report to.
    public let logger: Logger
    private let state = PostgresLocked(State())
    /// Sessions that could not be opened, and the first opened again after them: logged once each.
    private let outage: ConnectionLossRetry

    /// Creates a pool; no connection is opened until one is needed.
    public init(configuration: Configuration, logger: Logger = Logger(label: "ledger.postgres")) {
        self.configuration = configuration
        self.logger = logger
        self.outage = ConnectionLossRetry(loop: "connection pool", logger: logger, backoff: nil)
    }

    /// Creates a pool for a conninfo string or URI.
    public convenience init(conninfo: String, maxConnections: Int = 4, sessionSettings: [String: String] = [:],
                            logger: Logger = Logger(label: "ledger.postgres")) {
        self.init(configuration: .init(conninfo: conninfo, maxConnections: maxConnections, sessionSettings: sessionSettings),
                  logger: logger)
    }

    /// Lends a connection to `body`, which runs on that connection's own thread, in the calling
    /// task's trace context.
    ///
    /// `body` is synchronous on purpose: a transaction cannot stay open across an `await` (and so
    /// never across an HTTP call).
    /// - Throws: what `body` throws; ``PostgresError`` with `.connectionFailed` when no session
    ///   could be opened, `.poolClosed` after ``close()``.
    public func withConnection<T: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) throws -> T
    ) async throws -> T {
        let slot = try await checkout()
        defer { checkin(slot) }
        try Task.checkCancellation()
        let trace = InstrumentationContext.current
        let tracer = InstrumentationSystem.tracer
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                slot.queue.async {
                    let result = withTracer(tracer) {
                        InstrumentationContext.$current.withValue(trace) { Result { try slot.run(body) } }
                    }
                    continuation.resume(with: result)
                }
            }
        } onCancel: {
            slot.cancelRunningStatement()
        }
    }

    /// Runs `body` in a transaction on a pooled connection (see ``PostgresConnection/transaction(isolation:_:)``).
    public func withTransaction<T: Sendable>(
        isolation: PostgresConnection.IsolationLevel = .readCommitted,
        _ body: @escaping @Sendable (PostgresConnection) throws -> T
    ) async throws -> T {
        try await withConnection { connection in try connection.transaction(isolation: isolation, body) }
    }

    /// Runs one statement on a pooled connection.
    @discardableResult
    public func query(_ query: PostgresQuery, prepare: Bool = false) async throws -> PostgresRows {
        try await withConnection { connection in try connection.query(query, prepare: prepare) }
    }

    /// Closes idle sessions and refuses new work; callers waiting for a connection get `.poolClosed`.
    /// Sessions in use close when they are handed back.
    public func close() {
        let (idle, waiters) = state.withLock { state in
            state.closed = true
            defer {
                state.idle.removeAll()
                state.waiters.removeAll()
            }
            return (state.idle, state.waiters)
        }
        for waiter in waiters { waiter.continuation.resume(throwing: Self.closedError) }
        for slot in idle { slot.queue.async { slot.connection = nil } }
    }

    /// Sessions open now (idle or lent).
    public var openConnections: Int { state.withLock { $0.opened } }

    private static let closedError = PostgresError(code: .poolClosed, message: "the connection pool is closed")

    private func checkout() async throws -> PooledConnection {
        enum Next { case ready(PooledConnection), wait(Int), closed }
        let next: Next = state.withLock { state in
            if state.closed { return .closed }
            if let slot = state.idle.popLast() { return .ready(slot) }
            if state.opened < configuration.maxConnections {
                state.opened += 1
                return .ready(PooledConnection(conninfo: configuration.conninfo, settings: configuration.sessionSettings,
                                               logger: logger, outage: outage,
                                               label: "ledger.postgres.\(state.opened)"))
            }
            state.nextWaiterID += 1
            return .wait(state.nextWaiterID)
        }
        switch next {
        case .ready(let slot): return slot
        case .closed: throw Self.closedError
        case .wait(let id):
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    let refusal: (any Error)? = state.withLock { state in
                        if state.closed { return Self.closedError }
                        if Task.isCancelled { return CancellationError() }
                        state.waiters.append((id, continuation))
                        return nil
                    }
                    if let refusal { continuation.resume(throwing: refusal) }
                }
            } onCancel: {
                let waiter = state.withLock { state in
                    state.waiters.firstIndex { $0.id == id }.map { state.waiters.remove(at: $0) }
                }
                waiter?.continuation.resume(throwing: CancellationError())
            }
        }
    }

    private func checkin(_ slot: PooledConnection) {
        let waiter: CheckedContinuation<PooledConnection, any Error>? = state.withLock { state in
            if !state.waiters.isEmpty { return state.waiters.removeFirst().continuation }
            if state.closed {
                state.opened -= 1
                slot.queue.async { slot.connection = nil }
            } else {
                state.idle.append(slot)
            }
            return nil
        }
        waiter?.resume(returning: slot)
    }
}

/// A pool slot: a serial queue and the session used only on it.
private final class PooledConnection: @unchecked Sendable {
    // `@unchecked`: `connection` is touched only on `queue`; `cancelHandle` is behind a mutex.
    let queue: DispatchQueue
    let conninfo: String
    let settings: [String: String]
    let logger: Logger
    let outage: ConnectionLossRetry
    var connection: PostgresConnection?
    private let cancelHandle = PostgresLocked<PostgresCancelHandle?>(nil)

    init(conninfo: String, settings: [String: String], logger: Logger, outage: ConnectionLossRetry, label: String) {
        self.queue = DispatchQueue(label: label)
        self.conninfo = conninfo
        self.settings = settings
        self.logger = logger
        self.outage = outage
    }

    /// On `queue`: makes sure the session is usable (replacing a broken one), runs `body`, and
    /// leaves the session idle (or drops it if it broke, or `body` failed with a connection loss).
    func run<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        dispatchPrecondition(condition: .onQueue(queue))
        let session: PostgresConnection
        if let current = connection, current.checkUsable() {
            session = current
        } else {
            if connection != nil {
                logger.notice("replacing a broken PostgreSQL connection", metadata: ["db.event": "reconnect"])
            }
            connection = nil
            do {
                session = try PostgresPool.openSession(conninfo: conninfo, settings: settings, logger: logger)
            } catch {
                _ = outage.delay(after: error)
                throw error
            }
            outage.succeeded()
            connection = session
            let handle = session.makeCancelHandle()
            cancelHandle.withLock { $0 = handle }
        }
        var lostConnection = false
        defer {
            if session.isBroken || lostConnection {
                connection = nil
            } else if session.isInTransaction {
                session.rollbackQuietly()
            }
        }
        do {
            return try body(session)
        } catch {
            // A FATAL from a server going away can come back as the statement's result before
            // libpq has read the end of the stream: the session is dropped all the same.
            lostConnection = ConnectionLossRetry.isConnectionLoss(error)
            throw error
        }
    }

    func cancelRunningStatement() {
        let handle = cancelHandle.withLock { $0 }
        handle?.cancelRunningStatement()
    }
}

extension PostgresPool {
    /// Opens a session as the pool's own are opened (its conninfo, its
    /// ``Configuration/sessionSettings``, its logger), but outside the pool and its limit: for
    /// work that needs a thread and a session of its own for a while (a rebuild's read-ahead and
    /// its second writer). The caller owns the session; it closes when released.
    /// - Throws: ``PostgresError`` when the session cannot be opened or refuses a setting.
    public func openSession() throws -> PostgresConnection {
        try Self.openSession(conninfo: configuration.conninfo, settings: configuration.sessionSettings, logger: logger)
    }

    static func openSession(conninfo: String, settings: [String: String], logger: Logger) throws -> PostgresConnection {
        let session = try PostgresConnection(conninfo: conninfo, logger: logger)
        for (name, value) in settings.sorted(by: { $0.key < $1.key }) {
            try session.execute("SELECT set_config(\(name), \(value), false)")
        }
        return session
    }
}
