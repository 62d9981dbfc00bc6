import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerProjections
import LedgerStore

/// One batch of ``SKANPostbackProjection``: statuses and decodings folded in log order, rows
/// written with `COPY`, then the report recomputed for the (app, day) pairs and apps touched.
struct SKANProjectionStep {
    typealias Table = SKANPostbackProjection.Table
    /// A postback counted once: per app, as the ingestor finds repeats (on the stream
    /// `skan-<app-id>/<transaction-id>`).
    struct Key: Hashable {
        var appID: String
        /// `skan` or `aak`: the two systems' identifiers never claim each other's.
        var system: String
        var transactionID: String
        var sequenceIndex: Int
    }
    struct AppDay: Hashable {
        var app: String
        var day: String
    }

    let tables: ProjectionTables
    let connection: PostgresConnection
    let decoder = LedgerJSON.makeDecoder()
    var models: [String: SKANConversionModelConfigured] = [:]
    var claimed = Set<Key>()
    var postbackRows: [[PostgresValue]] = []
    var decodingRows: [[PostgresValue]] = []
    var dirtyApps = Set<String>()
    var dirtyDays = Set<AppDay>()

    init(tables: ProjectionTables, connection: PostgresConnection) {
        self.tables = tables
        self.connection = connection
    }

    func table(_ table: Table) -> String { tables.quoted(table.rawValue) }

    /// One postback event of either system, decoded and parsed.
    enum Postback {
        case skan(SKANPostbackReceived, SKANPostback?)
        case aak(AAKPostbackReceived, AAKPostback?)
    }

    mutating func apply(_ events: [RecordedEvent]) throws {
        var postbacks: [UUID: Postback] = [:]
        var apps = Set<String>()
        var transactions = Set<String>()
        for record in events {
            if record.type == SKANPostbackReceived.eventType {
                let event = try decoder.decode(SKANPostbackReceived.self, from: record.data)
                let postback = event.isRefused ? nil : try? SKANPostback.parse(Data(event.raw.utf8))
                if let postback {
                    apps.insert(postback.appID)
                    transactions.insert(postback.transactionID)
                }
                postbacks[record.id] = .skan(event, postback)
            } else if record.type == AAKPostbackReceived.eventType {
                let event = try decoder.decode(AAKPostbackReceived.self, from: record.data)
                let postback = try? AAKPostback.parse(Data(event.raw.utf8))
                if let postback {
                    apps.insert(postback.advertisedItemIdentifier)
                    transactions.insert(postback.postbackIdentifier)
                }
                postbacks[record.id] = .aak(event, postback)
            }
        }
        try loadModels(of: apps)
        try loadClaims(of: transactions)
        for record in events {
            if record.type == SKANConversionModelConfigured.eventType {
                try applyModel(try decoder.decode(SKANConversionModelConfigured.self, from: record.data), at: record)
            } else if case .skan(let event, let postback)? = postbacks[record.id] {
                applyPostback(event, postback, at: record)
            } else if case .aak(let event, let postback)? = postbacks[record.id] {
                applyAAKPostback(event, postback, at: record)
            }
        }
        try flush()
        try recomputeReport()
    }

