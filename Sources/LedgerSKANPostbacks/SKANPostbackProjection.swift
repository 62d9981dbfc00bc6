import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerProjections
import LedgerStore

/// Apple's ad-attribution postbacks, SKAdNetwork and AdAttributionKit, verified, deduplicated and
/// decoded, with installs, re-engagements, conversions and revenue per app, system (`skan` or
/// `aak`), network, ad network, source (source identifier or campaign) and day.
///
/// Tables (`skan_postbacks` is the name; a rebuild builds the same under `__shadow` names):
/// - `skan_postbacks`: one row per `SKANPostbackReceived` or `AAKPostbackReceived` (`system`
///   says which), with its status: `counted`,
///   `duplicate` (same app, `transaction-id` and `postback-sequence-index` as an earlier
///   verified one, counted once), `not_won` (`did-win` false), `invalid_signature`, `refused`;
///   `decodable` is false when the network's report contradicts an unsigned value (the install
///   counts, its conversion value is not trusted). AdAttributionKit rows use the
///   `postback-identifier` as `transaction_id`; `reengagement` marks re-engagement conversions,
///   `development` postbacks signed with Apple's development keys (kept, never in the report).
/// - `skan_postbacks_models`: every version of every app's conversion model.
/// - `skan_postbacks_decodings`: each counted postback decoded with every model version the app
///   had since it arrived: a new version adds decodings, old ones stay.
/// - `skan_postbacks_daily`, `_conversions`, `_revenue`: the report, decoded with each app's newest
///   model. A new model version recomputes the app's report. Re-engagements are counted apart
///   from installs and redownloads, and their conversions and revenue apart (`reengagement`).
///
/// The day is the UTC date the ledger received the postback (postbacks carry no time).
public struct SKANPostbackProjection: Projection {
    /// The projection.
    public init() {}

    /// `skan_postbacks`.
    public let name = "skan_postbacks"
    /// Raise with every change to what it computes.
    /// 2: a later postback's fine value is set aside and flagged, not a refusal; events stored
    /// without the ingestor get their unsigned check here. 3: repeats are per app, as the
    /// ingestor finds them. 4: AdAttributionKit postbacks, the `system` dimension, re-engagements
    /// apart.
    public let version = 4
    /// Postbacks of both systems and conversion models.
    public var eventTypes: [String] {
        [SKANConversionModelConfigured.eventType, SKANPostbackReceived.eventType, AAKPostbackReceived.eventType]
    }
    /// Its tables, the postbacks first.
    public var tableNames: [String] { Table.allCases.map(\.rawValue) }

    enum Table: String, CaseIterable {
        case postbacks = "skan_postbacks"
        case models = "skan_postbacks_models"
        case decodings = "skan_postbacks_decodings"
        case daily = "skan_postbacks_daily"
        case conversions = "skan_postbacks_conversions"
        case revenue = "skan_postbacks_revenue"
    }

    static let postbackColumns = [
        "event_id", "position", "received_at", "day", "network", "status", "app_id", "ad_network_id", "source", "version",
        "transaction_id", "sequence_index", "redownload", "fine_value", "coarse_value", "unsigned_check", "decodable",
        "system", "reengagement", "development",
    ]

    public func createTables(_ tables: ProjectionTables, on connection: PostgresConnection) throws {
        func t(_ table: Table) -> String { tables.quoted(table.rawValue) }
        func index(_ table: Table, _ suffix: String) -> String { PostgresQuery.quoteIdentifier(tables.name(table.rawValue) + suffix) }
        let dims = """
            app_id text COLLATE "C" NOT NULL, system text NOT NULL, network text NOT NULL, ad_network_id text NOT NULL,
            source text NOT NULL, day date NOT NULL
            """
        try connection.run(script: """
            SET LOCAL client_min_messages = warning;
            CREATE TABLE IF NOT EXISTS \(t(.postbacks)) (
                event_id uuid PRIMARY KEY, position bigint NOT NULL, received_at timestamptz NOT NULL, day date NOT NULL,
                network text NOT NULL, status text NOT NULL, app_id text COLLATE "C", ad_network_id text, source text,
                version text, transaction_id text COLLATE "C", sequence_index integer, redownload boolean,
                fine_value integer, coarse_value text, unsigned_check text, decodable boolean NOT NULL,
                system text NOT NULL, reengagement boolean NOT NULL, development boolean NOT NULL
            );
            CREATE UNIQUE INDEX IF NOT EXISTS \(index(.postbacks, "_once")) ON \(t(.postbacks)) (app_id, system, transaction_id, sequence_index)
                WHERE status IN ('counted', 'not_won');
            CREATE INDEX IF NOT EXISTS \(index(.postbacks, "_app_day")) ON \(t(.postbacks)) (app_id, day);
            CREATE TABLE IF NOT EXISTS \(t(.models)) (
                app_id text COLLATE "C" NOT NULL, model_version integer NOT NULL, model jsonb NOT NULL, position bigint NOT NULL,
                PRIMARY KEY (app_id, model_version)
            );
            CREATE TABLE IF NOT EXISTS \(t(.decodings)) (
                event_id uuid NOT NULL, model_version integer NOT NULL, events text[] NOT NULL,
                revenue_min numeric, revenue_max numeric, currency text, PRIMARY KEY (event_id, model_version)
            );
            CREATE TABLE IF NOT EXISTS \(t(.daily)) (
                \(dims), installs bigint NOT NULL, redownloads bigint NOT NULL, reengagements bigint NOT NULL,
                postbacks bigint NOT NULL, duplicates bigint NOT NULL, not_won bigint NOT NULL,
                invalid_signatures bigint NOT NULL, unsigned_mismatches bigint NOT NULL, model_version integer,
                PRIMARY KEY (app_id, system, network, ad_network_id, source, day)
            );
            CREATE TABLE IF NOT EXISTS \(t(.conversions)) (
                \(dims), reengagement boolean NOT NULL, event text NOT NULL, conversions bigint NOT NULL,
                PRIMARY KEY (app_id, system, network, ad_network_id, source, day, reengagement, event)
            );
            CREATE TABLE IF NOT EXISTS \(t(.revenue)) (
                \(dims), reengagement boolean NOT NULL, currency text NOT NULL, revenue_min numeric NOT NULL,
                revenue_max numeric NOT NULL, PRIMARY KEY (app_id, system, network, ad_network_id, source, day, reengagement, currency)
            );
            """)
    }

    public func apply(_ events: [RecordedEvent], to tables: ProjectionTables, on connection: PostgresConnection) throws {
        var step = SKANProjectionStep(tables: tables, connection: connection)
        try step.apply(events)
    }

    public func makeBulkBuilder() -> any ProjectionBulkBuilder { Builder(projection: self) }

    /// A rebuild replays the log through ``apply(_:to:on:)`` into the empty shadow tables:
    /// postbacks are few next to device events, and one code path keeps the two equal.
    struct Builder: ProjectionBulkBuilder {
        let projection: SKANPostbackProjection
        var events: [RecordedEvent] = []

        mutating func fold(_ events: [RecordedEvent]) throws { self.events += events }

        func write(to tables: ProjectionTables, on connection: PostgresConnection) throws {
            for start in stride(from: 0, to: events.count, by: 5000) {
                try projection.apply(Array(events[start..<min(start + 5000, events.count)]), to: tables, on: connection)
            }
        }
    }
}
