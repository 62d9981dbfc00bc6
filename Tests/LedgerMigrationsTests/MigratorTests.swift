import Foundation
import LedgerMigrations
import LedgerPostgres
import LedgerTestKit
import Testing

/// A temporary schema folder with the given files.
func schemaFolder(_ files: [String: String]) throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-schema-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    for (name, sql) in files { try sql.write(toFile: path + "/" + name, atomically: true, encoding: .utf8) }
    return path
}

@Suite("Migrations", .database)
struct MigratorTests {
    @Test("files apply in numeric order, once each, with their checksums recorded")
    func appliesInOrderOnce() async throws {
        let folder = try schemaFolder([
            "0002_second.sql": "ALTER TABLE things ADD COLUMN label text;",
            "0001_first.sql": "CREATE TABLE things (id int);",
            "README.md": "not a migration",
        ])
        let database = try await TestDatabase.create(migrated: false)
        defer { database.drop() }
        let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        let migrator = try Migrator(directory: folder)
        #expect(try migrator.apply(on: connection).map(\.version) == [1, 2])
        #expect(try migrator.apply(on: connection).isEmpty)
        let statuses = try migrator.status(on: connection)
        #expect(statuses.allSatisfy { $0.isApplied })
        let stored = try connection.query("SELECT checksum FROM ledger_migrations ORDER BY version").map {
            try $0.decode(String.self, at: 0)
        }
        #expect(stored == migrator.migrations.map(\.checksum))
        #expect(stored.first?.count == 64)
    }

    @Test("a file that fails leaves nothing of itself applied; earlier files stay")
    func failingFileRollsBack() async throws {
        let folder = try schemaFolder([
            "0001_ok.sql": "CREATE TABLE kept (id int);",
            "0002_broken.sql": "CREATE TABLE half_made (id int);\nINSERT INTO kept VALUES (1);\nSELEC oops;",
        ])
        let database = try await TestDatabase.create(migrated: false)
        defer { database.drop() }
        let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        let migrator = try Migrator(directory: folder)
        let error = #expect(throws: MigrationError.self) { try migrator.apply(on: connection) }
        guard case .failed(let fileName, _, let sqlState)? = error else {
            Issue.record("expected .failed, got \(String(describing: error))")
            return
        }
        #expect(fileName == "0002_broken.sql")
        #expect(sqlState == "42601")
        #expect(error?.description.contains("nothing of it was applied") == true)
        #expect(try connection.query("SELECT to_regclass('half_made') IS NULL").single().decode(Bool.self, at: 0))
        #expect(try connection.query("SELECT count(*) FROM kept").single().decode(Int.self, at: 0) == 0)
        #expect(try migrator.status(on: connection).map(\.isApplied) == [true, false])
    }

    @Test("an applied file that changed is refused before anything runs")
    func changedFileRefused() async throws {
        let folder = try schemaFolder(["0001_first.sql": "CREATE TABLE a (id int);"])
        let database = try await TestDatabase.create(migrated: false)
        defer { database.drop() }
        let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        try Migrator(directory: folder).apply(on: connection)
        try "CREATE TABLE a (id bigint);".write(toFile: folder + "/0001_first.sql", atomically: true, encoding: .utf8)
        try "CREATE TABLE b (id int);".write(toFile: folder + "/0002_next.sql", atomically: true, encoding: .utf8)
        let error = #expect(throws: MigrationError.self) { try Migrator(directory: folder).apply(on: connection) }
        #expect(error?.description.contains("0001_first.sql changed after it was applied") == true)
        #expect(try connection.query("SELECT to_regclass('b') IS NULL").single().decode(Bool.self, at: 0))
    }

    @Test("badly named, duplicated and missing files are named in the error")
    func badFolders() throws {
        let badName = try schemaFolder(["first.sql": "SELECT 1;"])
        #expect(throws: MigrationError.self) { try Migrator(directory: badName) }
        let duplicate = try schemaFolder(["0001_a.sql": "SELECT 1;", "001_b.sql": "SELECT 2;"])
        let error = #expect(throws: MigrationError.self) { try Migrator(directory: duplicate) }
        #expect(error?.description.contains("share number 1") == true)
        #expect(throws: MigrationError.self) { try Migrator(directory: "/nonexistent/schema") }
    }

    @Test("four migrators racing on one database apply each file exactly once")
    func concurrentMigrators() async throws {
        let folder = try schemaFolder([
            "0001_a.sql": "CREATE TABLE raced (id int);", "0002_b.sql": "INSERT INTO raced VALUES (1);",
        ])
        let database = try await TestDatabase.create(migrated: false)
        defer { database.drop() }
        let conninfo = database.conninfo
        let applied = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    let pool = PostgresPool(conninfo: conninfo, maxConnections: 1, logger: TestDatabase.quietLogger)
                    defer { pool.close() }
                    return try await pool.withConnection { try Migrator(directory: folder).apply(on: $0).count }
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(applied == 2)
        let connection = try PostgresConnection(conninfo: conninfo, logger: TestDatabase.quietLogger)
        #expect(try connection.query("SELECT count(*) FROM raced").single().decode(Int.self, at: 0) == 1)
    }

    @Test("the project's own schema/ applies cleanly")
    func projectSchemaApplies() async throws {
        let database = try await TestDatabase.create(migrated: false)
        defer { database.drop() }
        let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        let migrator = try Migrator()
        try migrator.apply(on: connection)
        #expect(try migrator.status(on: connection).allSatisfy { $0.isApplied })
    }
}
