import CLedgerPQ
import Foundation
import Logging
import Synchronization

/// One libpq connection, used synchronously by one thread at a time.
///
/// Every call blocks until the server answers, so this type is deliberately not `Sendable`:
/// async code reaches it through ``PostgresPool``, which runs each connection's calls on a
/// thread of its own, off Swift's cooperative pool. Use it directly only from a thread you own
/// (the CLI's main thread, a benchmark's loop).
///
/// Sessions are set to `TimeZone=UTC`, `DateStyle=ISO`, `client_encoding=UTF8`, so text results
/// decode the same way everywhere.
public final class PostgresConnection {
    let handle: OpaquePointer
    private let noticeSink: NoticeSink
    /// SQL text → the statement prepared for it on this session.
    private var prepared: [String: PreparedStatement] = [:]
    /// True inside ``transaction(isolation:_:)``'s body: the wrapper will send the COMMIT.
    private var inManagedTransaction = false
    /// What ``afterCommit(_:)`` registered for the open transaction, in order.
    private var commitActions: [() -> Void] = []
    /// The logger this connection reports server notices to.
    public let logger: Logger
    /// This session's place among the sessions the process has opened: 1 for the first, and
    /// so on (``sessionsOpened`` was this number just after it connected).
    ///
    /// A session that is still open now was open at every moment since it connected, and a
    /// server that restarts (a crash, a restore) ends every session: so a session numbered at
    /// most ``sessionsOpened`` as read at some moment, and still working, has been talking to the
    /// same server since that moment. The event store's stream-head hints rely on it. A standby
    /// promoted to primary keeps its sessions, so a session opened on a server in recovery takes
    /// `UInt64.max` (it never counts as older than anything).
    public let sessionNumber: UInt64

    /// How many sessions this process has opened so far (every ``PostgresConnection`` that
    /// connected, closed ones included).
    public static var sessionsOpened: UInt64 { openedSessions.load(ordering: .sequentiallyConsistent) }
    private static let openedSessions = Atomic<UInt64>(0)

    /// Connects with a libpq conninfo string (`host=/tmp dbname=ledger`) or a
    /// `postgresql://user@host/db` URI.
    ///
    /// A `connect_timeout` of 10 seconds applies unless the string sets its own.
    /// - Throws: ``PostgresError`` with code `.connectionFailed` and libpq's reason (server
    ///   unreachable, authentication failed, database missing).
    public init(conninfo: String, logger: Logger = Logger(label: "ledger.postgres")) throws(PostgresError) {
        // Later keywords override earlier ones, and the expanded conninfo comes last, so the
        // caller's settings win over these defaults.
        let keywords = ["connect_timeout", "fallback_application_name", "dbname"]
        let values = ["10", "attribution-ledger", conninfo]
        let connection: OpaquePointer? = withCStrings(keywords) { keys in
            withCStrings(values) { vals in PQconnectdbParams(keys, vals, 1) }
        }
        guard let connection else {
            throw PostgresError(code: .connectionFailed, message: "libpq could not allocate a connection")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let reason = Self.cleanMessage(PQerrorMessage(connection))
            PQfinish(connection)
            throw PostgresError(code: .connectionFailed, message: reason)
        }
        self.handle = connection
        self.logger = logger
        self.noticeSink = NoticeSink(logger: logger)
        // A standby's sessions outlive its promotion, so one opened there never counts as older
        // than anything (PostgreSQL reports `in_hot_standby` at connection since version 14).
        let standby = PQparameterStatus(connection, "in_hot_standby").map { String(cString: $0) } == "on"
        let number = Self.openedSessions.add(1, ordering: .sequentiallyConsistent).newValue
        self.sessionNumber = standby ? .max : number
        _ = PQsetNoticeReceiver(connection, ledgerNoticeReceiver, Unmanaged.passUnretained(noticeSink).toOpaque())
        do {
            try run(script: "SET TimeZone = 'UTC'; SET DateStyle = 'ISO, YMD'; SET client_encoding = 'UTF8'")
        } catch {
            throw PostgresError(code: .connectionFailed, message: "session setup failed: \(error.message)",
                                sqlState: error.sqlState)
        }
    }

