import Foundation
import LedgerDispatch
import LedgerFakeProviders
import LedgerHTTPTransport
import LedgerProviders
import LedgerTestKit
import Testing

/// What the transport does when there is no (acceptable) HTTP answer, and its policies.
@Suite("Transport: failures, limits and policy")
struct TransportFailureTests {
    static func appleRequest(_ fakes: FakeProviders) throws -> ProviderRequest { try AppleSample.request(fakes) }

    // A stalled provider (e.g. past a worker's lease) is a timeout, reported at the deadline.
    @Test func stalledFakeTimesOut() async throws {
        try await withFakes { fakes, transport in
            let stalled = FakeGate()  // never opened while the client waits: the answer cannot come in time
            fakes.apple.enqueue(.held(by: stalled))
            let clock = ContinuousClock()
            let started = clock.now
            let error = await sendExpectingError(transport, try Self.appleRequest(fakes), timeout: .milliseconds(300))
            let elapsed = clock.now - started
            #expect(error?.code == .timeout)
            // Reported at the deadline, not when the held answer comes. The upper bound is loose on
            // purpose: the full suite loads both cores, and this is no benchmark.
            #expect(elapsed >= .milliseconds(250) && elapsed < .seconds(30), "took \(elapsed)")
            // A timeout means "may have arrived": at most one request reached the fake.
            #expect(fakes.apple.requestCount <= 1)
            #expect(stalled.everHeld == fakes.apple.requestCount)
            // The transport stays usable.
            #expect(try await send(transport, try Self.appleRequest(fakes)).response.status == 200)
            stalled.open()
        }
    }

    // The per-fake delay applies to every answer.
    @Test func injectedDelayIsHonoured() async throws {
        try await withFakes { fakes, transport in
            fakes.singular.setDelay(.milliseconds(150))
            let now = Date()
            let request = try SingularSample.request(now: now).build(with: SingularSample.configuration(fakes), at: now)
            let answer = try await send(transport, request)
            #expect(answer.response.status == 200)
            #expect(answer.latency >= .milliseconds(140))
            #expect(await sendExpectingError(transport, request, timeout: .milliseconds(50))?.code == .timeout)
        }
    }

    // Nothing listening: connectionFailed (nothing arrived), long before the deadline — the
    // transport does not let AsyncHTTPClient retry the connection until the deadline. A retry loop
    // would take the whole two minutes; a refused connect takes milliseconds, and even on a
    // starved machine far less than half of that.
    @Test func connectionRefusedIsConnectionFailed() async throws {
        let endpoint = try await withCheckedFakeProviders { fakes in fakes.appleEndpoint }
        let transport = HTTPProviderTransport()
        let request = AdServicesRequestBuilder.attributionRequest(token: try AdServicesToken("cmVmdXNlZA=="), endpoint: endpoint)
        let deadline = Duration.seconds(120)
        let clock = ContinuousClock()
        let started = clock.now
        let error = await sendExpectingError(transport, request, timeout: deadline)
        #expect(error?.code == .connectionFailed, "\(String(describing: error))")
        #expect(clock.now - started < deadline / 2)
        await transport.shutdown()
    }

    // A connection closed without an answer after the request arrived: connectionLost.
    @Test func droppedConnectionIsConnectionLost() async throws {
        try await withFakes { fakes, transport in
            fakes.apple.enqueue(.dropConnection)
            let error = await sendExpectingError(transport, try Self.appleRequest(fakes))
            #expect(error?.code == .connectionLost, "\(String(describing: error))")
            #expect(fakes.apple.requestCount == 1)
        }
    }

    // An answer over the size limit is refused.
    @Test func oversizedAnswerIsRefused() async throws {
        try await withFakes(configuration: .init(maximumResponseBytes: 1_024)) { fakes, transport in
            fakes.apple.enqueue(.status(200, body: String(repeating: "x", count: 10_000)))
            let error = await sendExpectingError(transport, try Self.appleRequest(fakes))
            #expect(error?.code == .responseTooLarge)
            fakes.apple.enqueue(.status(200, body: String(repeating: "x", count: 1_000)))
            #expect(try await send(transport, try Self.appleRequest(fakes)).response.body.count == 1_000)
        }
    }

