import Foundation
import LedgerDomain
import LedgerFolds
import LedgerPostgres
import LedgerStore

/// A per-device projection: a reducer's states (``LedgerFolds/DeviceStateReducer``), stored as
/// its ``DeviceStateStorage`` says and kept up to date.
///
/// Tables (`<name>` is the reducer's name; a rebuild builds the same under `__shadow` names):
/// - `<name>`: one row per device: `device_stream_id`, `state` (jsonb, what the reducer folds),
///   `last_position`, `updated_at` (when the last applied event was recorded), then the reducer's
///   summary columns;
/// - `<name>_sends`: which device each followed send is about (from its `SendRequested`), so the
///   events of a send's stream reach the right device;
/// - `<name>_rows` (when the reducer has detail columns): one row per token, obligation, … of a
///   device, replaced whenever that device's state changes.
///
/// A step loads the states of the devices its batch touches, folds the batch in memory, then
/// replaces those devices' rows (`DELETE` + `COPY`), all inside the runner's transaction.
public struct DeviceStateProjection<Reducer: DeviceStateStorage>: Projection {
    /// The pure core.
    public let reducer: Reducer

    /// A projection of `reducer`'s states.
    public init(_ reducer: Reducer) { self.reducer = reducer }

    /// The reducer's name.
    public var name: String { reducer.name }
    /// The reducer's version.
    public var version: Int { reducer.version }
    /// The reducer's device types, plus the send lifecycle when it follows sends.
    public var eventTypes: [String] { reducer.eventTypes }
    /// The reducer's.
    public var personalFieldsRead: PersonalFieldSelection { reducer.personalFieldsRead }
    var hasDetail: Bool { !reducer.detailColumns.isEmpty }
    var sendsTable: String { name + "_sends" }
    /// `<name>_rows`, the detail rows' table: for the queries of the module that declares the
    /// projection (its own table, asked through typed methods it gives the others).
    public var rowsTable: String { name + "_rows" }
    /// `<name>`, `<name>_sends` and, with detail columns, `<name>_rows`.
    public var tableNames: [String] { [name, sendsTable] + (hasDetail ? [rowsTable] : []) }

    public func createTables(_ tables: ProjectionTables, on connection: PostgresConnection) throws {
        func columnsDDL(_ columns: [ProjectionColumn]) -> String {
            columns.map { ",\n    \(PostgresQuery.quoteIdentifier($0.name)) \($0.sqlType)" }.joined()
        }
        func indexesDDL(_ table: String, _ columns: [ProjectionColumn]) -> String {
            columns.filter(\.indexed).map {
                let index = PostgresQuery.quoteIdentifier(tables.name(table) + "_" + $0.name)
                return "CREATE INDEX IF NOT EXISTS \(index) ON \(tables.quoted(table)) (\(PostgresQuery.quoteIdentifier($0.name)));\n"
            }.joined()
        }
        // `toast_tuple_target = 8160`: a state row up to a page's size stays in the row, as it is.
        // At the default (2 KiB) a device with a few dozen counted transactions has its state
        // compressed on every write and decompressed on every read. Measured with 10,000 such
        // states (2.6 KB of text each): 460–490 ms to insert at the default, 130–140 ms with this;
        // reading them all back, 29 against 9 ms. Larger states are still compressed or moved out.
        // Tables made before this have it from their next rebuild (an ALTER here would need the
        // table's owner, and the runner need not be).
        var script = """
            CREATE TABLE IF NOT EXISTS \(tables.quoted(name)) (
                device_stream_id text COLLATE "C" NOT NULL,
                state jsonb NOT NULL,
                last_position bigint NOT NULL,
                updated_at timestamptz NOT NULL\(columnsDDL(reducer.summaryColumns)),
                CONSTRAINT \(PostgresQuery.quoteIdentifier(tables.name(name) + "_pkey")) PRIMARY KEY (device_stream_id)
            ) WITH (toast_tuple_target = 8160);
            \(indexesDDL(name, reducer.summaryColumns))
            CREATE TABLE IF NOT EXISTS \(tables.quoted(sendsTable)) (
                send_stream_id text COLLATE "C" NOT NULL,
                device_stream_id text COLLATE "C" NOT NULL,
                request jsonb NOT NULL,
                CONSTRAINT \(PostgresQuery.quoteIdentifier(tables.name(sendsTable) + "_pkey")) PRIMARY KEY (send_stream_id)
            );
            CREATE INDEX IF NOT EXISTS \(PostgresQuery.quoteIdentifier(tables.name(sendsTable) + "_device"))
                ON \(tables.quoted(sendsTable)) (device_stream_id);

            """
        if hasDetail {
            script += """
                CREATE TABLE IF NOT EXISTS \(tables.quoted(rowsTable)) (
                    device_stream_id text COLLATE "C" NOT NULL,
                    row_key text COLLATE "C" NOT NULL\(columnsDDL(reducer.detailColumns)),
                    CONSTRAINT \(PostgresQuery.quoteIdentifier(tables.name(rowsTable) + "_pkey")) PRIMARY KEY (device_stream_id, row_key)
                );
                \(indexesDDL(rowsTable, reducer.detailColumns))
                """
        }
        try connection.run(script: "SET LOCAL client_min_messages = warning;\n" + script)
    }

