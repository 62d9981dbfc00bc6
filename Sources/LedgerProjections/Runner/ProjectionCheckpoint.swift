import Foundation
import LedgerPostgres
import LedgerStore

/// Where a projection stands: the row of `projection_checkpoints`.
public struct ProjectionCheckpoint: Sendable, Hashable {
    /// The projection's name.
    public var name: String
    /// The version of the code that built its tables.
    public var builtWithVersion: Int
    /// The last event applied, in the log's gap-safe order.
    public var checkpoint: GlobalCheckpoint
    /// How many events it has applied since it was (re)built.
    public var eventsApplied: Int64
    /// When the last applied event was recorded.
    public var lastEventRecordedAt: Date?
    /// When the checkpoint last moved.
    public var updatedAt: Date
    /// When a rebuild last swapped its tables in.
    public var rebuiltAt: Date?
}

enum CheckpointTable {
    /// Creates the projection's live tables and its checkpoint row if they are missing. A new
    /// checkpoint row records the code's version: empty tables built by this code are current.
    ///
    /// When the tables and the row are there already, nothing is run: their DDL (`CREATE … IF NOT
    /// EXISTS`) would still need the right to create in the schema, or to own the tables, which a
    /// service logged in as a member of `ledger_app` need not have.
    static func prepare(_ projection: any Projection, on connection: PostgresConnection) throws {
        if try isPrepared(projection, on: connection) { return }
        try connection.transaction { connection in
            try lock(projection.name, on: connection)
            try projection.createTables(.live, on: connection)
            try grantToApplication(projection, .live, on: connection)
            try connection.execute("""
                INSERT INTO projection_checkpoints (name, version) VALUES (\(projection.name), \(projection.version))
                ON CONFLICT (name) DO NOTHING
                """)
        }
    }

    /// Lets `ledger_app` read and write the projection's tables, whoever made them (the owner
    /// running `ledger migrate` or a rebuild, or the service itself).
    static func grantToApplication(_ projection: any Projection, _ tables: ProjectionTables, on connection: PostgresConnection) throws {
        let list = projection.tableNames.map { tables.quoted($0) }.joined(separator: ", ")
        guard !list.isEmpty else { return }
        try connection.run(script: "GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE \(list) TO ledger_app")
    }

    /// Whether the projection's live tables and its checkpoint row exist.
    static func isPrepared(_ projection: any Projection, on connection: PostgresConnection) throws -> Bool {
        let names = "{" + projection.tableNames.map { ProjectionTables.live.name($0) }.joined(separator: ",") + "}"
        return try connection.query("""
            SELECT bool_and(to_regclass(quote_ident(t)) IS NOT NULL)
                   AND EXISTS (SELECT 1 FROM projection_checkpoints WHERE name = \(projection.name))
            FROM unnest(\(names)::text[]) AS t
            """).single().decode(Bool?.self, at: 0) ?? false
    }

    /// Serialises everything that moves one projection's checkpoint (runners in any number of
    /// processes, and a rebuild's swap) for the rest of the transaction. An advisory lock, not a
    /// row lock: it takes no transaction id, so it does not hold back the log's read horizon.
    static func lock(_ name: String, on connection: PostgresConnection) throws {
        try connection.execute("SELECT pg_advisory_xact_lock(hashtextextended(\("ledger.projection." + name), 0))")
    }

    static let columns = """
        name, version, transaction_id::text, position, events_applied, last_event_recorded_at, updated_at, rebuilt_at
        """

    static func decode(_ row: PostgresRow) throws -> ProjectionCheckpoint {
        ProjectionCheckpoint(
            name: try row.decode(String.self, at: 0),
            builtWithVersion: try row.decode(Int.self, at: 1),
            checkpoint: GlobalCheckpoint(transactionID: try row.decode(UInt64.self, at: 2),
                                         position: try row.decode(Int64.self, at: 3)),
            eventsApplied: try row.decode(Int64.self, at: 4),
            lastEventRecordedAt: try row.decode(Date?.self, at: 5),
            updatedAt: try row.decode(Date.self, at: 6),
            rebuiltAt: try row.decode(Date?.self, at: 7))
    }

    /// The projection's checkpoint row, if it has one.
    static func read(_ name: String, on connection: PostgresConnection) throws -> ProjectionCheckpoint? {
        let rows = try connection.query("SELECT \(unescaped: columns) FROM projection_checkpoints WHERE name = \(name)")
        return try rows.first.map(decode)
    }

    /// Every checkpoint row.
    static func readAll(on connection: PostgresConnection) throws -> [ProjectionCheckpoint] {
        try connection.query("SELECT \(unescaped: columns) FROM projection_checkpoints ORDER BY name").map(decode)
    }

    /// Moves the checkpoint past `applied` events ending at `last`.
    static func advance(_ name: String, to last: RecordedEvent, applied: Int, on connection: PostgresConnection) throws {
        try connection.execute("""
            UPDATE projection_checkpoints SET transaction_id = \(String(last.transactionID))::xid8,
                position = \(last.position), events_applied = events_applied + \(applied),
                last_event_recorded_at = \(last.recordedAt), updated_at = clock_timestamp()
            WHERE name = \(name)
            """)
    }
}
