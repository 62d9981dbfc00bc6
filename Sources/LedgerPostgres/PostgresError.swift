/// An error from PostgreSQL or from the wrapper around libpq.
///
/// Shaped like postgres-nio's `PSQLError`: an opaque ``Code`` that can grow without breaking
/// callers, plus the server's diagnostic fields when the server sent them. ``description`` holds
/// no row data (the server's `DETAIL` may quote key values, so it only appears in
/// ``debugDescription``); ``shortDescription`` is bounded and usable as a metric label.
public struct PostgresError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// What kind of failure this is. Compare with the static members (`error.code == .server`).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// The server could not be reached, refused the credentials, or the session could not be set up.
        public static let connectionFailed = Code("connection_failed")
        /// The connection broke while in use (the backend was terminated, the server restarted,
        /// the network dropped). The statement's outcome is unknown unless it was a read.
        public static let connectionClosed = Code("connection_closed")
        /// The server refused the statement; ``PostgresError/sqlState`` says why.
        public static let server = Code("server")
        /// A column could not be decoded into the Swift type asked for.
        public static let decoding = Code("decoding")
        /// A value could not be encoded as a parameter (for example a string with a NUL byte).
        public static let encoding = Code("encoding")
        /// A `COPY` could not be completed.
        public static let copyFailed = Code("copy_failed")
        /// The pool was closed while the caller waited for, or asked for, a connection.
        public static let poolClosed = Code("pool_closed")
        /// The statement was cancelled because the calling task was cancelled.
        public static let cancelled = Code("cancelled")
        /// libpq answered in a way the wrapper does not expect.
        public static let unexpectedResponse = Code("unexpected_response")
        /// The wrapper was asked for something it cannot do (a transaction nested in another
        /// choosing its own isolation level); nothing was sent.
        public static let invalidUse = Code("invalid_use")

        public var description: String { name }
    }

    /// What kind of failure this is.
    public var code: Code
    /// The five-character SQLSTATE the server sent (`23505` for a unique violation), if any.
    public var sqlState: String?
    /// The severity (`ERROR`, `FATAL`, `PANIC`), untranslated.
    public var severity: String?
    /// The primary message: the server's, or the wrapper's own.
    public var message: String
    /// The server's `DETAIL`, which can quote row values.
    public var detail: String?
    /// The server's `HINT`.
    public var hint: String?
    /// The schema, table, column and constraint the error is about, when the server names them.
    public var schemaName: String?
    public var tableName: String?
    public var columnName: String?
    public var constraintName: String?
    /// The SQL text of the statement that failed, if any (never its parameter values).
    public var query: String?

    /// Creates an error; the wrapper and the layers above it use this.
    public init(
        code: Code, message: String, sqlState: String? = nil, severity: String? = nil,
        detail: String? = nil, hint: String? = nil, schemaName: String? = nil, tableName: String? = nil,
        columnName: String? = nil, constraintName: String? = nil, query: String? = nil
    ) {
        (self.code, self.message, self.sqlState, self.severity, self.detail, self.hint) = (code, message, sqlState, severity, detail, hint)
        (self.schemaName, self.tableName, self.columnName, self.constraintName, self.query) =
            (schemaName, tableName, columnName, constraintName, query)
    }

    /// One line for a person: the code, the SQLSTATE, the message and the objects it names.
    public var description: String {
        var text = "PostgreSQL \(code)"
        if let sqlState { text += " \(sqlState)" }
        text += ": \(message)"
        var names: [String] = []
        if let tableName { names.append("table \(tableName)") }
        if let columnName { names.append("column \(columnName)") }
        if let constraintName { names.append("constraint \(constraintName)") }
        if !names.isEmpty { text += " (" + names.joined(separator: ", ") + ")" }
        return text
    }

    /// Everything, including the server's `DETAIL` and `HINT` and the statement text.
    public var debugDescription: String {
        var text = description
        if let detail { text += "\nDETAIL: \(detail)" }
        if let hint { text += "\nHINT: \(hint)" }
        if let query { text += "\nQUERY: \(query)" }
        return text
    }

    /// A bounded label: the code and the SQLSTATE (`server.23505`).
    public var shortDescription: String { sqlState.map { "\(code).\($0)" } ?? "\(code)" }

    /// True when the connection this error came from can no longer be used, or none could be
    /// opened: the codes `.connectionClosed` and `.connectionFailed`, SQLSTATE class 08, and the
    /// server shutting down (57P01), crashing (57P02) or not accepting sessions yet (57P03).
    public var isConnectionBroken: Bool {
        code == .connectionClosed || code == .connectionFailed
            || sqlState.map { $0.hasPrefix("08") || SQLState.serverGoingAway.contains($0) } ?? false
    }
}

/// SQLSTATE values the ledger reacts to. See PostgreSQL's Appendix A.
public enum SQLState {
    public static let uniqueViolation = "23505"
    public static let foreignKeyViolation = "23503"
    public static let checkViolation = "23514"
    public static let notNullViolation = "23502"
    public static let exclusionViolation = "23P01"
    public static let serializationFailure = "40001"
    public static let deadlockDetected = "40P01"
    public static let insufficientPrivilege = "42501"
    public static let undefinedTable = "42P01"
    public static let duplicatePreparedStatement = "42P05"
    public static let queryCanceled = "57014"
    public static let adminShutdown = "57P01"
    /// The server ended the session because another server process crashed.
    public static let crashShutdown = "57P02"
    /// The server does not accept sessions yet (starting up, recovering) or any more (stopping).
    public static let cannotConnectNow = "57P03"
    /// The server ending or refusing sessions because it stops, crashed or is starting.
    public static let serverGoingAway: Set<String> = [adminShutdown, crashShutdown, cannotConnectNow]
    public static let raiseException = "P0001"
}

extension PostgresError {
    /// A column value that is not what its Swift type asks for (`reason` says how, without the
    /// value): what ``PostgresDecodable`` conformances throw; the row reader adds the column's
    /// name, type and the Swift type asked for.
    public static func decodingFailure(_ reason: String) -> PostgresError {
        PostgresError(code: .decoding, message: reason)
    }

    /// A text value with a NUL byte, which no PostgreSQL text value can hold (refused before it is
    /// sent, as a parameter or in `COPY`).
    static var nulInText: PostgresError {
        PostgresError(code: .encoding, message: "text parameters cannot contain a NUL byte (PostgreSQL rule)")
    }
}
