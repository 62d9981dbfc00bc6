import Foundation
import LedgerMigrations
import LedgerPostgres
import LedgerPrivateCluster
import Logging
import Synchronization

/// Databases for tests, benchmarks and the demo: each test gets a fresh, migrated database of its
/// own in the private cluster (or in the server `LEDGER_DATABASE_URL` names), so tests run in
/// parallel without sharing state and never need a mock.
///
/// A migrated template (`ledger_template_<schema checksum>`) is built once per schema version and
/// cloned with `CREATE DATABASE … TEMPLATE`, which takes a few tens of milliseconds. A test's
/// database is dropped when its process exits; databases left behind by test processes that
/// were killed are dropped the next time a process starts.
public enum TestDatabase {
    /// A database made for one test.
    public struct Handle: Sendable {
        /// Its conninfo string.
        public let conninfo: String
        /// Its name.
        public let name: String
        let admin: String

        /// Drops the database when this process exits (ending any session still connected to it).
        ///
        /// Not at once: PostgreSQL's `DROP DATABASE` waits for a checkpoint while holding a
        /// transaction id, and the first checkpoint of a test run flushes every database the run
        /// created, which took 11 s here and longer on a slower disk. A transaction id held that
        /// long holds back the gap-safe read horizon of every database on the server
        /// (`pg_snapshot_xmin` is cluster-wide), so a test waiting for its own events to become
        /// readable failed while other tests' databases were being dropped. At exit the drops run
        /// together (their checkpoints merge); a database whose drop did not happen (a killed
        /// process) is dropped by the next test process (see ``TestDatabase/server``).
        ///
        /// Sessions a test left connected are ended now, as the drop used to end them (ending a
        /// session takes no transaction id), so leaked ones never pile up towards the server's
        /// connection limit; that runs on a thread of its own, so as not to block the caller.
        public func drop() {
            TestDatabase.dropAtExit(self)
            Thread { endSessions() }.start()
        }

        /// Ends every other session connected to the database.
        func endSessions() {
            guard let connection = try? PostgresConnection(conninfo: admin, logger: TestDatabase.quietLogger) else { return }
            _ = try? connection.query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = \(name) AND pid <> pg_backend_pid()")
        }

        /// Makes the database unreachable for a while, as a server restart does, without
        /// touching the server or any other database: refuses new sessions
        /// (`ALLOW_CONNECTIONS false`), then ends every session connected to it and waits until
        /// they are gone. ``acceptConnections()`` ends the outage. Blocks for a moment.
        /// - Throws: ``PostgresError`` when the server cannot be reached.
        public func refuseConnections() throws {
            let connection = try PostgresConnection(conninfo: admin, logger: TestDatabase.quietLogger)
            try connection.run(script: "ALTER DATABASE \(PostgresQuery.quoteIdentifier(name)) WITH ALLOW_CONNECTIONS false")
            let deadline = ContinuousClock.now + .seconds(30)
            while try connection.query("""
                SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = \(name) AND pid <> pg_backend_pid()
                """).single().decode(Int.self, at: 0) > 0, ContinuousClock.now < deadline {
                Thread.sleep(forTimeInterval: 0.01)
            }
        }

        /// Accepts sessions again after ``refuseConnections()``.
        /// - Throws: ``PostgresError`` when the server cannot be reached.
        public func acceptConnections() throws {
            let connection = try PostgresConnection(conninfo: admin, logger: TestDatabase.quietLogger)
            try connection.run(script: "ALTER DATABASE \(PostgresQuery.quoteIdentifier(name)) WITH ALLOW_CONNECTIONS true")
        }

        /// Drops the database and returns when it is gone. Blocks: call it off the cooperative
        /// pool. For benchmarks and tools, which run nothing else on the server meanwhile; tests
        /// use ``drop()``.
        public func dropNow() {
            guard let connection = try? PostgresConnection(conninfo: admin, logger: TestDatabase.quietLogger) else { return }
            _ = try? connection.run(script: "DROP DATABASE IF EXISTS \(PostgresQuery.quoteIdentifier(name)) WITH (FORCE)")
        }
    }

    /// A logger that reports only errors, for test plumbing.
    public static let quietLogger: Logger = {
        var logger = Logger(label: "ledger.test")
        logger.logLevel = .error
        return logger
    }()

    private static let counter = Atomic<Int>(0)