    // Defence in depth: plain http leaves the machine never, whatever built the request.
    @Test func plainHTTPToNonLoopbackHostIsRefused() async throws {
        let transport = HTTPProviderTransport()
        for host in ["www.googleadservices.com", "10.0.0.1", "api2.branch.io", "127.0.0.2.nip.io"] {
            let request = ProviderRequest(
                provider: .google, method: .post, scheme: "http", host: host, path: "/pagead/conversion/app/1.0")
            let error = await sendExpectingError(transport, request, timeout: .seconds(1))
            #expect(error?.code == .invalidRequest, "\(host)")
            #expect(error?.detail.contains("https") == true)
        }
        let ftp = ProviderRequest(provider: .singular, method: .get, scheme: "ftp", host: "127.0.0.1", path: "/")
        #expect(await sendExpectingError(transport, ftp, timeout: .seconds(1))?.code == .invalidRequest)
        await transport.shutdown()
    }

    // A stated Content-Length must match the body; Transfer-Encoding is never sent.
    @Test func inconsistentFramingIsRefused() async throws {
        try await withFakes { fakes, transport in
            var request = try Self.appleRequest(fakes)
            request.headers.append(Header("Content-Length", "999"))
            #expect(await sendExpectingError(transport, request)?.code == .invalidRequest)
            var chunked = try Self.appleRequest(fakes)
            chunked.headers.append(Header("Transfer-Encoding", "chunked"))
            #expect(await sendExpectingError(transport, chunked)?.code == .invalidRequest)
            #expect(fakes.apple.requestCount == 0)
        }
    }

    // Headers go out in order; a bodyless POST gets Content-Length: 0 even when its builder did not
    // add one; query values are percent-encoded.
    @Test func headersInOrderAndExplicitEmptyBody() async throws {
        try await withFakes { fakes, transport in
            var event = try GoogleSample.event(.sessionStart)
            event.gclid = "x y/z"
            var request = try GoogleSample.builder(fakes).conversionRequest(for: event)
            request.headers.removeAll { $0.name == "Content-Length" }
            request.headers.insert(Header("X-First", "1"), at: 0)
            request.headers.append(Header("X-Last", "3"))
            let answer = try await send(transport, request)
            #expect(answer.response.status == 200)
            let received = try #require(fakes.google.requests.first)
            let names = received.headers.map(\.name).filter { $0.hasPrefix("X-") || $0 == "User-Agent" }
            #expect(names == ["X-First", "User-Agent", "X-Forwarded-For", "X-Last"])
            #expect(received.headerValue("Content-Length") == "0")
            #expect(received.queryValue("gclid") == "x y/z")
            #expect(received.rawQuery.hasSuffix("&gclid=x%20y%2Fz"))
        }
    }

    // One shared client: sequential sends reuse one connection; concurrent sends all complete.
    @Test func connectionsAreReusedAndConcurrentSendsComplete() async throws {
        try await withFakes { fakes, transport in
            let now = Date()
            let configuration = SingularSample.configuration(fakes)
            for _ in 0..<10 {
                let request = try SingularSample.request(now: now).build(with: configuration, at: now)
                #expect(try await send(transport, request).response.status == 200)
            }
            #expect(Set(fakes.singular.requests.map(\.connectionNumber)).count == 1)

            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<40 {
                    let idfv = String(format: "00000000-0000-4000-8000-%012d", index)
                    let request = try SingularSample.request(idfv: idfv, now: now).build(with: configuration, at: now)
                    group.addTask { try await transport.send(request, timeout: .seconds(10)).response.status }
                }
                var statuses: [Int] = []
                for try await status in group { statuses.append(status) }
                return statuses
            }
            #expect(statuses.count == 40 && statuses.allSatisfy { $0 == 200 })
            #expect(fakes.singular.requestCount == 50)
        }
    }

    // After shutdown nothing is sent; shutdown twice is harmless.
    @Test func sendAfterShutdownFailsWithoutSending() async throws {
        try await withCheckedFakeProviders { fakes in
            let transport = HTTPProviderTransport()
            await transport.shutdown()
            await transport.shutdown()
            let error = await sendExpectingError(transport, try Self.appleRequest(fakes))
            #expect(error?.code == .connectionFailed)
            #expect(fakes.apple.requestCount == 0)
        }
    }

    // The fakes answer 404 for paths no provider serves, and record them.
    @Test func unknownPathsAreRecorded() async throws {
        try await withFakes { fakes, transport in
            let request = ProviderRequest(
                provider: .appleAdServices, method: .post, scheme: "http", host: "127.0.0.1", port: fakes.port,
                path: "/api/v2/", headers: [Header("Content-Type", "text/plain")], body: Data("dG9r".utf8))
            fakes.expectAnomaly(nil, "unknown_path")
            let answer = try await send(transport, request)
            #expect(answer.response.status == 404)
            #expect(fakes.unroutedRequests.map(\.path) == ["/api/v2/"])
            #expect(fakes.allRequests.count == 1)
        }
    }
}
