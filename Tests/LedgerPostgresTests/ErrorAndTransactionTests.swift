import Foundation
import LedgerPostgres
import LedgerTestKit
import Testing

@Suite("Errors and transactions", .database)
struct ErrorAndTransactionTests {
    @Test("a unique violation surfaces as SQLSTATE 23505 with its constraint and table")
    func uniqueViolation() async throws {
        try await withFreshConnection { connection throws in
            try connection.run(script: "CREATE TABLE accounts (id int CONSTRAINT accounts_pk PRIMARY KEY)")
            try connection.execute("INSERT INTO accounts VALUES (\(1))")
            let error = #expect(throws: PostgresError.self) { try connection.execute("INSERT INTO accounts VALUES (\(1))") }
            #expect(error?.code == .server)
            #expect(error?.sqlState == SQLState.uniqueViolation)
            #expect(error?.constraintName == "accounts_pk")
            #expect(error?.tableName == "accounts")
            #expect(error?.detail?.contains("(id)=(1)") == true)
            #expect(error?.shortDescription == "server.23505")
            // The description never quotes row values; the debug description has the detail.
            #expect(error?.description.contains("(id)=(1)") == false)
            #expect(error?.debugDescription.contains("(id)=(1)") == true)
            #expect(!connection.isBroken)
        }
    }