    /// Creations in flight at once (see ``make(migrated:)``).
    private static let creations = DispatchSemaphore(value: 16)

    /// The server every test database lives on: started once per process.
    public static let server: Result<Server, any Error> = Result { try Server.prepare() }

    /// Creates a fresh database, migrated with `schema/` unless `migrated` is false, on a thread
    /// of its own: the first call in a process starts the private cluster and builds the template
    /// (seconds), and a cooperative thread blocked that long stalls every other test's `await`.
    public static func create(migrated: Bool = true) async throws -> Handle {
        try await offThePool { try make(migrated: migrated) }
    }

    /// Creates a fresh database, migrated with `schema/` unless `migrated` is false. Blocks: for
    /// code that is not async (benchmarks, tools); tests use ``create(migrated:)``.
    /// - Throws: ``DatabasesRefused`` when ``refusesDatabases``.
    public static func make(migrated: Bool = true) throws -> Handle {
        if refusesDatabases { throw DatabasesRefused() }
        let server = try server.get()
        let number = counter.add(1, ordering: .relaxed).newValue
        let name = "ledger_test_\(getpid())_\(number)"
        let admin = try PostgresConnection(conninfo: server.adminConninfo, logger: quietLogger)
        let template = migrated ? " TEMPLATE \(PostgresQuery.quoteIdentifier(server.templateName))" : ""
        // A test database lost in an operating-system crash is of no concern: not waiting for the
        // WAL flush halves the time of the burst of creations when a test process starts.
        try admin.run(script: "SET synchronous_commit = off")
        // Sixteen at a time: each creation holds a transaction id while it copies the template,
        // and hundreds at once (every test starts together) held the read horizon of the tests
        // that got their database first for the whole burst (2.8 s here, 57 at once; longer on a
        // slower disk). Gated, a creation holds it well under a second; the run takes 2–3 s more.
        creations.wait()
        defer { creations.signal() }
        try admin.run(script: "CREATE DATABASE \(PostgresQuery.quoteIdentifier(name))\(template)")
        return Handle(conninfo: server.conninfo(database: name), name: name, admin: server.adminConninfo)
    }

    /// A database kept between processes, `ledger_kept_<label>_<schema>`: made from the migrated
    /// template the first time, and found again by later processes while the schema is the same.
    /// For benchmarks whose set-up takes far longer than what they measure (the growth benchmark's
    /// 10 M-event log); it is never dropped at exit (``Handle/dropNow()`` drops it). Making it
    /// drops the label's copies made with another schema.
    public static func kept(_ label: String) throws -> Handle {
        if refusesDatabases { throw DatabasesRefused() }
        let server = try server.get()
        let name = "ledger_kept_\(label)_" + server.templateName.dropFirst("ledger_template_".count)
        let admin = try PostgresConnection(conninfo: server.adminConninfo, logger: quietLogger)
        if try admin.query("SELECT 1 FROM pg_database WHERE datname = \(name)").count == 0 {
            // This label's copies of another schema (or layout) are stale: a kept log is large.
            _ = try dropKept(labelPrefix: label + "_", except: name)
            try admin.run(script: "CREATE DATABASE \(PostgresQuery.quoteIdentifier(name)) TEMPLATE \(PostgresQuery.quoteIdentifier(server.templateName))")
        }
        return Handle(conninfo: server.conninfo(database: name), name: name, admin: server.adminConninfo)
    }

    /// Drops the kept databases (``kept(_:)``) whose label starts with `labelPrefix`, of any
    /// schema, but the one named `except`, and returns their names.
    public static func dropKept(labelPrefix: String, except: String = "") throws -> [String] {
        let server = try server.get()
        let admin = try PostgresConnection(conninfo: server.adminConninfo, logger: quietLogger)
        let names = try admin.query("""
            SELECT datname FROM pg_database WHERE starts_with(datname, \("ledger_kept_" + labelPrefix)) AND datname <> \(except)
            """).map { try $0.decode(String.self, at: 0) }
        dropInLanes(names.map { Handle(conninfo: "", name: $0, admin: server.adminConninfo) })
        return names
    }

    /// True when `LEDGER_TEST_NO_DATABASE` is set (to anything but `0` or nothing): only the
    /// database-free unit tests are meant to run, so creating a database fails the test that asks.
    public static let refusesDatabases = isSet("LEDGER_TEST_NO_DATABASE")

