import Foundation
import LedgerPostgres

/// Applies `schema/` migrations in order, each once, each in its own transaction, recording its
/// checksum in `ledger_migrations`.
///
/// Concurrent migrators (two test processes, two deploys) are serialised by a session advisory
/// lock, so each file is applied exactly once.
public struct Migrator: Sendable {
    /// Where a migration stands in a database.
    public struct Status: Sendable, Hashable {
        public var migration: Migration
        /// When it was applied, or nil while pending.
        public var appliedAt: Date?
        public var isApplied: Bool { appliedAt != nil }
    }

    /// The migrations, in order.
    public let migrations: [Migration]

    public init(migrations: [Migration]) {
        self.migrations = migrations.sorted { $0.version < $1.version }
    }

    /// Reads the migrations of a `schema/` folder.
    public init(directory: String = Migration.defaultDirectory()) throws(MigrationError) {
        self.init(migrations: try Migration.load(directory: directory))
    }

    static let lockKey: Int64 = 0x4C45_4447_4552  // "LEDGER"

    /// Applies every pending migration. Returns the ones applied now.
    /// - Throws: ``MigrationError`` (a changed applied file is refused before anything runs), or
    ///   ``PostgresError`` when the database itself fails.
    @discardableResult
    public func apply(on connection: PostgresConnection) throws -> [Migration] {
        try connection.execute("SELECT pg_advisory_lock(\(Self.lockKey))")
        defer { _ = try? connection.execute("SELECT pg_advisory_unlock(\(Self.lockKey))") }
        try ensureTable(connection)
        let pending = try check(connection).filter { !$0.isApplied }.map(\.migration)
        for migration in pending {
            do {
                try connection.transaction { connection in
                    try connection.run(script: migration.sql)
                    try connection.execute("""
                        INSERT INTO ledger_migrations (version, name, checksum)
                        VALUES (\(migration.version), \(migration.name), \(migration.checksum))
                        """)
                }
            } catch let error as PostgresError {
                throw MigrationError.failed(fileName: migration.fileName, reason: error.message, sqlState: error.sqlState)
            }
        }
        return pending
    }

    /// Lists every migration, applied or pending, after checking applied files are unchanged.
    public func status(on connection: PostgresConnection) throws -> [Status] {
        try ensureTable(connection)
        return try check(connection)
    }

    private func ensureTable(_ connection: PostgresConnection) throws {
        try connection.run(script: """
            SET client_min_messages = warning;
            CREATE TABLE IF NOT EXISTS ledger_migrations (
                version    integer PRIMARY KEY,
                name       text NOT NULL,
                checksum   text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
            );
            RESET client_min_messages;
            """)
    }

    private func check(_ connection: PostgresConnection) throws -> [Status] {
        let rows = try connection.query("SELECT version, name, checksum, applied_at FROM ledger_migrations ORDER BY version")
        var applied: [Int: (name: String, checksum: String, at: Date)] = [:]
        for row in rows {
            applied[try row.decode(Int.self, at: 0)] = (try row.decode(String.self, at: 1),
                                                         try row.decode(String.self, at: 2),
                                                         try row.decode(Date.self, at: 3))
        }
        for (version, record) in applied.sorted(by: { $0.key < $1.key })
        where !migrations.contains(where: { $0.version == version }) {
            throw MigrationError.appliedFileMissing(version: version, name: record.name)
        }
        return try migrations.map { migration in
            guard let record = applied[migration.version] else { return Status(migration: migration, appliedAt: nil) }
            guard record.checksum == migration.checksum else {
                throw MigrationError.checksumMismatch(fileName: migration.fileName, applied: record.checksum,
                                                      onDisk: migration.checksum)
            }
            return Status(migration: migration, appliedAt: record.at)
        }
    }
}
