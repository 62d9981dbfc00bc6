import Foundation
import LedgerFolds
import LedgerPostgres

/// Where ``AdServicesTokenReducer``'s states are stored: counts per device, one row per token
/// (its `expires_at` and `state` indexed, for the tokens about to expire unanswered).
extension AdServicesTokenReducer: DeviceStateStorage {
    public var summaryColumns: [ProjectionColumn] {
        [ProjectionColumn("tokens", "integer"), ProjectionColumn("waiting", "integer")]
    }

    public func summary(of state: State) -> [PostgresValue] {
        [.int64(Int64(state.tokens.count)), .int64(Int64(state.tokens.values.filter { $0.state == .waiting }.count))]
    }

    public var detailColumns: [ProjectionColumn] {
        [
            ProjectionColumn("issued_at", "timestamptz"),
            ProjectionColumn("expires_at", "timestamptz", indexed: true),
            ProjectionColumn("attempts", "integer"),
            ProjectionColumn("last_status", "integer"),
            ProjectionColumn("last_answer_at", "timestamptz"),
            ProjectionColumn("state", "text", indexed: true),
            ProjectionColumn("next_retry_at", "timestamptz"),
        ]
    }

    public func detailRows(of state: State) -> [ProjectionRow] {
        state.tokens.values.sorted { $0.digest < $1.digest }.map { token in
            ProjectionRow(key: token.digest, values: [
                .timestamptz(token.issuedAt), .timestamptz(token.expiresAt), .int64(Int64(token.attempts)),
                token.lastStatus.map { .int64(Int64($0)) } ?? .null, token.lastAnswerAt.map { .timestamptz($0) } ?? .null,
                .text(token.state.rawValue), token.nextRetryAt.map { .timestamptz($0) } ?? .null,
            ])
        }
    }
}

/// The AdServices token projection: ``AdServicesTokenReducer``'s states in `adservices_tokens`,
/// one row per token in `adservices_tokens_rows`.
public typealias AdServicesTokenProjection = DeviceStateProjection<AdServicesTokenReducer>

extension DeviceStateProjection where Reducer == AdServicesTokenReducer {
    /// A token still waiting for Apple's answer.
    public struct ExpiringToken: Sendable, Hashable {
        /// The device.
        public var deviceStreamID: String
        /// The token's digest.
        public var digest: String
        /// When it expires.
        public var expiresAt: Date
        /// Lookups tried so far.
        public var attempts: Int
    }

    /// Tokens still unanswered that expire within `window` after `now` (already expired ones are
    /// not listed): the ones to look up before it is too late.
    public func tokensExpiringUnanswered(within window: TimeInterval, now: Date, on connection: PostgresConnection) throws
        -> [ExpiringToken]
    {
        try connection.query("""
            SELECT device_stream_id, row_key, expires_at, attempts FROM \(identifier: rowsTable)
            WHERE state = 'waiting' AND expires_at > \(now) AND expires_at <= \(now.addingTimeInterval(window))
            ORDER BY expires_at, device_stream_id, row_key
            """).map { row in
            ExpiringToken(deviceStreamID: try row.decode(String.self, at: 0), digest: try row.decode(String.self, at: 1),
                          expiresAt: try row.decode(Date.self, at: 2), attempts: try row.decode(Int.self, at: 3))
        }
    }
}
