import LedgerStore
import Logging
import ServiceLifecycle
import UnixSignals

/// The periodic sealer (``EventStore/sealPeriodically(every:signedBy:)``) as a swift-service-lifecycle
/// `Service`, for `ledger serve` and `ledger worker`.
///
/// It wraps the store's loop here, in the CLI, because the store does not depend on
/// swift-service-lifecycle yet; its place is beside `sealPeriodically` in LedgerStore.
struct PeriodicSealer: Service {
    /// The store whose log is sealed.
    let store: EventStore
    /// Seconds between seals.
    let interval: Duration
    /// The key seals are signed with (unsigned without one).
    let key: SealSigningKey?

    /// Seals every ``interval`` until graceful shutdown or cancellation. A stop cancels the seal
    /// under way (`cancelWhenGracefulShutdown`): a seal is one transaction, made whole or not at
    /// all, and the next process seals what it left.
    ///
    /// The store's loop also ends by itself when this process's role may not write seals (it is
    /// not a member of `ledger_sealer`; another process seals): the sealer then waits for the
    /// shutdown, so that the group's other services go on.
    func run() async throws {
        await cancelWhenGracefulShutdown { [store, interval, key] in
            await store.sealPeriodically(every: interval, signedBy: key)
        }
        if !Task.isCancelled { try? await gracefulShutdown() }
    }
}

/// One `ServiceGroup` for a long-running command: `services` run together, in their order, and
/// SIGTERM or SIGINT shuts them down gracefully, in the reverse order (the last listed stops
/// first, so list what others use — pools, the HTTP client — first). The first service to fail
/// cancels the others and its error is the group's; a service that returns by itself before a
/// shutdown is a failure too (`ServiceGroupError.serviceFinishedUnexpectedly`).
///
/// The signals are trapped when the group starts, before any service runs: a SIGTERM that arrives
/// while a service is still starting (the worker taking its liveness lock) stops it gracefully.
func runUntilSignalled(_ services: [(name: String, service: any Service)], logger: Logger) async throws {
    let group = ServiceGroup(configuration: ServiceGroupConfiguration(
        services: services.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0.service, serviceName: $0.name) },
        gracefulShutdownSignals: [.sigterm, .sigint],
        logger: logger))
    try await group.run()
}
