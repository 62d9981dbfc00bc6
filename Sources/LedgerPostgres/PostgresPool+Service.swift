import ServiceLifecycle

/// The pool as a swift-service-lifecycle `Service`, as postgres-nio's `PostgresClient` is: a
/// command lists it first in its `ServiceGroup`, and since a group shuts its services down in the
/// reverse of their order, the pool closes last, once every service that borrows its sessions (a
/// send worker's tries in flight, the HTTP server's requests) has finished.
///
/// Unlike `PostgresClient`, the pool needs no running ``run()`` to lend sessions (it opens them on
/// demand, and tools and tests use it without a group): ``run()`` only decides when it closes.
extension PostgresPool: Service {
    /// Waits for graceful shutdown (or cancellation: a group that another service's failure
    /// cancelled), then closes the pool (``close()``): idle sessions close, callers waiting for a
    /// session get `.poolClosed`, and sessions still lent close when handed back. Returns normally
    /// either way, so that a stop is never reported as a failure.
    public func run() async throws {
        defer { close() }
        try? await gracefulShutdown()
    }
}
