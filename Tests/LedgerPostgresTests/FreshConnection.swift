import LedgerPostgres
import LedgerTestKit

/// Runs `body` with a connection to a fresh database of the private cluster. The database is made
/// off Swift's cooperative pool (the first one of a process waits for the cluster and template);
/// `body` runs in the test's task, so its expectations are the test's, and its statements are short.
func withFreshConnection<T>(_ body: (PostgresConnection) throws -> T) async throws -> T {
    let database = try await TestDatabase.create(migrated: false)
    defer { database.drop() }
    let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
    return try body(connection)
}
