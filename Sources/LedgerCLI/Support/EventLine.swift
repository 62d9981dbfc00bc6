import Foundation
import LedgerDomain
import LedgerStore

/// One event as a JSON line for `replay --json` and `export`: every stored column, `data` and
/// `metadata` as JSON objects, the hash in hex — enough to re-check the chain outside the ledger.
struct EventLine: Encodable {
    let event: RecordedEvent

    enum CodingKeys: String, CodingKey {
        case position, transactionID = "transaction_id", streamID = "stream_id", streamVersion = "stream_version"
        case eventID = "event_id", type = "event_type", schemaVersion = "schema_version", data, metadata
        case occurredAt = "occurred_at", recordedAt = "recorded_at", hash
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(event.position, forKey: .position)
        try container.encode(event.transactionID, forKey: .transactionID)
        try container.encode(event.streamID, forKey: .streamID)
        try container.encode(event.streamVersion, forKey: .streamVersion)
        try container.encode(event.id.uuidString.lowercased(), forKey: .eventID)
        try container.encode(event.type, forKey: .type)
        try container.encode(event.schemaVersion, forKey: .schemaVersion)
        try container.encode(try JSONDecoder().decode(JSONValue.self, from: event.data), forKey: .data)
        try container.encode(try JSONDecoder().decode(JSONValue.self, from: event.metadata), forKey: .metadata)
        try container.encode(event.occurredAt.formatted(.iso8601.time(includingFractionalSeconds: true).year().month().day()
            .dateTimeSeparator(.standard).timeZone(separator: .omitted)), forKey: .occurredAt)
        try container.encode(event.recordedAt.formatted(.iso8601.time(includingFractionalSeconds: true).year().month().day()
            .dateTimeSeparator(.standard).timeZone(separator: .omitted)), forKey: .recordedAt)
        try container.encode(event.hash.map { String(format: "%02x", $0) }.joined(), forKey: .hash)
    }

    /// The line's text (keys sorted, no spaces).
    static func text(_ event: RecordedEvent) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(EventLine(event: event)), as: UTF8.self)
    }
}

/// A one-line, human-readable gist of an event for `replay`.
enum EventGist {
    static func of(_ event: RecordedEvent) -> String {
        let decoder = LedgerJSON.makeDecoder()
        func decoded<T: Decodable>(_ type: T.Type) -> T? { try? decoder.decode(T.self, from: event.data) }
        switch event.type {
        case FirstOpen.eventType:
            guard let open = decoded(FirstOpen.self) else { break }
            return "\(open.device.platform.rawValue) install, app \(open.device.appVersion)"
                + (open.adServicesToken != nil ? ", AdServices token" : "") + (open.deepLink != nil ? ", deep link" : "")
        case SendRequested.eventType:
            guard let send = decoded(SendRequested.self) else { break }
            return "\(send.provider.rawValue) \(send.kind.rawValue) requested"
                + (send.parameters.map { " " + $0.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ") } ?? "")
        case SendAttempted.eventType:
            guard let attempt = decoded(SendAttempted.self) else { break }
            return "attempt \(attempt.attempt): \(attempt.request.method) \(attempt.request.url ?? "")"
        case ResponseReceived.eventType:
            guard let response = decoded(ResponseReceived.self) else { break }
            var body = response.body?.bytes.map { String(decoding: $0, as: UTF8.self) } ?? ""
            body = body.replacingOccurrences(of: "\n", with: " ")
            if body.count > 100 { body = String(body.prefix(100)) + "…" }
            return "answer \(response.status) in \(response.latencyMilliseconds) ms" + (body.isEmpty ? "" : ": \(body)")
        case RetryScheduled.eventType:
            guard let retry = decoded(RetryScheduled.self) else { break }
            return "retry (\(retry.rule)\(retry.called == false ? ", no call made" : "")) not before \(retry.notBefore.formatted(.iso8601))"
        case SendFailed.eventType:
            guard let failed = decoded(SendFailed.self) else { break }
            return "failed for good: \(failed.rule)" + (failed.detail.map { " — \($0)" } ?? "")
        case SendSucceeded.eventType:
            return "succeeded"
        case AttributionDecided.eventType:
            guard let decision = decoded(AttributionDecided.self) else { break }
            return "decided (\(decision.ruleVersion)): "
                + (decision.winner.map { "\($0.source.rawValue) \($0.interaction.rawValue) wins" } ?? "organic")
                + ", \(decision.candidates.count) candidates" + (decision.supersedes != nil ? ", supersedes an earlier decision" : "")
        default:
            break
        }
        return ""
    }
}
