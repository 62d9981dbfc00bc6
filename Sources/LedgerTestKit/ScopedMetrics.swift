import Metrics

/// swift-metrics allows one backend per process, and the test targets run in one process: this is
/// that backend for tests. It hands every metric to the factory of the test that made it — the
/// one given to ``withMetrics(_:_:)`` around the code that emits, found through a task-local
/// value, so the tasks the test starts (a worker's loop, a server's handlers) report to it as
/// well — and to no factory (a no-op) outside any. Each test then reads exactly what it caused.
public enum ScopedMetrics {
    @TaskLocal static var current: (any MetricsFactory)?

    /// Bootstraps the routing backend once per process (`MetricsSystem.bootstrap` may be called
    /// once; every test target's use goes through here).
    static let installed: Void = MetricsSystem.bootstrap(RoutingMetricsFactory())

    /// Runs `body` with the metrics made by it, and by the tasks it starts, going to `factory`.
    ///
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws.
    public static func withMetrics<T>(
        _ factory: any MetricsFactory, _ body: () async throws -> T
    ) async rethrows -> T {
        _ = installed
        return try await $current.withValue(factory) { try await body() }
    }
}

/// The process's metrics backend in tests: routes each call to ``ScopedMetrics/current``.
final class RoutingMetricsFactory: MetricsFactory {
    private static let fallback = NOOPMetricsHandler.instance

    private var factory: any MetricsFactory { ScopedMetrics.current ?? Self.fallback }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        factory.makeCounter(label: label, dimensions: dimensions)
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        factory.makeFloatingPointCounter(label: label, dimensions: dimensions)
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        factory.makeMeter(label: label, dimensions: dimensions)
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        factory.makeRecorder(label: label, dimensions: dimensions, aggregate: aggregate)
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        factory.makeTimer(label: label, dimensions: dimensions)
    }

    func destroyCounter(_ handler: any CounterHandler) { factory.destroyCounter(handler) }
    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) { factory.destroyFloatingPointCounter(handler) }
    func destroyMeter(_ handler: any MeterHandler) { factory.destroyMeter(handler) }
    func destroyRecorder(_ handler: any RecorderHandler) { factory.destroyRecorder(handler) }
    func destroyTimer(_ handler: any TimerHandler) { factory.destroyTimer(handler) }
}
