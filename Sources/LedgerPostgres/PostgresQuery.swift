import Foundation

/// A SQL statement whose interpolated values become bound parameters.
///
/// ```swift
/// let query: PostgresQuery = "SELECT total FROM orders WHERE customer_id = \(customerID) AND placed_at > \(since)"
/// // sql: "SELECT total FROM orders WHERE customer_id = $1 AND placed_at > $2", two bound values
/// ```
/// A value can never change the statement's text, so `'; DROP TABLE x; --` is stored literally.
/// Identifiers (table and channel names) go through ``StringInterpolation/appendInterpolation(identifier:)``,
/// which quotes them; use it only for names the program chose, never for user input.
public struct PostgresQuery: Sendable, Hashable, ExpressibleByStringInterpolation {
    /// The statement with `$1`, `$2`… placeholders.
    public var sql: String
    /// The values bound to the placeholders, in order.
    public var binds: [PostgresValue]

    /// A statement and its parameters, given explicitly.
    public init(sql: String, binds: [PostgresValue] = []) {
        self.sql = sql
        self.binds = binds
    }

    public init(stringLiteral value: String) { self.init(sql: value) }

    /// Appends trusted SQL text (for statements built in steps; never for input).
    public mutating func append(sql text: String) { sql += text }

    /// Appends a placeholder and binds `value` to it.
    public mutating func append(bind value: some PostgresEncodable) {
        binds.append(value.postgresValue)
        sql += "$\(binds.count)"
    }

    public init(stringInterpolation: StringInterpolation) {
        self.init(sql: stringInterpolation.sql, binds: stringInterpolation.binds)
    }

    /// Builds the SQL text and the list of bound values.
    public struct StringInterpolation: StringInterpolationProtocol {
        var sql = ""
        var binds: [PostgresValue] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            sql.reserveCapacity(literalCapacity + interpolationCount * 3)
            binds.reserveCapacity(interpolationCount)
        }

        public mutating func appendLiteral(_ literal: String) { sql += literal }

        /// Binds a value as the next parameter.
        public mutating func appendInterpolation(_ value: some PostgresEncodable) {
            binds.append(value.postgresValue)
            sql += "$\(binds.count)"
        }

        /// Binds an optional value: `nil` becomes SQL NULL.
        public mutating func appendInterpolation<Value: PostgresEncodable>(_ value: Value?) {
            binds.append(value?.postgresValue ?? .null)
            sql += "$\(binds.count)"
        }

        /// Appends a double-quoted identifier (`"my table"`), doubling any quote inside it.
        public mutating func appendInterpolation(identifier: String) {
            sql += PostgresQuery.quoteIdentifier(identifier)
        }

        /// Appends trusted SQL text as is. For fragments the program builds, never for input.
        public mutating func appendInterpolation(unescaped fragment: String) { sql += fragment }
    }

    /// Quotes an identifier the way PostgreSQL reads it back: `"` + name with `"` doubled + `"`.
    public static func quoteIdentifier(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// A PostgreSQL array literal of `values`, each quoted with `\` and `"` escaped: bound as one
    /// text parameter and cast (`ANY($1::text[])`), a list of any length is one value.
    public static func textArrayLiteral(_ values: some Sequence<String>) -> String {
        "{" + values.map { "\"" + $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
            .joined(separator: ",") + "}"
    }
}