    /// A database was asked for while ``refusesDatabases``: the test runs against PostgreSQL and
    /// needs the `.database` mark (`LedgerTestKit`).
    public struct DatabasesRefused: Error, CustomStringConvertible {
        /// What to do about it.
        public var description: String { "LEDGER_TEST_NO_DATABASE is set, and this test opens a database: mark it .database" }
    }

    /// True when `LEDGER_TEST_EVENTS_PARTITIONED` is set (to anything but `0` or nothing): every
    /// migrated test database then has `events` partitioned by time
    /// (`ops/sql/partition-events-by-time.sql`), so that the store's whole suite can show it runs
    /// unchanged on the partitioned table (`ops/test` runs it so once more).
    public static let partitionsEvents = isSet("LEDGER_TEST_EVENTS_PARTITIONED")

    /// True when `LEDGER_TEST_EVENTS_SHARDED` is set (to anything but `0` or nothing): every
    /// migrated test database then has `events` hash-partitioned on `shard_key` with the keys of
    /// the distribution design (`ops/sql/distribute-events-by-shard-key.sql`), so that the
    /// store's tests show the ledger keeps working under the rule Citus imposes on unique keys
    /// (`ops/test` runs them so). Ignored when ``partitionsEvents`` is set.
    public static let shardsEvents = isSet("LEDGER_TEST_EVENTS_SHARDED") && !partitionsEvents

    /// Whether the environment variable `name` is set to anything but `0` or nothing.
    static func isSet(_ name: String) -> Bool { !["", "0"].contains(ProcessInfo.processInfo.environment[name] ?? "") }

    /// The text of `ops/sql/partition-events-by-time.sql`, found beside `schema/`.
    public static func partitionScript() throws -> String { try opsSQL("partition-events-by-time.sql") }

    /// The text of `ops/sql/distribute-events-by-shard-key.sql`, found beside `schema/`.
    public static func shardScript() throws -> String { try opsSQL("distribute-events-by-shard-key.sql") }

    /// The text of the operator's script `ops/sql/<name>`, found beside `schema/`.
    static func opsSQL(_ name: String) throws -> String {
        let path = URL(fileURLWithPath: Migration.defaultDirectory()).deletingLastPathComponent()
            .appendingPathComponent("ops/sql").appendingPathComponent(name).path
        return try String(contentsOfFile: path, encoding: .utf8)
    }

    /// Partitions `events` of `database` by time, as an operator would with
    /// `ops/sql/partition-events-by-time.sql`, in one transaction.
    public static func partitionEvents(of database: Handle) throws {
        let connection = try PostgresConnection(conninfo: database.conninfo, logger: quietLogger)
        try connection.run(script: "BEGIN;\n" + (try partitionScript()) + "\nCOMMIT;")
    }

    /// Runs `body` with a fresh database, dropped when the process exits (see ``Handle/drop()``).
    ///
    /// Creating runs on a thread of its own: it blocks on libpq for a while, and blocking Swift's
    /// cooperative pool (two threads here) would stall every other test's `await`, including
    /// those of a test that holds a transaction open on purpose.
    public static func with<T>(migrated: Bool = true, _ body: (Handle) async throws -> T) async throws -> T {
        let handle = try await create(migrated: migrated)
        defer { handle.drop() }
        return try await body(handle)
    }

    /// The databases ``Handle/drop()`` left for this process's exit.
    private static let droppedAtExit = Mutex<[Handle]>([])

    /// Registers the exit hook once.
    private static let exitHook: Void = { atexit { TestDatabase.dropAllNow() } }()

    static func dropAtExit(_ handle: Handle) {
        _ = exitHook
        droppedAtExit.withLock { $0.append(handle) }
    }

    /// Drops the databases left for the exit, eight sessions at a time: concurrent drops share
    /// their checkpoints.
    private static func dropAllNow() {
        let handles = droppedAtExit.withLock { handles in
            defer { handles.removeAll() }
            return handles
        }
        dropInLanes(handles)
    }

    /// Drops `handles` on eight threads: concurrent drops share their checkpoints, where one after
    /// the other each waits for one of its own.
    static func dropInLanes(_ handles: [Handle]) {
        guard !handles.isEmpty else { return }
        let lanes = min(8, handles.count)
        let done = DispatchSemaphore(value: 0)
        for lane in 0..<lanes {
            Thread {
                for index in stride(from: lane, to: handles.count, by: lanes) { handles[index].dropNow() }
                done.signal()
            }.start()
        }
        for _ in 0..<lanes { done.wait() }
    }

