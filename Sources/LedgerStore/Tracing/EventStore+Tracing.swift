import Tracing

extension EventStore {
    /// Runs one append (one statement, or a lone part of a fallback) in a client span of its own,
    /// named and described as OpenTelemetry's database conventions ask (`{db.operation.name}
    /// {db.collection.name}`: `append events`, `db.system.name` `postgresql`), with how many
    /// events and streams it holds. Stream ids, event ids and payloads are left out: a device's
    /// stream names the device.
    func traced<Result>(events: Int, streams: Int, _ body: () throws -> Result) rethrows -> Result {
        try withSpan("append events", ofKind: .client) { span in
            span.attributes["db.system.name"] = "postgresql"
            span.attributes["db.operation.name"] = "append"
            span.attributes["db.collection.name"] = "events"
            span.attributes["ledger.append.events"] = events
            span.attributes["ledger.append.streams"] = streams
            return try body()
        }
    }
}