    deinit { PQfinish(handle) }

    /// The server process serving this session (for `pg_terminate_backend`, `pg_cancel_backend`).
    public var backendPID: Int32 { PQbackendPID(handle) }

    /// The server's version number, e.g. 150018 for 15.18.
    public var serverVersion: Int32 { PQserverVersion(handle) }

    /// True while the session is inside a transaction block (or an aborted one).
    public var isInTransaction: Bool { PQtransactionStatus(handle) != PQTRANS_IDLE }

    /// True when libpq knows the connection is gone.
    public var isBroken: Bool { PQstatus(handle) != CONNECTION_OK }

    // MARK: Statements

    /// Runs one statement with bound parameters and returns its rows.
    ///
    /// - Parameter prepare: prepare the statement once per session and reuse it
    ///   (`PQprepare` / `PQexecPrepared`); worth it for statements run many times.
    /// - Throws: ``PostgresError``: `.server` with the SQLSTATE and diagnostic fields, or
    ///   `.connectionClosed` when the session broke.
    @discardableResult
    public func query(_ query: PostgresQuery, prepare: Bool = false) throws(PostgresError) -> PostgresRows {
        if prepare {
            let statement = try preparedStatement(for: query)
            return try withParameters(query.binds) { count, _, values, lengths, formats throws(PostgresError) in
                try consume(PQexecPrepared(handle, statement.name, count, values, lengths, formats, 0), sql: query.sql,
                            statement: statement)
            }
        }
        return try withParameters(query.binds) { count, types, values, lengths, formats throws(PostgresError) in
            try consume(PQexecParams(handle, query.sql, count, types, values, lengths, formats, 0), sql: query.sql)
        }
    }

    /// Runs one statement and returns the number of rows it affected.
    @discardableResult
    public func execute(_ query: PostgresQuery, prepare: Bool = false) throws(PostgresError) -> Int {
        try self.query(query, prepare: prepare).affectedRows
    }

    /// Runs trusted SQL text that may hold several statements and no parameters (a migration file).
    /// Uses the simple query protocol; never pass input through here.
    public func run(script: String) throws(PostgresError) {
        _ = try consume(PQexec(handle, script), sql: script)
    }

    private func preparedStatement(for query: PostgresQuery) throws(PostgresError) -> PreparedStatement {
        if let statement = prepared[query.sql] { return statement }
        let statement = PreparedStatement(name: "ledger_s\(prepared.count + 1)")
        let types = query.binds.map { Oid($0.typeOID) }
        _ = try consume(PQprepare(handle, statement.name, query.sql, Int32(types.count), types), sql: query.sql)
        prepared[query.sql] = statement
        return statement
    }

    /// A statement prepared on this session: its name, and the columns of its last result. The
    /// next result reuses them when its columns have the same names and types, which is checked
    /// without copying anything out: PostgreSQL keeps a planned statement's result in one shape
    /// (`cached plan must not change result type`), though a prepared utility statement such as
    /// `FETCH` may change it.
    private final class PreparedStatement {
        let name: String
        var columns: [PostgresRows.Column]?

        init(name: String) {
            self.name = name
        }
    }

