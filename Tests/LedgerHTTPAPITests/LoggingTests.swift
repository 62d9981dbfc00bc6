import AttributionLedger
import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerTestKit
import Logging
import NIOHTTP1
import Testing

/// What the server and the facade log, captured at trace level: internal errors by type and
/// SQLSTATE only, device and stream ids at debug level at most.
@Suite(.database) struct LoggingTests {
    static let device = "install-secret-7f3a"
    static let idfa = "DFC5A647-9043-4699-B2A5-76F03A97064B"

    /// Makes every append fail in the database with an error whose message names the stream and
    /// whose DETAIL quotes the row (as constraint errors do).
    static func failAppends(_ api: RunningAPI) async throws {
        _ = try await api.pool.query(PostgresQuery(sql: """
            CREATE FUNCTION test_refuse_appends() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              RAISE EXCEPTION 'refused append to % of \(device)', NEW.stream_id
                USING DETAIL = 'Failing row contains ' || NEW.data::text, HINT = 'forced by the test';
            END $$
            """))
        _ = try await api.pool.query(
            "CREATE TRIGGER a_test_refuse_appends BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION test_refuse_appends()")
    }

    @Test func anInternalErrorIsLoggedByTypeAndSQLStateOnly() async throws {
        let capture = LogCapture()
        try await withAPI(logger: capture.logger()) { api in
            try await Self.failAppends(api)
            let failed = try await api.send(.POST, "/v1/apps/\(appA)/events", json: batch(firstOpenJSON(device: Self.device, idfa: Self.idfa)))
            #expect(failed.status == 500)
            #expect(try apiError(failed.body)["code"] as? String == "internal")
        }
        let records = capture.records
        let logged = try #require(records.first { $0.level == .error && $0.message == "request failed" }, "\(records)")
        #expect(logged.metadata["db.sqlstate"] == "P0001")
        #expect(logged.metadata["error.type"]?.hasSuffix("PostgresError") == true)
        #expect(logged.metadata["http.route"] == "/v1/apps/{app}/events")
        for record in records where record.level > .debug {
            let text = record.description
            for secret in ["Failing row", "DETAIL", "forced by the test", "refused append", "INSERT", "SELECT", "ledger_append", Self.idfa,
                           Self.device] {
                #expect(!text.localizedCaseInsensitiveContains(secret), "\(secret) in \(text)")
            }
        }
    }

    @Test func deviceAndStreamIdsAreLoggedAtDebugLevelAtMost() async throws {
        let capture = LogCapture()
        let stream = try DeviceRef(app: appA, device: Self.device).streamID.rawValue
        try await withAPI(logger: capture.logger()) { api in
            let base = "/v1/apps/\(appA)/devices/\(Self.device)"
            let open = UUID()
            #expect(try await api.send(.POST, "/v1/apps/\(appA)/events",
                                       json: batch(firstOpenJSON(id: open, device: Self.device), skanRegisteredJSON(device: Self.device))).status == 200)
            for read in ["state", "skan", "attribution", "history", "history?types=FirstOpen"] {
                #expect(try await api.send(.GET, "\(base)/\(read)").status == 200, "\(read)")
            }
            // Refusals: an invalid event, an id conflict, another app's key, a missing route.
            #expect(try await api.send(.POST, "/v1/apps/\(appA)/events",
                                       json: batch(firstOpenJSON(device: Self.device, idfa: "not-a-uuid"))).status == 400)
            #expect(try await api.send(.POST, "/v1/apps/\(appA)/events",
                                       json: batch(skanRegisteredJSON(id: open, device: Self.device))).status == 409)
            #expect(try await api.send(.GET, "\(base)/state", key: keyB).status == 403)
            #expect(try await api.send(.GET, "\(base)/nothing").status == 404)
            #expect(try await api.send(.POST, "\(base)/erase", json: #"{"requested_by": "dsar-portal"}"#).status == 200)
            // A database failure whose message names the stream (of a device not erased, whose id
            // holds the first one's).
            try await Self.failAppends(api)
            #expect(try await api.send(.POST, "/v1/apps/\(appA)/events",
                                       json: batch(skanRegisteredJSON(device: Self.device + "-b"))).status == 500)
        }
        let records = capture.records
        #expect(records.contains { $0.level == .info && $0.message == "appended a batch" })
        for record in records where record.level > .debug {
            #expect(!record.description.contains(Self.device), "\(record)")
            #expect(!record.description.contains(stream), "\(record)")
        }
    }
}