    /// An AdAttributionKit postback: verified as the ingestor recorded it (the key its `kid`
    /// named), claimed on (app, `postback-identifier`, sequence) as SKAN's are on their transaction.
    mutating func applyAAKPostback(_ event: AAKPostbackReceived, _ postback: AAKPostback?, at record: RecordedEvent) {
        let day = String((LedgerTimestamp.format(event.receivedAt) ?? "0001-01-01").prefix(10))
        guard let postback else {
            postbackRows.append([.uuid(record.id), .int64(record.position), .timestamptz(event.receivedAt), .text(day),
                                 .text(event.forwardingNetwork), .text("refused")] + Array(repeating: .null, count: 10)
                                + [.bool(false), .text("aak"), .bool(false), .bool(event.development)])
            return
        }
        let status: SKANIngestResult.Status
        if event.verification != .valid {
            status = .invalidSignature
        } else if !claimed.insert(Key(appID: postback.advertisedItemIdentifier, system: "aak", transactionID: postback.postbackIdentifier,
                                      sequenceIndex: postback.postbackSequenceIndex)).inserted {
            status = .duplicate
        } else {
            status = postback.didWin ? .counted : .notWon
        }
        let decodable = status == .counted && event.unsignedCheck != .mismatch && !event.development
        postbackRows.append([
            .uuid(record.id), .int64(record.position), .timestamptz(event.receivedAt), .text(day), .text(event.forwardingNetwork),
            .text(status.rawValue), .text(postback.advertisedItemIdentifier), .text(postback.adNetworkIdentifier),
            .text(postback.sourceIdentifier), .null, .text(postback.postbackIdentifier),
            .int64(Int64(postback.postbackSequenceIndex)), .bool(postback.conversionType == .redownload),
            postback.conversionValue.map { .int64(Int64($0)) } ?? .null, postback.coarseConversionValue.map { .text($0) } ?? .null,
            .text(event.unsignedCheck.rawValue), .bool(decodable), .text("aak"), .bool(postback.isReEngagement),
            .bool(event.development),
        ])
        dirtyDays.insert(AppDay(app: postback.advertisedItemIdentifier, day: day))
        if decodable, let model = models[postback.advertisedItemIdentifier] {
            addDecoding(record.id, fine: postback.conversionValue, coarse: postback.coarseConversionValue,
                        sequenceIndex: postback.postbackSequenceIndex, model: model)
        }
    }

    mutating func applyPostback(_ event: SKANPostbackReceived, _ postback: SKANPostback?, at record: RecordedEvent) {
        let day = String((LedgerTimestamp.format(event.receivedAt) ?? "0001-01-01").prefix(10))
        guard let postback else {
            postbackRows.append([.uuid(record.id), .int64(record.position), .timestamptz(event.receivedAt), .text(day),
                                 .text(event.forwardingNetwork), .text("refused")] + Array(repeating: .null, count: 10)
                                + [.bool(false), .text("skan"), .bool(false), .bool(false)])
            return
        }
        // An event appended without the ingestor (no recorded verification) is verified here,
        // with Apple's key: the same answer on every replay.
        let verified = event.verification.map { $0 == .valid } ?? SKANSignatureVerifier.apple.isValid(postback)
        let status: SKANIngestResult.Status
        if !verified {
            status = .invalidSignature
        } else if !claimed.insert(Key(appID: postback.appID, system: "skan", transactionID: postback.transactionID,
                                      sequenceIndex: postback.postbackSequenceIndex)).inserted {
            status = .duplicate
        } else {
            status = postback.didWin == false ? .notWon : .counted
        }
        // An event stored without the ingestor has no recorded check: made here, the same way.
        let check = event.unsignedCheck ?? SKANUnsignedCheck.compare(postback, with: event.reportedValues).check
        let decodable = status == .counted && check != .mismatch
        postbackRows.append([
            .uuid(record.id), .int64(record.position), .timestamptz(event.receivedAt), .text(day), .text(event.forwardingNetwork),
            .text(status.rawValue), .text(postback.appID), .text(postback.adNetworkID), .text(postback.source),
            .text(postback.version.rawValue), .text(postback.transactionID), .int64(Int64(postback.postbackSequenceIndex)),
            .bool(postback.redownload), postback.conversionValue.map { .int64(Int64($0)) } ?? .null,
            postback.coarseConversionValue.map { .text($0) } ?? .null, .text(check.rawValue),
            .bool(decodable), .text("skan"), .bool(false), .bool(false),
        ])
        dirtyDays.insert(AppDay(app: postback.appID, day: day))
        if decodable, let model = models[postback.appID] {
            addDecoding(record.id, fine: postback.conversionValue, coarse: postback.coarseConversionValue,
                        sequenceIndex: postback.postbackSequenceIndex, model: model)
        }
    }