    public func apply(_ records: [RecordedEvent], to tables: ProjectionTables, on connection: PostgresConnection) throws {
        let events = records.map(LoggedEvent.init)
        var fold = DeviceFold(reducer: reducer)
        try loadLinks(fold.unknownSendStreams(in: events), into: &fold, from: tables, on: connection)
        // Load the stored states of every device the batch touches, in one query.
        var devices = Set<String>()
        var probe = fold
        for event in events {
            if let (device, _) = try probe.route(event) { devices.insert(device) }
        }
        let stored = try storedStates(of: devices, in: tables, removing: false, decoder: fold.decoder, on: connection)
        for event in events {
            try fold.fold(event) { stored[$0] }
        }
        try write(fold, to: tables, replacing: true, on: connection)
    }

    /// Reads into `fold` the links of `sendStreams` that `tables` store (the others are sends this
    /// projection does not follow).
    func loadLinks(_ sendStreams: Set<String>, into fold: inout DeviceFold<Reducer>, from tables: ProjectionTables,
                   on connection: PostgresConnection) throws
    {
        guard !sendStreams.isEmpty else { return }
        let rows = try connection.query("""
            SELECT send_stream_id, device_stream_id, request::text FROM \(unescaped: tables.quoted(sendsTable))
            WHERE send_stream_id = ANY(\(PostgresQuery.textArrayLiteral(sendStreams.sorted()))::text[])
            """)
        for row in rows {
            let request = try fold.decoder.decode(SendRequested.self, from: Data(try row.decode(String.self, at: 2).utf8))
            fold.links[try row.decode(String.self, at: 0)] = SendLink(deviceStreamID: try row.decode(String.self, at: 1),
                                                                      request: request)
        }
    }

    /// The states `tables` store for `devices` (those it has). With `removing`, their rows (main
    /// and detail) are deleted by the same statements: the states are then the caller's alone,
    /// to write back once folded further.
    func storedStates(of devices: Set<String>, in tables: ProjectionTables, removing: Bool, decoder: JSONDecoder,
                      on connection: PostgresConnection) throws -> [String: Reducer.State]
    {
        guard !devices.isEmpty else { return [:] }
        let list = PostgresQuery.textArrayLiteral(devices.sorted())
        let rows = removing
            ? try connection.query("""
                DELETE FROM \(unescaped: tables.quoted(name)) WHERE device_stream_id = ANY(\(list)::text[])
                RETURNING device_stream_id, state::text
                """)
            : try connection.query("""
                SELECT device_stream_id, state::text FROM \(unescaped: tables.quoted(name))
                WHERE device_stream_id = ANY(\(list)::text[])
                """)
        if removing, hasDetail {
            try connection.execute(
                "DELETE FROM \(unescaped: tables.quoted(rowsTable)) WHERE device_stream_id = ANY(\(list)::text[])")
        }
        var stored: [String: Reducer.State] = [:]
        for row in rows {
            stored[try row.decode(String.self, at: 0)] = try decoder.decode(
                Reducer.State.self, from: Data(try row.decode(String.self, at: 1).utf8))
        }
        return stored
    }

