import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization
import Testing

/// One Server-Sent Events frame as the client parsed it.
enum EventStreamFrame: Sendable, Equatable {
    /// A message: its `id:` and its `data:` lines joined.
    case message(id: Int64, data: String)
    /// A comment line (`: keep-alive`).
    case comment(String)
}

/// A client of `GET /v1/apps/{app}/events/stream` over a real HTTP connection: it parses the
/// frames as they arrive, keeps them, and can drop the connection at any moment (``kill()``).
final class EventStreamClient: Sendable {
    let status: Int
    let headers: HTTPHeaders
    private let frames = Mutex<[EventStreamFrame]>([])
    private let ended = Mutex(false)
    private let reader = Mutex<Task<Void, Never>?>(nil)

    private init(status: Int, headers: HTTPHeaders) {
        self.status = status
        self.headers = headers
    }

    /// Opens the stream at `path` with `key` and the extra `headers`; the body is read in the
    /// background when the answer is 200, and returned whole otherwise.
    static func open(_ api: RunningAPI, _ path: String, key: String = keyA, headers: [(String, String)] = []) async throws
        -> (client: EventStreamClient, errorBody: Data?)
    {
        var request = HTTPClientRequest(url: api.baseURL + path)
        request.headers.add(name: "Authorization", value: "Bearer \(key)")
        request.headers.add(name: "Accept", value: "text/event-stream")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let response = try await HTTPClient.shared.execute(request, deadline: .now() + .minutes(5))
        let client = EventStreamClient(status: Int(response.status.code), headers: response.headers)
        guard response.status == .ok else {
            return (client, Data(try await response.body.collect(upTo: 1_048_576).readableBytesView))
        }
        let task = Task { [client] in
            var pending = ""
            do {
                for try await buffer in response.body {
                    pending += String(buffer: buffer)
                    while let end = pending.range(of: "\n\n") {
                        let frame = String(pending[..<end.lowerBound])
                        pending = String(pending[end.upperBound...])
                        client.receive(frame)
                    }
                }
            } catch {}
            client.ended.withLock { $0 = true }
        }
        client.reader.withLock { $0 = task }
        return (client, nil)
    }

    private func receive(_ frame: String) {
        var id: Int64?
        var data: [String] = []
        var parsed: [EventStreamFrame] = []
        for line in frame.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix(":") {
                parsed.append(.comment(String(line.dropFirst()).trimmingCharacters(in: .whitespaces)))
            } else if line.hasPrefix("id: ") {
                id = Int64(line.dropFirst(4))
            } else if line.hasPrefix("data: ") {
                data.append(String(line.dropFirst(6)))
            }
        }
        if let id { parsed.append(.message(id: id, data: data.joined(separator: "\n"))) }
        frames.withLock { $0 += parsed }
    }

    /// Every frame received so far.
    var received: [EventStreamFrame] { frames.withLock { $0 } }

    /// The messages received so far: id and the event JSON.
    var messages: [(id: Int64, event: [String: Any])] {
        received.compactMap { frame in
            guard case .message(let id, let data) = frame,
                let event = try? JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any]
            else { return nil }
            return (id, event)
        }
    }

    /// Whether the server ended the response (or the connection broke).
    var hasEnded: Bool { ended.withLock { $0 } }

    /// Waits until at least `count` messages arrived (at most `timeout`); the messages.
    func waitForMessages(_ count: Int, timeout: Duration = .seconds(30)) async throws -> [(id: Int64, event: [String: Any])] {
        let deadline = ContinuousClock.now + timeout
        while messages.count < count, ContinuousClock.now < deadline, !hasEnded { try await Task.sleep(for: .milliseconds(10)) }
        return messages
    }

    /// Drops the connection mid-stream, as a client that goes away does.
    func kill() {
        reader.withLock { $0 }?.cancel()
    }
}
