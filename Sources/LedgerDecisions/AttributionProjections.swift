import LedgerFolds
import LedgerProjections

extension LedgerDecisions {
    /// The projections this module adds to ``LedgerProjections/ProjectionCatalog/standard``: the
    /// attribution process (triggers, awaited sends, decisions, late answers).
    public static let projections: [any Projection] = [AttributionProcessProjection(AttributionProcessReducer())]
}
