import LedgerDecisions
import LedgerProjections
import LedgerSKANPostbacks

/// Every projection the `ledger` command runs, lists and rebuilds: the standard per-device ones
/// and those of the modules above them (attribution, SKAN postbacks).
enum AllProjections {
    /// In name order.
    static let list: [any Projection] = (ProjectionCatalog.standard + LedgerDecisions.projections + [SKANPostbackProjection()])
        .sorted { $0.name < $1.name }
}
