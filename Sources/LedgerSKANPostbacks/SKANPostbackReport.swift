import Foundation
import LedgerPostgres

/// One row of the SKAN report: an app's postbacks of one system from one network, ad network and
/// source on one day.
public struct SKANDailyReport: Sendable, Hashable {
    /// Apple's app id.
    public var appID: String
    /// Which system sent the postbacks: `skan` (SKAdNetwork) or `aak` (AdAttributionKit).
    public var system: String
    /// The network that forwarded the postbacks.
    public var network: String
    /// `ad-network-id`.
    public var adNetworkID: String
    /// `source-identifier` (4.0) or `campaign-id`.
    public var source: String
    /// The UTC day the postbacks were received, `YYYY-MM-DD`.
    public var day: String
    /// First postbacks counted, not redownloads.
    public var installs: Int64
    /// First postbacks counted that are redownloads.
    public var redownloads: Int64
    /// First postbacks counted that are re-engagements (AdAttributionKit): never installs.
    public var reengagements: Int64
    /// Postbacks counted (all sequences).
    public var postbacks: Int64
    /// Repeats recorded and not counted again.
    public var duplicates: Int64
    /// Verified, unique, `did-win` false.
    public var notWon: Int64
    /// Signatures that did not verify.
    public var invalidSignatures: Int64
    /// Counted postbacks whose unsigned values the network's report contradicts (not decoded).
    public var unsignedMismatches: Int64
    /// The model version the conversions and revenue were decoded with (nil: no model yet).
    public var modelVersion: Int?
    /// Conversions of installs and redownloads by the app's event name.
    public var conversions: [String: Int64]
    /// Revenue of installs and redownloads by currency.
    public var revenue: [String: RevenueTotal]
    /// Conversions of re-engagements by event name, apart from ``conversions``.
    public var reengagementConversions: [String: Int64] = [:]
    /// Revenue of re-engagements by currency, apart from ``revenue``.
    public var reengagementRevenue: [String: RevenueTotal] = [:]

    /// A revenue total: the sums of the decoded buckets' lower and upper bounds.
    public struct RevenueTotal: Sendable, Hashable {
        /// The sum of the lower bounds, decimal text.
        public var min: String
        /// The sum of the upper bounds, decimal text.
        public var max: String
    }

    var key: [String] { [appID, system, network, adNetworkID, source, day] }
}

extension SKANPostbackProjection {
    /// The report of `appID`, by system, network, ad network, source and day.
    public func report(appID: String, on connection: PostgresConnection) throws -> [SKANDailyReport] {
        var rows = try connection.query("""
            SELECT system, network, ad_network_id, source, day::text, installs, redownloads, reengagements, postbacks,
                   duplicates, not_won, invalid_signatures, unsigned_mismatches, model_version
            FROM skan_postbacks_daily WHERE app_id = \(appID) ORDER BY day, system, network, ad_network_id, source
            """).map { row in
            SKANDailyReport(
                appID: appID, system: try row.decode(String.self, at: 0), network: try row.decode(String.self, at: 1),
                adNetworkID: try row.decode(String.self, at: 2), source: try row.decode(String.self, at: 3),
                day: try row.decode(String.self, at: 4), installs: try row.decode(Int64.self, at: 5),
                redownloads: try row.decode(Int64.self, at: 6), reengagements: try row.decode(Int64.self, at: 7),
                postbacks: try row.decode(Int64.self, at: 8), duplicates: try row.decode(Int64.self, at: 9),
                notWon: try row.decode(Int64.self, at: 10), invalidSignatures: try row.decode(Int64.self, at: 11),
                unsignedMismatches: try row.decode(Int64.self, at: 12), modelVersion: try row.decode(Int?.self, at: 13),
                conversions: [:], revenue: [:])
        }
        func index(_ key: [String]) -> Int? { rows.firstIndex { $0.key == key } }
        for row in try connection.query("""
            SELECT system, network, ad_network_id, source, day::text, reengagement, event, conversions
            FROM skan_postbacks_conversions WHERE app_id = \(appID)
            """) {
            let key = [appID] + (0..<5).compactMap { try? row.decode(String.self, at: $0) }
            guard let at = index(key) else { continue }
            let (event, count) = (try row.decode(String.self, at: 6), try row.decode(Int64.self, at: 7))
            if try row.decode(Bool.self, at: 5) { rows[at].reengagementConversions[event] = count } else { rows[at].conversions[event] = count }
        }
        for row in try connection.query("""
            SELECT system, network, ad_network_id, source, day::text, reengagement, currency, revenue_min::text, revenue_max::text
            FROM skan_postbacks_revenue WHERE app_id = \(appID)
            """) {
            let key = [appID] + (0..<5).compactMap { try? row.decode(String.self, at: $0) }
            guard let at = index(key) else { continue }
            let total = SKANDailyReport.RevenueTotal(min: try row.decode(String.self, at: 7), max: try row.decode(String.self, at: 8))
            if try row.decode(Bool.self, at: 5) {
                rows[at].reengagementRevenue[try row.decode(String.self, at: 6)] = total
            } else {
                rows[at].revenue[try row.decode(String.self, at: 6)] = total
            }
        }
        return rows
    }

    /// How one postback was decoded, by model version (every version the app had since it arrived).
    public func decodings(of eventID: UUID, on connection: PostgresConnection) throws -> [Int: [String]] {
        var result: [Int: [String]] = [:]
        for row in try connection.query("""
            SELECT model_version, array_to_json(events)::text FROM skan_postbacks_decodings WHERE event_id = \(eventID)
            """) {
            result[try row.decode(Int.self, at: 0)] = try JSONDecoder().decode([String].self, from: Data(try row.decode(String.self, at: 1).utf8))
        }
        return result
    }

    /// The status the projection gave a postback (`counted`, `duplicate`, `not_won`,
    /// `invalid_signature`, `refused`), or nil if it has not seen it.
    public func status(of eventID: UUID, on connection: PostgresConnection) throws -> String? {
        try connection.query("SELECT status FROM skan_postbacks WHERE event_id = \(eventID)").first?.decode(String.self, at: 0)
    }
}