    // MARK: Transactions

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    ///
    /// Called inside a transaction already (this wrapper's or a plain `BEGIN`), it runs `body` in
    /// a savepoint of it (``savepoint(_:)``): a throw undoes the body's own work only, and the
    /// outer transaction still decides what commits, and when. Keep the body short and free of
    /// network calls: a transaction holds locks until it ends.
    ///
    /// - Throws: `isolation` other than read committed inside a transaction (only the outermost
    ///   one chooses it).
    @discardableResult
    public func transaction<T>(
        isolation: IsolationLevel = .readCommitted, _ body: (PostgresConnection) throws -> T
    ) throws -> T {
        // A second BEGIN would only be warned about, and the inner COMMIT or ROLLBACK would end
        // the outer transaction early, its after-commit actions with it.
        if isInTransaction {
            guard isolation == .readCommitted else {
                throw PostgresError(code: .invalidUse, message: "a transaction inside another cannot choose its isolation level",
                                    sqlState: "25001")
            }
            return try savepoint(body)
        }
        try run(script: isolation == .readCommitted ? "BEGIN" : "BEGIN ISOLATION LEVEL \(isolation.rawValue)")
        inManagedTransaction = true
        commitActions = []
        defer { (inManagedTransaction, commitActions) = (false, []) }
        let result: T
        do {
            result = try body(self)
        } catch {
            rollbackQuietly()
            throw error
        }
        // A statement failed and the body went on (a swallowed error): PostgreSQL would answer
        // COMMIT by rolling back. Say so instead of returning as if the work were stored.
        if PQtransactionStatus(handle) == PQTRANS_INERROR {
            rollbackQuietly()
            throw PostgresError(code: .server, message: "the transaction failed earlier and was rolled back, not committed",
                                sqlState: "25P02")
        }
        do {
            try run(script: "COMMIT")
        } catch {
            rollbackQuietly()
            throw error
        }
        let actions = commitActions
        commitActions = []
        for action in actions { action() }
        return result
    }

    /// Runs `action` once the transaction ``transaction(isolation:_:)`` opened has committed —
    /// never if it rolls back, nor if the savepoint it was registered in rolls back — and returns
    /// true. Returns false, registering nothing, when no such transaction is open (none at all,
    /// or one begun with a plain `BEGIN`): the caller then acts at once or inside the transaction.
    ///
    /// For work that must not run inside the transaction: a `NOTIFY` there makes the commit take
    /// PostgreSQL's cluster-wide notification lock and hold it through the commit's flush, which
    /// serialises the commits of every session that notifies.
    @discardableResult
    public func afterCommit(_ action: @escaping () -> Void) -> Bool {
        guard inManagedTransaction, isInTransaction else { return false }
        commitActions.append(action)
        return true
    }

