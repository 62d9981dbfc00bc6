import Logging

/// What a log record may say about an error: its type and, for a database error, its code and
/// SQLSTATE. Never the error's text: a server message quotes the values it refused (`invalid
/// input syntax for type uuid: "…"`), other errors quote their input, and either can be personal.
public enum ErrorLogMetadata {
    /// `metadata` with `error.type` added, and `error.db_code` and `error.sqlstate` for a
    /// `PostgresError`.
    public static func of(_ error: any Error, adding metadata: Logger.Metadata = [:]) -> Logger.Metadata {
        let prefix = "error"
        var metadata = metadata
        metadata["\(prefix).type"] = "\(String(reflecting: type(of: error)))"
        if let error = error as? PostgresError {
            metadata["\(prefix).db_code"] = "\(error.code)"
            if let sqlState = error.sqlState { metadata["\(prefix).sqlstate"] = "\(sqlState)" }
        }
        return metadata
    }
}