    /// Runs blocking work on a new thread and waits for it without holding a cooperative thread.
    public static func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }

    /// The server and its migrated template.
    public struct Server: Sendable {
        /// Conninfo of the maintenance database (`postgres`).
        public let adminConninfo: String
        /// The private cluster, or nil when `LEDGER_DATABASE_URL` is set.
        public let cluster: PrivateCluster?
        let external: String?
        let templateName: String

        /// A conninfo for another database on the same server.
        public func conninfo(database: String) -> String {
            if let cluster { return cluster.conninfo(database: database) }
            let base = external ?? ""
            if base.hasPrefix("postgres://") || base.hasPrefix("postgresql://"), var url = URLComponents(string: base) {
                url.path = "/" + database
                return url.string ?? base
            }
            return base + " dbname=\(database)"  // in a conninfo string the last keyword wins
        }

        static func prepare() throws -> Server {
            let target = try DatabaseTarget.resolve(database: "postgres", logger: quietLogger)
            let migrator = try Migrator()
            var digest = migrator.migrations.map(\.checksum).joined(separator: ":")
            let layoutScript = try TestDatabase.partitionsEvents ? TestDatabase.partitionScript()
                : TestDatabase.shardsEvents ? TestDatabase.shardScript() : nil
            if let layoutScript { digest += ":layout:" + layoutScript }
            let templateName = "ledger_template_" + String(PrivateClusterNaming.shortHash(digest), radix: 16)
            let server = Server(adminConninfo: target.conninfo, cluster: target.cluster,
                                external: target.cluster == nil ? target.conninfo : nil, templateName: templateName)
            try server.dropLeftovers()
            try server.buildTemplate(migrator: migrator, layoutScript: layoutScript)
            return server
        }

        /// Drops `ledger_test_<pid>_*` databases whose process has exited.
        private func dropLeftovers() throws {
            let admin = try PostgresConnection(conninfo: adminConninfo, logger: quietLogger)
            let names = try admin.query("SELECT datname FROM pg_database WHERE datname LIKE 'ledger_test_%'")
                .map { try $0.decode(String.self, at: 0) }
                .filter { name in
                    let parts = name.split(separator: "_")
                    guard parts.count >= 4, let pid = Int32(parts[2]), pid != getpid() else { return false }
                    return kill(pid, 0) != 0 && errno == ESRCH
                }
            // A killed run leaves hundreds: dropped in lanes, as at exit.
            TestDatabase.dropInLanes(names.map { Handle(conninfo: "", name: $0, admin: adminConninfo) })
        }

        /// Builds the template once per schema version, under an advisory lock so that parallel
        /// test processes build it once between them.
        private func buildTemplate(migrator: Migrator, layoutScript: String?) throws {
            let admin = try PostgresConnection(conninfo: adminConninfo, logger: quietLogger)
            try admin.execute("SELECT pg_advisory_lock(\(Int64(0x5445_4D50)))")
            defer { _ = try? admin.execute("SELECT pg_advisory_unlock(\(Int64(0x5445_4D50)))") }
            let exists = try admin.query("SELECT 1 FROM pg_database WHERE datname = \(templateName)").count == 1
            if exists { return }
            let building = templateName + "_building"
            try admin.run(script: "DROP DATABASE IF EXISTS \(PostgresQuery.quoteIdentifier(building)) WITH (FORCE)")
            try admin.run(script: "CREATE DATABASE \(PostgresQuery.quoteIdentifier(building))")
            do {
                let connection = try PostgresConnection(conninfo: conninfo(database: building), logger: quietLogger)
                try migrator.apply(on: connection)
                if let layoutScript { try connection.run(script: "BEGIN;\n" + layoutScript + "\nCOMMIT;") }
            }
            try admin.run(script: "ALTER DATABASE \(PostgresQuery.quoteIdentifier(building)) RENAME TO \(PostgresQuery.quoteIdentifier(templateName))")
        }
    }
}

/// Short stable hashes for generated names.
enum PrivateClusterNaming {
    static func shortHash(_ text: String) -> UInt32 {
        var hash: UInt32 = 0x811c_9dc5
        for byte in text.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 0x0100_0193
        }
        return hash
    }
}
