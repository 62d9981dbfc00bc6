/// Waits for `condition`, looking every `interval`, at most `timeout`; returns whether it held.
/// A test asserts the result, so a condition that never comes fails the test instead of hanging it.
public func waitUntil(timeout: Duration = .seconds(30), every interval: Duration = .milliseconds(20),
                      _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: interval)
    }
    return try await condition()
}
