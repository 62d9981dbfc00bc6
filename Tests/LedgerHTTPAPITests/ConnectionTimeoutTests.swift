import Foundation
@testable import LedgerHTTPAPI
import LedgerTestKit
import NIOCore
import Testing

/// Timeouts through real connections: a client that sends half a head, one that keeps an idle
/// connection open, one that stalls its body. Each is cut off by the server within a bounded
/// wait; the server's timeouts are short, every other timeout long, so the one that fires is the
/// one under test.
@Suite(.database) struct ConnectionTimeoutTests {
    /// How long a test waits for the server to close a connection before it fails.
    static let bound: Duration = .seconds(30)
    /// The timeout under test.
    /// Long enough that a client on a loaded two-core machine still sends its next bytes in time.
    static let short: Duration = .seconds(3)

    /// Timeouts with `header`, `idle` and `request` set as given, the others long.
    static func configure(header: Duration = .seconds(60), idle: Duration = .seconds(60), request: Duration = .seconds(60))
        -> (inout LedgerHTTPConfiguration) -> Void
    {
        { configuration in
            configuration.headerTimeout = header
            configuration.idleTimeout = idle
            configuration.requestTimeout = request
        }
    }

    @Test func aHalfSentHeadIsCutOffAfterTheHeaderTimeout() async throws {
        try await withAPI(configure: Self.configure(header: Self.short)) { api in
            try await RawConnection.with(port: api.port) { connection in
                try await connection.send("POST /v1/apps/\(appA)/events HTTP/1.1\r\nHost: x\r\n")
                let closed = try #require(try await connection.waitForServerClose(within: Self.bound), "still open after \(Self.bound)")
                #expect(closed.text.isEmpty)
            }
            // On a kept-alive connection the next request's first bytes start the header timeout
            // (the idle timeout, a minute here, no longer applies).
            try await RawConnection.with(port: api.port) { connection in
                try await connection.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try await connection.readResponse().hasPrefix("HTTP/1.1 200"))
                try await connection.send("GET /health HTTP/1.1\r\nHo")
                let closed = try #require(try await connection.waitForServerClose(within: Self.bound), "still open after \(Self.bound)")
                #expect(closed.after >= .milliseconds(1500))
            }
            // A connection that sends nothing at all has the header timeout too.
            try await RawConnection.with(port: api.port) { connection in
                let closed = try await connection.waitForServerClose(within: Self.bound)
                #expect(closed != nil, "still open after \(Self.bound)")
            }
        }
    }

    @Test func anIdleKeepAliveConnectionIsClosedAfterTheIdleTimeout() async throws {
        try await withAPI(configure: Self.configure(idle: Self.short)) { api in
            try await RawConnection.with(port: api.port) { connection in
                try await connection.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try await connection.readResponse().hasPrefix("HTTP/1.1 200"))
                // Used again within the idle timeout, it answers.
                try await connection.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                #expect(try await connection.readResponse().hasPrefix("HTTP/1.1 200"))
                let closed = try #require(try await connection.waitForServerClose(within: Self.bound), "still open after \(Self.bound)")
                #expect(closed.text.isEmpty)
                #expect(closed.after >= .milliseconds(1500))
            }
        }
    }

    @Test func aBodyOutlastingTheRequestTimeoutIsAnswered408AndClosed() async throws {
        try await withAPI(configure: Self.configure(request: Self.short)) { api in
            let body = batch(skanRegisteredJSON(device: "install-slow"))
            try await RawConnection.with(port: api.port) { connection in
                try await connection.send("""
                    POST /v1/apps/\(appA)/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(keyA)\r\n\
                    Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body.prefix(20))
                    """)
                let closed = try #require(try await connection.waitForServerClose(within: Self.bound), "still open after \(Self.bound)")
                #expect(closed.text.hasPrefix("HTTP/1.1 408"), "\(closed.text)")
                let json = try #require(closed.text.range(of: "\r\n\r\n").map { closed.text[$0.upperBound...] })
                let error = try apiError(Data(json.utf8))
                #expect(error["code"] as? String == "request_timeout")
                #expect(closed.after >= .milliseconds(1500))
            }
            #expect(try await api.eventCount() == 0)
        }
    }

    /// The state machine alone: which timer runs in which phase.
    @Test func deadlinesFollowTheConnection() {
        let start = NIODeadline.uptimeNanoseconds(1_000_000_000)
        let timeouts = ConnectionDeadlines.Timeouts(header: .seconds(10), idle: .seconds(60), request: .seconds(30))
        var deadlines = ConnectionDeadlines(timeouts: timeouts, openedAt: start)
        #expect(deadlines.nextDeadline?.at == start + .seconds(10))
        deadlines.headReceived(at: start + .seconds(1))
        #expect(deadlines.nextDeadline?.at == start + .seconds(30))  // from the request's first byte
        #expect(deadlines.nextDeadline?.closes == false)
        deadlines.endReceived(at: start + .seconds(2))
        #expect(deadlines.nextDeadline == nil)  // the server is answering
        deadlines.bytesReceived(at: start + .seconds(3))  // pipelined: still no timer while answering
        #expect(deadlines.nextDeadline == nil)
        deadlines.responseHeadWritten(status: 200)
        var closes = deadlines.responseEndWritten(at: start + .seconds(4))
        #expect(!closes)
        #expect(deadlines.nextDeadline?.at == start + .seconds(14))  // the pipelined head, timed from now
        deadlines.headReceived(at: start + .seconds(5))
        deadlines.endReceived(at: start + .seconds(5))
        closes = deadlines.responseEndWritten(at: start + .seconds(6))
        #expect(!closes)
        #expect(deadlines.nextDeadline?.at == start + .seconds(66))  // idle
        deadlines.bytesReceived(at: start + .seconds(7))
        #expect(deadlines.nextDeadline?.at == start + .seconds(17))  // a head is arriving
        deadlines.headReceived(at: start + .seconds(8))
        var action = deadlines.expire(at: start + .seconds(20))
        #expect(action == .reschedule)
        action = deadlines.expire(at: start + .seconds(37))
        #expect(action == .failRequest)  // answered 408, then closed
        deadlines.responseHeadWritten(status: 408)
        closes = deadlines.responseEndWritten(at: start + .seconds(38))
        #expect(closes)
    }
}