    /// Runs `body` inside a savepoint of the current transaction; a throw rolls back to the
    /// savepoint only, and the transaction goes on.
    @discardableResult
    public func savepoint<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try run(script: "SAVEPOINT ledger_savepoint")
        let registered = commitActions.count
        do {
            let result = try body(self)
            try run(script: "RELEASE SAVEPOINT ledger_savepoint")
            return result
        } catch {
            try? run(script: "ROLLBACK TO SAVEPOINT ledger_savepoint; RELEASE SAVEPOINT ledger_savepoint")
            if commitActions.count > registered { commitActions.removeSubrange(registered...) }
            throw error
        }
    }

    /// Ends whatever transaction is open, ignoring errors (the session may already be gone).
    func rollbackQuietly() {
        guard !isBroken, isInTransaction else { return }
        if let result = PQexec(handle, "ROLLBACK") { PQclear(result) }
    }

    /// Transaction isolation levels.
    public enum IsolationLevel: String, Sendable {
        case readCommitted = "READ COMMITTED"
        case repeatableRead = "REPEATABLE READ"
        case serializable = "SERIALIZABLE"
    }

    // MARK: Health and cancellation

    /// Checks, without a round trip, that the connection can take a statement: libpq's status is
    /// OK, and any bytes the server sent while idle (a FATAL from `pg_terminate_backend`, EOF
    /// after a restart) are read now rather than surfacing as the next statement's failure.
    public func checkUsable() -> Bool {
        guard PQstatus(handle) == CONNECTION_OK, PQtransactionStatus(handle) == PQTRANS_IDLE else { return false }
        // A terminated backend sends a FATAL message and then closes the socket: keep reading
        // while there is something to read, so that libpq also sees the end of the stream.
        for _ in 0..<8 {
            var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 0)
            if ready < 0 { return false }
            if ready == 0 { break }
            if PQconsumeInput(handle) == 0 { return false }
            _ = drainNotifications()
            if PQstatus(handle) != CONNECTION_OK { return false }
        }
        // The FATAL may have arrived before the server closed the socket (a terminated backend
        // leaves pg_stat_activity first): libpq passes an idle-time FATAL to the notice receiver.
        return PQstatus(handle) == CONNECTION_OK && !noticeSink.receivedFatal
    }

    /// A handle that cancels this connection's running statement from any thread.
    public func makeCancelHandle() -> PostgresCancelHandle? {
        PQgetCancel(handle).map(PostgresCancelHandle.init)
    }

    // MARK: LISTEN / NOTIFY on this session

    /// Sends `NOTIFY channel, payload` (as `pg_notify`, so both are bound parameters).
    public func notify(channel: String, payload: String = "") throws(PostgresError) {
        try execute("SELECT pg_notify(\(channel), \(payload))")
    }

    /// Reads notifications that have arrived for channels this session listens to.
    /// For a long-lived listener use ``PostgresListener``.
    public func drainNotifications() -> [PostgresNotification] {
        var notifications: [PostgresNotification] = []
        while let pointer = PQnotifies(handle) {
            let note = pointer.pointee
            notifications.append(
                PostgresNotification(channel: String(cString: note.relname), payload: String(cString: note.extra),
                                     backendPID: note.be_pid))
            PQfreemem(pointer)
        }
        return notifications
    }

    /// Waits up to `timeout` seconds for the socket to be readable, then reads what arrived.
    /// Returns false when the connection broke.
    func waitForInput(timeout: Double, wakeDescriptor: Int32? = nil) -> Bool {
        var descriptors = [pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)]
        if let wakeDescriptor { descriptors.append(pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0)) }
        let ready = poll(&descriptors, nfds_t(descriptors.count), Int32(timeout * 1000))
        if ready > 0, descriptors[0].revents != 0 {
            if PQconsumeInput(handle) == 0 { return false }
        }
        return PQstatus(handle) == CONNECTION_OK
    }

    // MARK: Results

    /// Turns a libpq result into rows or an error, clearing it exactly once.
    func consume(_ result: OpaquePointer?, sql: String) throws(PostgresError) -> PostgresRows {
        try consume(result, sql: sql, statement: nil)
    }

    /// ``consume(_:sql:)`` for a result of `statement`, reusing its columns while they stay the same.
    private func consume(_ result: OpaquePointer?, sql: String, statement: PreparedStatement?) throws(PostgresError)
        -> PostgresRows
    {
        guard let result else {
            throw connectionError(sql: sql)
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        switch status {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            let rows = Self.materialize(result, knownColumns: statement?.columns)
            statement?.columns = rows.columns  // the same array when reused
            return rows
        case PGRES_FATAL_ERROR, PGRES_BAD_RESPONSE, PGRES_NONFATAL_ERROR:
            throw errorFromResult(result, sql: sql)
        default:
            throw PostgresError(code: .unexpectedResponse,
                                message: "unexpected result status \(String(cString: PQresStatus(status)))", query: sql)
        }
    }

    func connectionError(sql: String?) -> PostgresError {
        PostgresError(code: isBroken ? .connectionClosed : .unexpectedResponse,
                      message: Self.cleanMessage(PQerrorMessage(handle)), query: sql)
    }

    func errorFromResult(_ result: OpaquePointer, sql: String?) -> PostgresError {
        func field(_ code: Int32) -> String? {
            PQresultErrorField(result, code).map { String(cString: $0) }
        }
        let sqlState = field(Int32(CLEDGERPQ_DIAG_SQLSTATE))
        let message = field(Int32(CLEDGERPQ_DIAG_MESSAGE_PRIMARY))
            ?? Self.cleanMessage(PQresultErrorMessage(result))
        let code: PostgresError.Code = sqlState == nil || isBroken ? .connectionClosed : .server
        let primary: String = message.isEmpty ? Self.cleanMessage(PQerrorMessage(handle)) : message
        return PostgresError(
            code: code,
            message: primary,
            sqlState: sqlState,
            severity: field(Int32(CLEDGERPQ_DIAG_SEVERITY)),
            detail: field(Int32(CLEDGERPQ_DIAG_MESSAGE_DETAIL)),
            hint: field(Int32(CLEDGERPQ_DIAG_MESSAGE_HINT)),
            schemaName: field(Int32(CLEDGERPQ_DIAG_SCHEMA_NAME)),
            tableName: field(Int32(CLEDGERPQ_DIAG_TABLE_NAME)),
            columnName: field(Int32(CLEDGERPQ_DIAG_COLUMN_NAME)),
            constraintName: field(Int32(CLEDGERPQ_DIAG_CONSTRAINT_NAME)),
            query: sql)
    }

    /// Copies `result` out; `knownColumns`, when given, are the columns of an earlier result of
    /// the same prepared statement, used if `result` has the same.
    static func materialize(_ result: OpaquePointer, knownColumns: [PostgresRows.Column]? = nil) -> PostgresRows {
        let rowCount = Int(PQntuples(result))
        let columnCount = Int(PQnfields(result))
        var columns: [PostgresRows.Column]
        if let knownColumns, hasColumns(result, knownColumns) {
            columns = knownColumns
        } else {
            columns = []
            columns.reserveCapacity(columnCount)
            for column in 0..<columnCount {
                columns.append(.init(name: String(cString: PQfname(result, Int32(column))),
                                     typeOID: UInt32(PQftype(result, Int32(column)))))
            }
        }
        var starts = [Int](repeating: 0, count: rowCount * columnCount)
        var lengths = [Int32](repeating: -1, count: rowCount * columnCount)
        var total = 0
        for row in 0..<rowCount {
            for column in 0..<columnCount where PQgetisnull(result, Int32(row), Int32(column)) == 0 {
                let length = PQgetlength(result, Int32(row), Int32(column))
                starts[row * columnCount + column] = total
                lengths[row * columnCount + column] = length
                total += Int(length)
            }
        }
        // An empty result must not go through `unsafeUninitializedCapacity`: with capacity 0 it
        // writes the count into the stdlib's shared empty-array storage, which ThreadSanitizer
        // rightly reports as a race between threads.
        let storage = total == 0 ? [] : [UInt8](unsafeUninitializedCapacity: total) { buffer, initialized in
            for row in 0..<rowCount {
                for column in 0..<columnCount {
                    let slot = row * columnCount + column
                    let length = Int(lengths[slot])
                    guard length > 0, let value = PQgetvalue(result, Int32(row), Int32(column)) else { continue }
                    UnsafeMutableRawBufferPointer(buffer).baseAddress!.advanced(by: starts[slot])
                        .copyMemory(from: value, byteCount: length)
                }
            }
            initialized = total
        }
        let tuples = String(cString: PQcmdTuples(result))
        return PostgresRows(columns: columns, rowCount: rowCount, commandTag: String(cString: PQcmdStatus(result)),
                            affectedRows: Int(tuples) ?? rowCount, storage: storage, starts: starts,
                            lengths: lengths)
    }

    /// Whether `result`'s columns are `columns`: the same names and type OIDs, in order.
    static func hasColumns(_ result: OpaquePointer, _ columns: [PostgresRows.Column]) -> Bool {
        guard Int(PQnfields(result)) == columns.count else { return false }
        for (position, column) in columns.enumerated() {
            guard UInt32(PQftype(result, Int32(position))) == column.typeOID, let name = PQfname(result, Int32(position)),
                  column.name.utf8.elementsEqual(UnsafeBufferPointer(start: name, count: strlen(name)).lazy.map { UInt8(bitPattern: $0) })
            else { return false }
        }
        return true
    }

    static func cleanMessage(_ pointer: UnsafePointer<CChar>?) -> String {
        guard let pointer else { return "unknown libpq error" }
        let text = String(cString: pointer).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? "unknown libpq error" : text.replacingOccurrences(of: "\n\t", with: " ").replacingOccurrences(of: "\n", with: "; ")
    }
}