    mutating func applyModel(_ model: SKANConversionModelConfigured, at record: RecordedEvent) throws {
        try flush()
        let json = String(decoding: try LedgerJSON.makeEncoder().encode(model), as: UTF8.self)
        try connection.execute("""
            INSERT INTO \(unescaped: table(.models)) (app_id, model_version, model, position)
            VALUES (\(model.appID), \(model.modelVersion), \(PostgresValue.jsonb(json)), \(record.position)) ON CONFLICT DO NOTHING
            """)
        if let current = models[model.appID], current.modelVersion >= model.modelVersion { return }
        models[model.appID] = model
        dirtyApps.insert(model.appID)
        // Decode what the app has so far with the new version; earlier versions' decodings stay.
        let rows = try connection.query("""
            SELECT event_id, fine_value, coarse_value, sequence_index FROM \(unescaped: table(.postbacks))
            WHERE app_id = \(model.appID) AND decodable ORDER BY position
            """)
        for row in rows {
            addDecoding(try row.decode(UUID.self, at: 0), fine: try row.decode(Int?.self, at: 1),
                        coarse: try row.decode(String?.self, at: 2), sequenceIndex: try row.decode(Int.self, at: 3), model: model)
        }
    }

    mutating func addDecoding(_ eventID: UUID, fine: Int?, coarse: String?, sequenceIndex: Int,
                              model: SKANConversionModelConfigured) {
        let meaning = SKANConversionDecoder.decode(fine: fine, coarse: coarse, sequenceIndex: sequenceIndex, with: model)
        let revenue = meaning?.revenue
        decodingRows.append([
            .uuid(eventID), .int64(Int64(model.modelVersion)), .text(PostgresQuery.textArrayLiteral(meaning?.events ?? [])),
            revenue.map { .text($0.min.amountText) } ?? .null, revenue.map { .text($0.max.amountText) } ?? .null,
            revenue.map { .text($0.min.currency.rawValue) } ?? .null,
        ])
    }

    mutating func flush() throws {
        if !postbackRows.isEmpty {
            try connection.copyFrom(table: tables.name(Table.postbacks.rawValue), columns: SKANPostbackProjection.postbackColumns,
                                    rows: postbackRows)
            postbackRows = []
        }
        if !decodingRows.isEmpty {
            try connection.copyFrom(table: tables.name(Table.decodings.rawValue),
                                    columns: ["event_id", "model_version", "events", "revenue_min", "revenue_max", "currency"],
                                    rows: decodingRows)
            decodingRows = []
        }
    }

    mutating func loadModels(of apps: Set<String>) throws {
        let missing = apps.filter { models[$0] == nil }
        guard !missing.isEmpty else { return }
        let rows = try connection.query("""
            SELECT DISTINCT ON (app_id) model::text FROM \(unescaped: table(.models))
            WHERE app_id = ANY(\(PostgresQuery.textArrayLiteral(missing.sorted()))::text[])
            ORDER BY app_id, model_version DESC
            """)
        for row in rows {
            let model = try decoder.decode(SKANConversionModelConfigured.self, from: Data(try row.decode(String.self, at: 0).utf8))
            models[model.appID] = model
        }
    }

    mutating func loadClaims(of transactions: Set<String>) throws {
        guard !transactions.isEmpty else { return }
        let rows = try connection.query("""
            SELECT app_id, system, transaction_id, sequence_index FROM \(unescaped: table(.postbacks))
            WHERE status IN ('counted', 'not_won')
              AND transaction_id = ANY(\(PostgresQuery.textArrayLiteral(transactions.sorted()))::text[])
            """)
        for row in rows {
            claimed.insert(Key(appID: try row.decode(String.self, at: 0), system: try row.decode(String.self, at: 1),
                               transactionID: try row.decode(String.self, at: 2), sequenceIndex: try row.decode(Int.self, at: 3)))
        }
    }

