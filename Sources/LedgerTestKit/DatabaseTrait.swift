import Testing

// Tests import LedgerTestKit alone for their support: it brings the fresh databases, log capture
// and seeded randomness it shares with the benchmarks, which must not link Swift Testing.
@_exported import LedgerTestSupport

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