/// A notification delivered by `NOTIFY` / `pg_notify`.
public struct PostgresNotification: Sendable, Hashable {
    /// The channel it was sent on.
    public var channel: String
    /// The payload text (empty when none was given).
    public var payload: String
    /// The server process that sent it.
    public var backendPID: Int32
}

/// Cancels the statement running on a connection, from any thread (libpq's `PQcancel` is the one
/// thread-safe call). The connection stays usable; the statement fails with SQLSTATE 57014.
public final class PostgresCancelHandle: Sendable {
    private nonisolated(unsafe) let cancel: OpaquePointer

    init(_ cancel: OpaquePointer) { self.cancel = cancel }
    deinit { PQfreeCancel(cancel) }

    /// Asks the server to cancel the running statement. Returns false if the request could not be sent.
    @discardableResult
    public func cancelRunningStatement() -> Bool {
        var buffer = [CChar](repeating: 0, count: 256)
        return PQcancel(cancel, &buffer, 256) == 1
    }
}

/// Routes the server's NOTICE and WARNING messages to swift-log instead of stderr, and remembers
/// a FATAL that arrived while the session was idle (the session is then doomed).
private final class NoticeSink {
    let logger: Logger
    /// Touched only on the connection's thread (libpq calls the receiver while parsing input).
    var receivedFatal = false
    init(logger: Logger) { self.logger = logger }
}