    /// Deletes and recomputes the report rows of the touched apps (all days) and (app, day) pairs.
    func recomputeReport() throws {
        guard !dirtyApps.isEmpty || !dirtyDays.isEmpty else { return }
        let days = dirtyDays.sorted { ($0.app, $0.day) < ($1.app, $1.day) }
        let apps = PostgresQuery.textArrayLiteral(dirtyApps.sorted())
        let dayApps = PostgresQuery.textArrayLiteral(days.map(\.app))
        let dayDays = PostgresQuery.textArrayLiteral(days.map(\.day))
        func touched(_ query: inout PostgresQuery) {
            query.append(sql: "(p.app_id = ANY(")
            query.append(bind: apps)
            query.append(sql: "::text[]) OR (p.app_id, p.day) IN (SELECT a, d::date FROM unnest(")
            query.append(bind: dayApps)
            query.append(sql: "::text[], ")
            query.append(bind: dayDays)
            query.append(sql: "::text[]) AS u(a, d)))")
        }
        let latest = "(SELECT max(m.model_version) FROM \(table(.models)) AS m WHERE m.app_id = p.app_id)"
        for target in [Table.daily, .conversions, .revenue] {
            var delete = PostgresQuery(sql: "DELETE FROM \(table(target)) AS p WHERE ")
            touched(&delete)
            try connection.execute(delete)
        }
        var daily = PostgresQuery(sql: """
            INSERT INTO \(table(.daily)) SELECT p.app_id, p.system, p.network, p.ad_network_id, p.source, p.day,
                count(*) FILTER (WHERE p.status = 'counted' AND p.sequence_index = 0 AND NOT p.redownload AND NOT p.reengagement),
                count(*) FILTER (WHERE p.status = 'counted' AND p.sequence_index = 0 AND p.redownload AND NOT p.reengagement),
                count(*) FILTER (WHERE p.status = 'counted' AND p.sequence_index = 0 AND p.reengagement),
                count(*) FILTER (WHERE p.status = 'counted'), count(*) FILTER (WHERE p.status = 'duplicate'),
                count(*) FILTER (WHERE p.status = 'not_won'), count(*) FILTER (WHERE p.status = 'invalid_signature'),
                count(*) FILTER (WHERE p.status = 'counted' AND p.unsigned_check = 'mismatch'), \(latest)
            FROM \(table(.postbacks)) AS p WHERE p.app_id IS NOT NULL AND NOT p.development AND
            """)
        touched(&daily)
        daily.append(sql: " GROUP BY 1, 2, 3, 4, 5, 6")
        try connection.execute(daily)
        let decoded = """
            FROM \(table(.postbacks)) AS p JOIN \(table(.decodings)) AS d ON d.event_id = p.event_id AND d.model_version = \(latest)
            """
        var conversions = PostgresQuery(sql: """
            INSERT INTO \(table(.conversions))
            SELECT p.app_id, p.system, p.network, p.ad_network_id, p.source, p.day, p.reengagement, e.event, count(*)
            \(decoded) CROSS JOIN LATERAL unnest(d.events) AS e(event) WHERE p.status = 'counted' AND NOT p.development AND
            """)
        touched(&conversions)
        conversions.append(sql: " GROUP BY 1, 2, 3, 4, 5, 6, 7, 8")
        try connection.execute(conversions)
        var revenue = PostgresQuery(sql: """
            INSERT INTO \(table(.revenue))
            SELECT p.app_id, p.system, p.network, p.ad_network_id, p.source, p.day, p.reengagement, d.currency,
                sum(d.revenue_min), sum(d.revenue_max)
            \(decoded) WHERE p.status = 'counted' AND NOT p.development AND d.currency IS NOT NULL AND
            """)
        touched(&revenue)
        revenue.append(sql: " GROUP BY 1, 2, 3, 4, 5, 6, 7, 8")
        try connection.execute(revenue)
    }
}