    /// Writes the folded states, detail rows and new links; with `replacing`, first deletes the
    /// rows of the devices folded (an incremental step), otherwise the tables are empty (a rebuild).
    ///
    /// With `pool` (a rebuild's write into shadow tables), a long list's back half goes in on a
    /// session of its own (see ``copyMainRows(_:into:on:sessionsFrom:)``).
    func write(_ fold: DeviceFold<Reducer>, to tables: ProjectionTables, replacing: Bool,
               on connection: PostgresConnection, sessionsFrom pool: PostgresPool? = nil) throws {
        guard !fold.states.isEmpty || !fold.newLinks.isEmpty else { return }
        let devices = fold.states.keys.sorted()
        if replacing, !devices.isEmpty {
            let list = PostgresQuery.textArrayLiteral(devices)
            try connection.execute("DELETE FROM \(unescaped: tables.quoted(name)) WHERE device_stream_id = ANY(\(list)::text[])")
            if hasDetail {
                try connection.execute(
                    "DELETE FROM \(unescaped: tables.quoted(rowsTable)) WHERE device_stream_id = ANY(\(list)::text[])")
            }
        }
        let folded = devices.compactMap { device -> FoldedDevice? in
            guard let state = fold.states[device], let last = fold.lastApplied[device] else { return nil }
            return (device, state, last)
        }
        let detailRows = try copyMainRows(folded, into: tables.name(name), on: connection, sessionsFrom: pool)
        if hasDetail, !detailRows.isEmpty {
            try connection.copyFrom(table: tables.name(rowsTable),
                                    columns: ["device_stream_id", "row_key"] + reducer.detailColumns.map(\.name),
                                    rows: detailRows)
        }
        if !fold.newLinks.isEmpty {
            let encoder = LedgerJSON.makeEncoder()
            let links = try fold.newLinks.sorted { $0.key < $1.key }.map { stream, link -> [PostgresValue] in
                [.text(stream), .text(link.deviceStreamID),
                 .jsonb(String(decoding: try encoder.encode(link.request), as: UTF8.self))]
            }
            try connection.copyFrom(table: tables.name(sendsTable),
                                    columns: ["send_stream_id", "device_stream_id", "request"], rows: links)
        }
    }

    public func makeBulkBuilder() -> any ProjectionBulkBuilder { Builder(projection: self) }

    /// The rebuild's bulk path: one fold over the whole log, written once, or, when it holds too
    /// many devices, written in parts (``fold(_:holdingAtMost:spillingInto:on:sessionsFrom:)``).
    struct Builder: ProjectionBulkBuilder {
        let projection: DeviceStateProjection
        var fold: DeviceFold<Reducer>
        /// The hash values of the devices whose states were ever written out: a device whose hash
        /// is not here has no rows in the shadow tables, so the common case (no spill yet, or a
        /// new device) asks the server nothing. A device whose hash is here may have rows (not
        /// once they were read back, or for another device of the same hash), and is asked for.
        var spilled = Set<Int>()

        init(projection: DeviceStateProjection) {
            self.projection = projection
            fold = DeviceFold(reducer: projection.reducer)
        }

        mutating func fold(_ events: [RecordedEvent]) throws {
            for event in events { try fold.fold(LoggedEvent(event)) }
        }

        /// Before a spill this is ``fold(_:)``. After one, the chunk's links and devices that were
        /// written out are read back first, as an incremental step reads them, and the devices'
        /// rows are deleted as they are read, so the final write inserts every device once.
        /// A spill writes every state and new link held, in one transaction, and starts an empty
        /// fold: on a log where devices come and go (most of them: a device's events cluster
        /// around its install) few are read back.
        mutating func fold(_ records: [RecordedEvent], holdingAtMost limit: Int, spillingInto tables: ProjectionTables,
                           on connection: PostgresConnection, sessionsFrom pool: PostgresPool) throws -> Bool
        {
            guard !spilled.isEmpty else {
                try fold(records)
                return try spillIfOver(limit, into: tables, on: connection, sessionsFrom: pool)
            }
            let events = records.map(LoggedEvent.init)
            try projection.loadLinks(fold.unknownSendStreams(in: events), into: &fold, from: tables, on: connection)
            var written = Set<String>()
            var probe = fold
            for event in events {
                guard let (device, _) = try probe.route(event), fold.states.index(forKey: device) == nil,
                      spilled.contains(device.hashValue) else { continue }
                written.insert(device)
            }
            let stored = try projection.storedStates(of: written, in: tables, removing: true, decoder: fold.decoder,
                                                     on: connection)
            for event in events { try fold.fold(event) { stored[$0] } }
            return try spillIfOver(limit, into: tables, on: connection, sessionsFrom: pool)
        }

        /// Writes everything held and starts an empty fold, when more than `limit` devices are held:
        /// as the final write does, the back half of the devices on a session of its own.
        mutating func spillIfOver(_ limit: Int, into tables: ProjectionTables, on connection: PostgresConnection,
                                  sessionsFrom pool: PostgresPool) throws -> Bool
        {
            guard fold.states.count > limit else { return false }
            try connection.transaction { [fold, projection] in
                try projection.write(fold, to: tables, replacing: false, on: $0, sessionsFrom: pool)
            }
            for device in fold.states.keys { spilled.insert(device.hashValue) }
            fold = DeviceFold(reducer: projection.reducer)
            return true
        }

        func write(to tables: ProjectionTables, on connection: PostgresConnection) throws {
            try projection.write(fold, to: tables, replacing: false, on: connection)
        }

        func write(to tables: ProjectionTables, on connection: PostgresConnection, sessionsFrom pool: PostgresPool) throws {
            try projection.write(fold, to: tables, replacing: false, on: connection, sessionsFrom: pool)
        }
    }
}