private func ledgerNoticeReceiver(_ context: UnsafeMutableRawPointer?, _ result: OpaquePointer?) {
    guard let context, let result else { return }
    let sink = Unmanaged<NoticeSink>.fromOpaque(context).takeUnretainedValue()
    let severity = PQresultErrorField(result, Int32(CLEDGERPQ_DIAG_SEVERITY)).map { String(cString: $0) } ?? "NOTICE"
    let text = PostgresConnection.cleanMessage(PQresultErrorMessage(result))
    switch severity {
    case "FATAL", "PANIC":
        sink.receivedFatal = true
        sink.logger.notice("\(text)", metadata: ["db.notice": "\(severity.lowercased())"])
    case "WARNING":
        sink.logger.warning("\(text)", metadata: ["db.notice": "warning"])
    default:
        sink.logger.debug("\(text)", metadata: ["db.notice": "\(severity.lowercased())"])
    }
}

/// Calls `body` with a NULL-terminated array of C strings that live for the call.
func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    let duplicates = strings.map { strdup($0) }
    defer { duplicates.forEach { free($0) } }
    let pointers = duplicates.map { UnsafePointer($0) } + [nil]
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}

/// Lays out bound parameters for libpq: one buffer for all values (each NUL-terminated), with
/// pointer, length and format arrays that stay valid for the duration of `body`.
func withParameters<R>(
    _ binds: [PostgresValue],
    _ body: (Int32, UnsafePointer<Oid>?, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?,
             UnsafePointer<Int32>?) throws(PostgresError) -> R
) throws(PostgresError) -> R {
    var types: [Oid] = []
    var lengths: [Int32] = []
    var formats: [Int32] = []
    var offsets: [Int?] = []
    var buffer: [UInt8] = [0]
    types.reserveCapacity(binds.count)
    for bind in binds {
        types.append(Oid(bind.typeOID))
        formats.append(bind.isBinary ? 1 : 0)
        if let bytes = try bind.wireBytes() {
            offsets.append(buffer.count)
            buffer.append(contentsOf: bytes)
            buffer.append(0)
            lengths.append(Int32(bytes.count))
        } else {
            offsets.append(nil)
            lengths.append(0)
        }
    }
    return try buffer.withUnsafeBufferPointer { (storage) throws(PostgresError) -> R in
        let base = UnsafeRawPointer(storage.baseAddress!).assumingMemoryBound(to: CChar.self)
        let values: [UnsafePointer<CChar>?] = offsets.map { $0.map { base + $0 } }
        return try values.withUnsafeBufferPointer { (valuePointers) throws(PostgresError) -> R in
            try types.withUnsafeBufferPointer { (typePointers) throws(PostgresError) -> R in
                try lengths.withUnsafeBufferPointer { (lengthPointers) throws(PostgresError) -> R in
                    try formats.withUnsafeBufferPointer { (formatPointers) throws(PostgresError) -> R in
                        try body(Int32(binds.count), typePointers.baseAddress, valuePointers.baseAddress,
                                 lengthPointers.baseAddress, formatPointers.baseAddress)
                    }
                }
            }
        }
    }
}