    @Test("a transaction rolls back when its body throws, and commits otherwise")
    func transactionRollsBack() async throws {
        struct Boom: Error {}
        try await withFreshConnection { connection throws in
            try connection.run(script: "CREATE TABLE ledger (n int)")
            #expect(throws: Boom.self) {
                try connection.transaction { connection in
                    try connection.execute("INSERT INTO ledger VALUES (\(1))")
                    throw Boom()
                }
            }
            #expect(!connection.isInTransaction)
            #expect(try connection.query("SELECT count(*) FROM ledger").single().decode(Int.self, at: 0) == 0)
            try connection.transaction { connection in try connection.execute("INSERT INTO ledger VALUES (\(2))") }
            #expect(try connection.query("SELECT n FROM ledger").single().decode(Int.self, at: 0) == 2)
        }
    }

    @Test("a failing statement inside a transaction rolls back everything before it")
    func serverErrorRollsBack() async throws {
        try await withFreshConnection { connection throws in
            try connection.run(script: "CREATE TABLE u (id int PRIMARY KEY)")
            #expect(throws: PostgresError.self) {
                try connection.transaction { connection in
                    try connection.execute("INSERT INTO u VALUES (\(1))")
                    try connection.execute("INSERT INTO u VALUES (\(1))")
                }
            }
            #expect(try connection.query("SELECT count(*) FROM u").single().decode(Int.self, at: 0) == 0)
        }
    }

    @Test("a savepoint undoes only its own part")
    func savepoint() async throws {
        try await withFreshConnection { connection throws in
            try connection.run(script: "CREATE TABLE s (id int PRIMARY KEY)")
            try connection.transaction { connection in
                try connection.execute("INSERT INTO s VALUES (\(1))")
                _ = try? connection.savepoint { connection in try connection.execute("INSERT INTO s VALUES (\(1))") }
                try connection.execute("INSERT INTO s VALUES (\(2))")
            }
            #expect(try connection.query("SELECT count(*) FROM s").single().decode(Int.self, at: 0) == 2)
        }
    }

    @Test("sessions are numbered in the order they connect; a primary's never count as a standby's")
    func sessionNumbers() async throws {
        let database = try await TestDatabase.create(migrated: false)
        defer { database.drop() }
        let first = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        #expect(first.sessionNumber <= PostgresConnection.sessionsOpened)
        let next = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        #expect(next.sessionNumber > first.sessionNumber && next.sessionNumber <= PostgresConnection.sessionsOpened)
        #expect(next.sessionNumber != .max)  // the private cluster is a primary: in_hot_standby is off
        #expect(try next.query("SHOW in_hot_standby").single().decode(String.self, at: 0) == "off")
    }

    @Test("a transaction inside another is a savepoint of it: its failure undoes its own part, the outer one commits")
    func nestedTransaction() async throws {
        struct Boom: Error {}
        try await withFreshConnection { connection throws in
            try connection.run(script: "CREATE TABLE n (id int PRIMARY KEY)")
            var ran: [String] = []
            try connection.transaction { connection in
                try connection.execute("INSERT INTO n VALUES (\(1))")
                connection.afterCommit { ran.append("outer") }
                #expect(throws: Boom.self) {
                    try connection.transaction { connection in
                        try connection.execute("INSERT INTO n VALUES (\(2))")
                        connection.afterCommit { ran.append("inner, rolled back") }
                        throw Boom()
                    }
                }
                try connection.transaction { connection in
                    try connection.execute("INSERT INTO n VALUES (\(3))")
                    connection.afterCommit { ran.append("inner, kept") }
                }
                #expect(connection.isInTransaction && ran.isEmpty)
                let isolated = #expect(throws: PostgresError.self) {
                    try connection.transaction(isolation: .serializable) { _ in }
                }
                #expect(isolated?.sqlState == "25001")
            }
            #expect(ran == ["outer", "inner, kept"])
            #expect(try connection.query("SELECT array_agg(id ORDER BY id)::text FROM n").single().decode(String.self, at: 0) == "{1,3}")
        }
    }

    @Test("after-commit actions run once the transaction committed, never after a rollback or a rolled-back savepoint")
    func afterCommitActions() async throws {
        struct Boom: Error {}
        try await withFreshConnection { connection throws in
            try connection.run(script: "CREATE TABLE c (id int PRIMARY KEY)")
            var ran: [String] = []
            #expect(!connection.afterCommit { ran.append("outside") }, "nothing to wait for outside a transaction")
            try connection.transaction { connection in
                try connection.execute("INSERT INTO c VALUES (\(1))")
                #expect(connection.afterCommit {
                    // Committed and visible by the time the action runs.
                    ran.append(connection.isInTransaction ? "inside" : "after commit")
                })
                _ = try? connection.savepoint { connection in
                    #expect(connection.afterCommit { ran.append("rolled-back savepoint") })
                    try connection.execute("INSERT INTO c VALUES (\(1))")
                }
                try connection.savepoint { connection in
                    #expect(connection.afterCommit { ran.append("kept savepoint") })
                }
                #expect(ran.isEmpty)
            }
            #expect(ran == ["after commit", "kept savepoint"])
            ran = []
            #expect(throws: Boom.self) {
                try connection.transaction { connection in
                    connection.afterCommit { ran.append("rolled back") }
                    throw Boom()
                }
            }
            // A failed statement whose error the body swallowed: PostgreSQL would answer COMMIT with a
            // rollback, so the wrapper throws instead of returning as if committed, and runs nothing.
            let aborted = #expect(throws: PostgresError.self) {
                try connection.transaction { connection in
                    connection.afterCommit { ran.append("aborted") }
                    try connection.execute("INSERT INTO c VALUES (\(2))")
                    _ = try? connection.execute("INSERT INTO c VALUES (\(2))")
                }
            }
            #expect(aborted?.sqlState == "25P02" && !connection.isInTransaction)
            #expect(try connection.query("SELECT count(*) FROM c").single().decode(Int.self, at: 0) == 1)
            // A transaction the wrapper did not open: it cannot know when it commits.
            try connection.run(script: "BEGIN")
            #expect(!connection.afterCommit { ran.append("plain BEGIN") })
            try connection.run(script: "COMMIT")
            try connection.transaction { _ in }
            #expect(ran.isEmpty)
        }
    }

    @Test("an unreachable server gives a clear connection error")
    func unreachableServer() {
        let error = #expect(throws: PostgresError.self) {
            _ = try PostgresConnection(conninfo: "host=127.0.0.1 port=1 connect_timeout=2 dbname=x")
        }
        #expect(error?.code == .connectionFailed)
        #expect(error?.message.contains("Connection refused") == true)
        #expect(error?.message.contains("\n") == false)
    }

    @Test("wrong credentials give a clear connection error naming the role")
    func wrongCredentials() async throws {
        let database = try await TestDatabase.create(migrated: false)
        defer { database.drop() }
        let error = #expect(throws: PostgresError.self) {
            _ = try PostgresConnection(conninfo: database.conninfo + " user=no_such_role")
        }
        #expect(error?.code == .connectionFailed)
        #expect(error?.message.contains("no_such_role") == true)
    }

    @Test("a cancelled statement fails with 57014 and the connection stays usable")
    func cancelHandle() async throws {
        let database = try await TestDatabase.create(migrated: false)
        defer { database.drop() }
        let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
        let handle = try #require(connection.makeCancelHandle())
        let pid = connection.backendPID
        let conninfo = database.conninfo
        let finished = DispatchSemaphore(value: 0)
        // Another session waits until the statement is running (PQcancel on an idle session does
        // nothing), then cancels it once.
        Thread {
            defer { finished.signal() }
            guard let observer = try? PostgresConnection(conninfo: conninfo, logger: TestDatabase.quietLogger) else { return }
            for _ in 0..<1000 {
                let active = (try? observer.query(
                    "SELECT 1 FROM pg_stat_activity WHERE pid = \(pid) AND state = 'active' AND query LIKE '%pg_sleep%'"
                ).count) ?? 0
                if active == 1 {
                    handle.cancelRunningStatement()
                    return
                }
            }
        }.start()
        let error = #expect(throws: PostgresError.self) { try connection.query("SELECT pg_sleep(30)") }
        finished.wait()
        #expect(error?.sqlState == SQLState.queryCanceled)
        #expect(try connection.query("SELECT 1").count == 1)
    }
}
