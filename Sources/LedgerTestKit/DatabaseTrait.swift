import LedgerTestSupport
import Testing

extension Trait where Self == ConditionTrait {
    /// Marks a suite or test that runs against PostgreSQL (a ``TestDatabase``, the private
    /// cluster, or the `ledger` command on either); unmarked tests are database-free unit tests.
    /// With `LEDGER_TEST_NO_DATABASE=1` the marked ones are skipped, and a test that opens a
    /// database without the mark fails (``TestDatabase/refusesDatabases``), which keeps the mark
    /// true. `ops/test` runs both kinds.
    public static var database: Self {
        .disabled(if: TestDatabase.refusesDatabases, "runs against PostgreSQL; LEDGER_TEST_NO_DATABASE is set")
    }
}
