import LedgerFakeProviders
import Logging
import Testing

/// Runs `body` with started ``FakeProviders`` and ends the test the one way every test that uses
/// the fakes must end: the fakes are stopped, then every anomaly they noted must be one the test
/// declared (``FakeProviders/expectAnomalies(_:)``), and every declared one must have been noted.
/// Each mismatch is an issue at `sourceLocation`. The check runs when `body` throws too, so a
/// failing test also shows what the fakes saw.
///
/// - Parameters:
///   - configuration: the fakes' settings and accepted credentials.
///   - logger: the fakes' logger (silent unless given).
///   - sourceLocation: where mismatches are reported (the caller's test by default).
///   - body: the test, given the running fakes.
/// - Returns: what `body` returns.
/// - Throws: what `body` throws, or the fakes' failure to start.
public func withCheckedFakeProviders<T>(
    configuration: FakeProviders.Configuration = FakeProviders.Configuration(),
    logger: Logger = Logger(label: "ledger.fake-providers", factory: { _ in SwiftLogNoOpLogHandler() }),
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: (FakeProviders) async throws -> T
) async throws -> T {
    let fakes = FakeProviders(configuration: configuration, logger: logger)
    try await fakes.start()
    let result: T
    do {
        result = try await body(fakes)
    } catch {
        await fakes.stop()
        expectNoUnexplainedAnomalies(fakes, sourceLocation: sourceLocation)
        throw error
    }
    await fakes.stop()
    expectNoUnexplainedAnomalies(fakes, sourceLocation: sourceLocation)
    return result
}

/// Records an issue for each anomaly of `fakes` no declaration explains, and for each declared
/// anomaly that was not noted (``FakeProviders/unexplainedAnomalies()``).
public func expectNoUnexplainedAnomalies(_ fakes: FakeProviders, sourceLocation: SourceLocation = #_sourceLocation) {
    let (unexpected, missing) = fakes.unexplainedAnomalies()
    for anomaly in unexpected {
        Issue.record("the fakes noted an anomaly the test did not expect: \(anomaly)", sourceLocation: sourceLocation)
    }
    for expectation in missing {
        Issue.record("the test expected an anomaly the fakes did not note: \(expectation)", sourceLocation: sourceLocation)
    }
}
