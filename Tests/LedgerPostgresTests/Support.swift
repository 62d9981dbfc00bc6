import LedgerPostgres
import LedgerTestSupport

/// Runs `body` with a connection to a fresh database of the private cluster.
func withFreshConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
    let database = try TestDatabase.make(migrated: false)
    defer { database.drop() }
    let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
    return try body(connection)
}
