import LedgerPostgres
import LedgerStore

/// A table set turned from the log into answers: derivable from `events` alone, rebuildable at
/// any time, and versioned so that ops can rebuild it after a fix.
///
/// A projection owns its tables. It never reads the clock and never appends: what it computes
/// depends only on the events it is given, in the log's gap-safe order, so an incremental run and
/// a rebuild from position 0 end equal.
public protocol Projection: Sendable {
    /// The stable name (`skan_devices`): lowercase letters, digits and `_`, at most 41 characters.
    /// It names the checkpoint row and prefixes the projection's tables.
    var name: String { get }
    /// The version of the code that computes it. Raise it with every change to what the
    /// projection computes or stores: `ledger projections status` then reports the tables stale
    /// until `ledger projections rebuild` builds them anew.
    var version: Int { get }
    /// The event types it reads; the runner reads only these from the log.
    var eventTypes: [String] { get }
    /// The base names of its tables (the first is its main table).
    var tableNames: [String] { get }
    /// The personal fields it reads, by event type: a rebuild opens only these (the others are
    /// absent from the payloads it is given). Every field unless the projection says otherwise.
    var personalFieldsRead: PersonalFieldSelection { get }

    /// Creates its tables under `tables`' names, if they do not exist.
    func createTables(_ tables: ProjectionTables, on connection: PostgresConnection) throws

    /// Applies `events`, in order, to the tables named by `tables`. Called inside the transaction
    /// that also moves the checkpoint: throw, and neither happens.
    func apply(_ events: [RecordedEvent], to tables: ProjectionTables, on connection: PostgresConnection) throws

    /// A builder that folds a long run of events in memory and writes the result in bulk: the
    /// fast path of a rebuild into empty shadow tables.
    func makeBulkBuilder() -> any ProjectionBulkBuilder
}

extension Projection {
    public var personalFieldsRead: PersonalFieldSelection { .all }
}

/// Folds events in memory during a rebuild and writes everything at the end.
public protocol ProjectionBulkBuilder {
    /// Folds `events` (in log order) into the builder's state.
    mutating func fold(_ events: [RecordedEvent]) throws
    /// Folds `events` as ``fold(_:)`` does, but holds at most about `limit` states in memory
    /// (devices, for a per-device projection): past it, the builder writes what it holds into
    /// `tables` (a rebuild's shadow tables, empty at the start) on `connection`, which is not in
    /// a transaction (and may write part of it on a session of its own from `pool`, as
    /// ``write(to:on:sessionsFrom:)`` does), and reads a state back, taking its rows out again,
    /// when a later event needs it. Returns whether it wrote. This is what bounds a rebuild's
    /// memory on a large log; the default folds everything in memory and never writes.
    mutating func fold(_ events: [RecordedEvent], holdingAtMost limit: Int, spillingInto tables: ProjectionTables,
                       on connection: PostgresConnection, sessionsFrom pool: PostgresPool) throws -> Bool
    /// Writes the folded state into `tables` (empty when this is called).
    func write(to tables: ProjectionTables, on connection: PostgresConnection) throws
    /// ``write(to:on:)`` for a rebuild into shadow tables, which may also write part of the rows
    /// on a session of its own opened from `pool` (``PostgresPool/openSession()``), committed in
    /// a transaction of its own.
    /// Shadow tables are the rebuild's alone until the swap, and a failed rebuild's are dropped
    /// when the next one starts, so rows committed apart are never seen half-made. The default
    /// writes everything on `connection`.
    func write(to tables: ProjectionTables, on connection: PostgresConnection, sessionsFrom pool: PostgresPool) throws
}

extension ProjectionBulkBuilder {
    public mutating func fold(_ events: [RecordedEvent], holdingAtMost limit: Int, spillingInto tables: ProjectionTables,
                              on connection: PostgresConnection, sessionsFrom pool: PostgresPool) throws -> Bool
    {
        try fold(events)
        return false
    }

    public func write(to tables: ProjectionTables, on connection: PostgresConnection, sessionsFrom pool: PostgresPool) throws {
        try write(to: tables, on: connection)
    }
}

/// The actual names of a projection's tables: the live ones, or a rebuild's shadow copies.
public struct ProjectionTables: Sendable, Hashable {
    /// The suffix of shadow tables.
    public static let shadowSuffix = "__shadow"

    /// Appended to every base name (`""` for the live tables).
    public let suffix: String

    /// The live tables.
    public static let live = ProjectionTables(suffix: "")
    /// A rebuild's shadow tables.
    public static let shadow = ProjectionTables(suffix: shadowSuffix)

    /// The actual name of the table whose base name is `base`.
    public func name(_ base: String) -> String { base + suffix }

    /// The same name, quoted as an SQL identifier.
    public func quoted(_ base: String) -> String { PostgresQuery.quoteIdentifier(name(base)) }
}
