import Foundation

/// The rows a statement returned, copied out of libpq's result before it was cleared.
///
/// Values are kept as PostgreSQL's text output in one contiguous buffer and decoded on demand
/// with ``PostgresRow/decode(_:at:)`` or ``PostgresRow/decode(_:column:)``.
public struct PostgresRows: Sendable, RandomAccessCollection {
    /// A column of the result.
    public struct Column: Sendable, Hashable {
        /// The column's name as the statement gave it.
        public var name: String
        /// The column's type OID.
        public var typeOID: UInt32
    }

    /// The result's columns, in order.
    public let columns: [Column]
    /// The command tag (`INSERT 0 1`, `SELECT 3`).
    public let commandTag: String
    /// Rows inserted, updated, deleted, copied or selected, as libpq's `PQcmdTuples` reports them.
    public let affectedRows: Int
    let storage: [UInt8]
    /// Per value: its start in `storage`, and its length (-1 for NULL); row-major.
    let starts: [Int]
    let lengths: [Int32]
    /// Column positions by name (the first column of a name), for results wider than
    /// ``indexedWidth``; narrower ones are searched in order, which costs less than building
    /// the dictionary (an append's `RETURNING` row is read once).
    let columnIndex: [String: Int]?

    /// The width above which a result indexes its column names.
    public static let indexedWidth = 6

    init(columns: [Column], rowCount: Int, commandTag: String, affectedRows: Int, storage: [UInt8],
         starts: [Int], lengths: [Int32]) {
        self.columns = columns
        self.count = rowCount
        self.commandTag = commandTag
        self.affectedRows = affectedRows
        self.storage = storage
        self.starts = starts
        self.lengths = lengths
        if columns.count > Self.indexedWidth {
            var index: [String: Int] = [:]
            for (position, column) in columns.enumerated() where index[column.name] == nil {
                index[column.name] = position
            }
            self.columnIndex = index
        } else {
            self.columnIndex = nil
        }
    }

    /// The position of the first column called `name`.
    func position(ofColumn name: String) -> Int? {
        if let columnIndex { return columnIndex[name] }
        return columns.firstIndex { $0.name == name }
    }

    /// The number of rows.
    public let count: Int
    public var startIndex: Int { 0 }
    public var endIndex: Int { count }
    public subscript(position: Int) -> PostgresRow { PostgresRow(rows: self, index: position) }

    /// The only row, or an error naming what was expected.
    public func single() throws(PostgresError) -> PostgresRow {
        guard count == 1 else {
            throw PostgresError(code: .unexpectedResponse, message: "expected one row, got \(count)")
        }
        return self[0]
    }
}

/// One row of ``PostgresRows``.
public struct PostgresRow: Sendable {
    let rows: PostgresRows
    let index: Int

    /// Decodes the value at a column position. `NULL` decodes only into an `Optional`.
    public func decode<T: PostgresDecodable>(_ type: T.Type = T.self, at column: Int) throws(PostgresError) -> T {
        guard column >= 0, column < rows.columns.count else {
            throw PostgresError(code: .decoding, message: "no column at position \(column)")
        }
        let slot = index * rows.columns.count + column
        let length = Int(rows.lengths[slot])
        let meta = rows.columns[column]
        if length < 0 {
            return try T.decodeNull(column: meta.name)
        }
        let start = rows.starts[slot]
        do {
            return try rows.storage.withUnsafeBytes { buffer in
                try T(postgresText: UnsafeRawBufferPointer(rebasing: buffer[start..<(start + length)]),
                      typeOID: meta.typeOID)
            }
        } catch let error as PostgresError where error.code == .decoding && error.columnName == nil {
            throw PostgresError(
                code: .decoding,
                message: "column \(meta.name) (type OID \(meta.typeOID)) cannot be decoded as \(T.self): \(error.message)",
                columnName: meta.name)
        } catch let error as PostgresError {
            throw error
        } catch {
            throw PostgresError(code: .decoding, message: "column \(meta.name): \(error)", columnName: meta.name)
        }
    }

    /// Decodes the value of the column with this name.
    public func decode<T: PostgresDecodable>(_ type: T.Type = T.self, column name: String) throws(PostgresError) -> T {
        guard let position = rows.position(ofColumn: name) else {
            throw PostgresError(code: .decoding, message: "no column named \(name)")
        }
        return try decode(type, at: position)
    }

    /// The number of columns.
    public var columnCount: Int { rows.columns.count }

    /// True when the value at a column position is SQL NULL.
    public func isNull(at column: Int) -> Bool {
        rows.lengths[index * rows.columns.count + column] < 0
    }

    /// Decodes a JSON or JSONB column into a `Decodable` value.
    public func decodeJSON<T: Decodable>(_ type: T.Type, column name: String, decoder: JSONDecoder = JSONDecoder())
        throws(PostgresError) -> T
    {
        let data = try decode(PostgresJSONText.self, column: name).data
        do {
            return try decoder.decode(T.self, from: data)
        } catch {
            throw PostgresError(code: .decoding, message: "column \(name) holds JSON that is not a \(T.self): \(error)",
                                columnName: name)
        }
    }
}
