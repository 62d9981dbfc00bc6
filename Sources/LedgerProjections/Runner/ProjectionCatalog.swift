import Foundation
import LedgerFolds
import LedgerPostgres
import LedgerStore

/// The projections the ledger runs, and their status.
public enum ProjectionCatalog {
    /// Every standard projection, by name order.
    public static let standard: [any Projection] = [
        AdServicesTokenProjection(AdServicesTokenReducer()),
        BranchIdentityProjection(BranchIdentityReducer()),
        GoogleObligationProjection(GoogleObligationReducer()),
        SKANDeviceProjection(SKANDeviceReducer()),
    ]

    /// The standard projection called `name`.
    public static func named(_ name: String) throws(ProjectionError) -> any Projection {
        guard let projection = standard.first(where: { $0.name == name }) else { throw .unknownProjection(name) }
        return projection
    }
}

/// A projection's status, as `ledger projections status` shows it.
public struct ProjectionStatus: Sendable, Hashable, Codable {
    /// The name.
    public var name: String
    /// The version of the code running now.
    public var codeVersion: Int
    /// The version its tables were built with (nil: never prepared).
    public var builtWithVersion: Int?
    /// The checkpoint position.
    public var position: Int64
    /// The checkpoint's transaction id.
    public var transactionID: UInt64
    /// Events it has applied since its last (re)build.
    public var eventsApplied: Int64
    /// Events of its types in the log that it has not applied yet.
    public var eventsBehind: Int64
    /// Seconds since the oldest event it has not applied was recorded (0 when caught up).
    public var secondsBehind: Double
    /// When it last swapped in a rebuild.
    public var rebuiltAt: Date?

    /// The tables were built by other code than is running: rebuild.
    public var isStale: Bool { builtWithVersion != codeVersion }

    /// The status of each projection, read on `connection`.
    public static func read(_ projections: [any Projection], on connection: PostgresConnection) throws -> [ProjectionStatus] {
        let rows = Dictionary(uniqueKeysWithValues: try CheckpointTable.readAll(on: connection).map { ($0.name, $0) })
        return try projections.map { projection in
            let row = rows[projection.name]
            let checkpoint = row?.checkpoint ?? .start
            let lag = try EventStore.backlog(after: checkpoint, ofTypes: projection.eventTypes, on: connection)
            return ProjectionStatus(
                name: projection.name, codeVersion: projection.version, builtWithVersion: row?.builtWithVersion,
                position: checkpoint.position, transactionID: checkpoint.transactionID, eventsApplied: row?.eventsApplied ?? 0,
                eventsBehind: lag.events, secondsBehind: lag.oldestSeconds,
                rebuiltAt: row?.rebuiltAt)
        }
    }
}
