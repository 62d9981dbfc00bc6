import Foundation
import LedgerDomain
import LedgerPostgres

extension EventStore {
    /// The events of every stream `selection` names, in the log's order: what a replay folds.
    ///
    /// ``StreamSelection/deviceHistory(_:)`` is everything the ledger holds about one device, the
    /// auditor's replay and the projections' "as of": with `asOf`, only what the ledger held at
    /// that position or time. Events come in (transaction id, position) order, the order every
    /// projection applies them in.
    ///
    /// - Parameters:
    ///   - selection: the streams to read.
    ///   - types: only these event types (all when empty).
    ///   - asOf: what the ledger held then.
    public func readHistory(of selection: StreamSelection, types: [String] = [], asOf: AsOf? = nil) async throws
        -> [RecordedEvent]
    {
        try await pool.withConnection { [privacy] connection in
            try Self.readHistory(of: selection, types: types, asOf: asOf, privacy: privacy, on: connection)
        }
    }

    /// ``readHistory(of:types:asOf:)`` on a connection the caller holds; personal fields are opened
    /// with `privacy` (by default ``PersonalDataProtection/processDefault``).
    /// - Throws: ``EventStoreError/invalidEvent(index:eventType:field:rule:message:)`` (rule
    ///   `plain_identifier`) when a link's type or field is not a plain name, before any SQL runs.
    public static func readHistory(of selection: StreamSelection, types: [String] = [], asOf: AsOf? = nil,
                                   privacy: PersonalDataProtection = .processDefault,
                                   on connection: PostgresConnection) throws -> [RecordedEvent] {
        var events = try connection.query(historyQuery(of: selection, types: types, asOf: asOf)).map(record)
        try privacy.reveal(&events, on: connection)
        return events
    }

    /// The statement ``readHistory(of:types:asOf:privacy:on:)`` sends.
    static func historyQuery(of selection: StreamSelection, types: [String], asOf: AsOf?) throws -> PostgresQuery {
        // One array of stream ids, the linked streams' looked up by their own index first: an
        // `OR stream_id IN (…)` instead made the planner walk the whole log in global order,
        // which cost a history read in proportion to the log (`ledger-bench growth`).
        var query = PostgresQuery(sql: "SELECT \(columns) FROM events WHERE stream_id = ANY(")
        query.append(bind: PostgresQuery.textArrayLiteral(selection.streams))
        query.append(sql: "::text[]")
        for link in selection.linked {
            // Written as literals, not bound, so the planner matches the expression index on
            // `data ->> 'device_stream_id'` (schema/0002) and its type.
            guard isValidTypeName(link.eventType), isPlainField(link.field) else {
                throw EventStoreError.invalidEvent(
                    index: 0, eventType: link.eventType, field: link.field, rule: "plain_identifier",
                    message: "A linked stream's event type and field must be plain names.")
            }
            query.append(sql: """
                 || ARRAY(SELECT stream_id::text FROM events WHERE event_type = '\(link.eventType)' \
                AND data ->> '\(link.field)' = 
                """)
            query.append(bind: link.value)
            query.append(sql: ")")
        }
        query.append(sql: ")")
        if !types.isEmpty {
            query.append(sql: " AND event_type = ANY(")
            query.append(bind: PostgresQuery.textArrayLiteral(types))
            query.append(sql: "::text[])")
        }
        appendAsOf(asOf, to: &query)
        query.append(sql: " ORDER BY events.transaction_id, events.position")
        return query
    }

    /// Lowercase ASCII letters, digits and `_`, starting with a letter: safe inside a SQL literal.
    static func isPlainField(_ name: String) -> Bool {
        guard let first = name.utf8.first, (0x61...0x7A).contains(first), name.utf8.count <= 63 else { return false }
        return name.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F }
    }
}
