import Foundation
import LedgerDomain
import LedgerPostgres

/// What the log records about which app a stream belongs to: the reads behind the tenant checks
/// of every per-app read and write, and behind `ledger tenancy check`.
extension EventStore {
    /// The app recorded on the first event of `stream` (its metadata's `app_id`): the app the
    /// stream belongs to. Nil when the stream does not exist or its first event names no app.
    public func recordedApp(ofStream stream: String) async throws -> String? {
        try await pool.withConnection { try Self.recordedApp(ofStream: stream, on: $0) }
    }

    /// ``recordedApp(ofStream:)`` on a connection the caller holds (inside its transaction, if open).
    public static func recordedApp(ofStream stream: String, on connection: PostgresConnection) throws -> String? {
        try recordedApps(ofStreams: [stream], on: connection)[stream]
    }

    /// The app each of `streams` was started by (its first event's metadata `app_id`), for those
    /// that have events and name one: one statement, so that checking a batch's streams costs one
    /// round trip, not one per stream.
    public static func recordedApps(ofStreams streams: [String], on connection: PostgresConnection) throws -> [String: String] {
        guard !streams.isEmpty else { return [:] }
        var query = PostgresQuery(sql: "SELECT stream_id, metadata ->> 'app_id' FROM events WHERE stream_id = ANY(")
        query.append(bind: PostgresQuery.textArrayLiteral(streams))
        query.append(sql: "::text[]) AND stream_version = 1 AND metadata ->> 'app_id' IS NOT NULL")
        var apps: [String: String] = [:]
        for row in try connection.query(query, prepare: true) {
            apps[try row.decode(String.self, at: 0)] = try row.decode(String.self, at: 1)
        }
        return apps
    }

    /// How many events streams whose id starts with `prefix` recorded since `since` (by
    /// `recorded_at`). The prefix is matched as text, not as a pattern (`_` and `%` are plain).
    public func countEvents(inStreamsWithPrefix prefix: String, recordedSince since: Date) async throws -> Int {
        let upper = Self.prefixUpperBound(prefix)
        return try await pool.withConnection { connection in
            Int(try connection.query("""
                SELECT count(*) FROM events
                WHERE stream_id >= \(prefix) AND stream_id < \(upper) AND recorded_at >= \(since)
                """).single().decode(Int64.self, at: 0))
        }
    }

    /// The smallest text above every text that starts with `prefix` (stream ids are collated "C"
    /// and ASCII, so bumping the last character is enough).
    static func prefixUpperBound(_ prefix: String) -> String {
        var bytes = Array(prefix.utf8)
        while let last = bytes.last, last == 0x7F { bytes.removeLast() }
        guard let last = bytes.popLast() else { return "\u{7F}" }
        bytes.append(last + 1)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The per-app streams (`device-`, `decision-`, `skan-`) named without the `/` between app
    /// and device (see `StreamID.isLegacyPerApp`), with the apps their events record.
    ///
    /// Such a name does not say where the app id ends, so the ledger never addresses these
    /// streams by app: their events stay in the log, verifiable and exportable, and a device
    /// continues in its `device-<app>/<device>` stream. A stream whose events record more than
    /// one app held two tenants' events under one name.
    public func legacyPerAppStreams() async throws -> [LegacyStream] {
        let perApp = StreamCategory.allCases.filter { $0 != .send }.map { $0.rawValue + "-%" }
        let rows = try await pool.query("""
            SELECT stream_id, count(*), min(recorded_at), max(recorded_at),
                   array_to_string(array_agg(DISTINCT metadata ->> 'app_id') FILTER (WHERE metadata ? 'app_id'), ',')
            FROM events
            WHERE stream_id LIKE ANY(\(PostgresQuery.textArrayLiteral(perApp))::text[])
              AND strpos(stream_id, '/') = 0 AND stream_id NOT LIKE \(StreamID.skanModelPrefix + "%")
            GROUP BY stream_id ORDER BY stream_id
            """)
        return try rows.map { row in
            let apps = try row.decode(String?.self, at: 4) ?? ""
            return LegacyStream(
                streamID: try row.decode(String.self, at: 0), eventCount: Int(try row.decode(Int64.self, at: 1)),
                firstRecordedAt: try row.decode(Date.self, at: 2), lastRecordedAt: try row.decode(Date.self, at: 3),
                recordedApps: apps.isEmpty ? [] : apps.split(separator: ",").map(String.init).sorted())
        }
    }
}

/// A per-app stream named before the `/` separator (``EventStore/legacyPerAppStreams()``).
public struct LegacyStream: Sendable, Hashable, Codable {
    /// The stream id, e.g. `device-com.acme.game-lite-x`.
    public var streamID: String
    /// Its events.
    public var eventCount: Int
    /// When its first event was recorded.
    public var firstRecordedAt: Date
    /// When its last event was recorded.
    public var lastRecordedAt: Date
    /// The apps its events' metadata name (`app_id`), sorted.
    public var recordedApps: [String]

    /// Whether its events record more than one app: two tenants wrote under one name.
    public var mixesApps: Bool { recordedApps.count > 1 }

    /// The ways the name splits into a known app and a device: every `(app, rest)` where `app` is
    /// one of `knownApps` and the name is `<category>-<app>-<rest>`. More than one split means
    /// the name is ambiguous between those apps.
    public func splits(knownApps: Set<String>) -> [(app: String, rest: String)] {
        guard let dash = streamID.firstIndex(of: "-") else { return [] }
        let body = streamID[streamID.index(after: dash)...]
        var found: [(app: String, rest: String)] = []
        var index = body.startIndex
        while let next = body[index...].firstIndex(of: "-") {
            let app = String(body[body.startIndex..<next])
            if knownApps.contains(app) { found.append((app, String(body[body.index(after: next)...]))) }
            index = body.index(after: next)
        }
        return found
    }

    enum CodingKeys: String, CodingKey {
        case streamID = "stream_id"
        case eventCount = "event_count"
        case firstRecordedAt = "first_recorded_at"
        case lastRecordedAt = "last_recorded_at"
        case recordedApps = "recorded_apps"
    }
}

/// A read or write touched a stream or event recorded for another app than the caller's: refused
/// whole, nothing returned and nothing written. Its description names no stream or device (they
/// may identify a person); the fields are for the caller's own handling.
public struct TenancyViolation: Error, Sendable, Hashable, CustomStringConvertible {
    /// The stream touched.
    public var stream: String
    /// The caller's app.
    public var app: String
    /// The app the log records for what was touched.
    public var recordedApp: String

    /// Creates the error.
    public init(stream: String, app: String, recordedApp: String) {
        self.stream = stream
        self.app = app
        self.recordedApp = recordedApp
    }

    /// One line without the stream: `a stream recorded for another app than com.example.game [recorded_app_matches]`.
    public var description: String { "a stream recorded for another app than \(app) [recorded_app_matches]" }
}
