import LedgerFolds
import LedgerPostgres

/// Where ``BranchIdentityReducer``'s states are stored: the bundle token (indexed), whether an open
/// is in flight, and how many anomalies.
extension BranchIdentityReducer: DeviceStateStorage {
    public var summaryColumns: [ProjectionColumn] {
        [
            ProjectionColumn("randomized_bundle_token", "text", indexed: true),
            ProjectionColumn("open_in_flight", "boolean"),
            ProjectionColumn("anomalies", "integer"),
        ]
    }

    public func summary(of state: State) -> [PostgresValue] {
        [state.randomizedBundleToken.map { .text($0) } ?? .null, .bool(!state.openSendsInFlight.isEmpty),
         .int64(Int64(state.anomalies.count))]
    }
}

/// The Branch identity projection: ``BranchIdentityReducer``'s states in `branch_identity`.
public typealias BranchIdentityProjection = DeviceStateProjection<BranchIdentityReducer>
