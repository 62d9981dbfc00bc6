import Foundation
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import Testing

@Suite("Appending", .database)
struct AppendTests {
    @Test("a batch appends atomically with consecutive versions, and reads back as stored")
    func appendAndRead() async throws {
        try await withStore { store, _ throws in
            let events = (1...3).map { sampleEvent($0) }
            let result = try await store.append(events, to: "device-app1/dev1", expected: .noStream)
            #expect(result.events.map(\.streamVersion) == [1, 2, 3])
            #expect(!result.wasDuplicate)
            #expect(Set(result.events.map(\.transactionID)).count == 1)
            let read = try await store.readStream("device-app1/dev1")
            #expect(read.map(\.id) == events.map(\.id))
            #expect(read.map(\.position) == result.events.map(\.position))
            #expect(read[0].occurredAt == events[0].occurredAt)
            #expect(try read[1].decode([String: AnyCodableValue].self)["note"] == .string("é"))
            #expect(read.allSatisfy { $0.hash.count == 32 })
            let backward = try await store.readStream("device-app1/dev1", backward: true, limit: 2)
            #expect(backward.map(\.streamVersion) == [3, 2])
        }
    }

    /// A string may hold a backslash followed by the letters u0000 (a Windows path, a regex): in
    /// JSON text that is `\\u0000`, which is no NUL and must be stored, unlike `\u0000`.
    @Test("a backslash followed by the text u0000 is stored; only the escape of U+0000 is refused")
    func escapedBackslashBeforeU0000IsStored() async throws {
        try await withStore { store, _ throws in
            var lookalike = sampleEvent(1)
            lookalike.data = Data(#"{"path":"C:\\u0000dir","pattern":"\\\\u0000"}"#.utf8)
            _ = try await store.append([lookalike], to: "device-app1/lookalike")
            let read = try await store.readStream("device-app1/lookalike")
            let fields = try #require(try read.first?.decode([String: String].self))
            #expect(fields["path"] == #"C:\u0000dir"#)
            #expect(fields["pattern"] == #"\\u0000"#)

            var escape = sampleEvent(2)
            escape.data = Data(#"{"path":"C:\\\u0000dir"}"#.utf8)  // a backslash, then the escape
            await #expect(throws: EventStoreError.self) { try await store.append([escape], to: "device-app1/lookalike") }
            #expect(try await store.readStream("device-app1/lookalike").count == 1)
        }
    }

    @Test("retrying a batch returns the first attempt's positions and stores nothing new")
    func idempotentRetry() async throws {
        try await withStore { store, database throws in
            let events = (1...5).map { sampleEvent($0) }
            let first = try await store.append(events, to: "device-app1/dev2", expected: .noStream)
            try await store.append([sampleEvent(9)], to: "device-app1/dev2")
            // The retry of a request whose first attempt committed (say, after a timeout): even
            // with the stream moved on and the original expected version, it answers as before.
            let retry = try await store.append(events, to: "device-app1/dev2", expected: .noStream)
            #expect(retry.wasDuplicate)
            #expect(retry.events.map(\.position) == first.events.map(\.position))
            #expect(retry.events.map(\.hash) == first.events.map(\.hash))
            #expect(try eventCount(database) == 6)
        }
    }

    @Test("a retry of an event holding booleans, numbers spelt differently and reordered keys is the same event")
    func idempotentRetryComparesValues() async throws {
        try await withStore { store, database throws in
            let id = UUID()
            let at = Date(timeIntervalSince1970: 1_763_000_000)
            let first = NewEvent(id: id, type: "Sample", data: Data(#"{"lock_window": false, "fine": 1.0, "on": true}"#.utf8),
                                 occurredAt: at)
            let retry = NewEvent(id: id, type: "Sample", data: Data(#"{"on": true, "fine": 1, "lock_window": false}"#.utf8),
                                 occurredAt: at)
            let stored = try await store.append([first], to: "device-app1/bools")
            let again = try await store.append([retry], to: "device-app1/bools")
            #expect(again.wasDuplicate)
            #expect(again.events.map(\.position) == stored.events.map(\.position))
            let changed = NewEvent(id: id, type: "Sample", data: Data(#"{"on": true, "fine": 1, "lock_window": true}"#.utf8),
                                   occurredAt: at)
            await #expect(throws: EventStoreError.self) { try await store.append([changed], to: "device-app1/bools") }
            #expect(try eventCount(database) == 1)
        }
    }

    @Test("two concurrent appends of the same batch store it once and both answer the same positions")
    func concurrentRetries() async throws {
        try await withStore { store, database throws in
            let events = (1...10).map { sampleEvent($0) }
            async let a = store.append(events, to: "device-app1/race")
            async let b = store.append(events, to: "device-app1/race")
            let (first, second) = try await (a, b)
            #expect(first.events.map(\.position) == second.events.map(\.position))
            #expect(first.wasDuplicate != second.wasDuplicate)
            #expect(try eventCount(database) == 10)
        }
    }

    @Test("an event id reused with other content, or in another stream, is a typed conflict")
    func idConflict() async throws {
        try await withStore { store, database throws in
            let original = sampleEvent(1)
            try await store.append([original], to: "device-app1/dev3")
            var changed = original
            changed.data = Data("{\"n\":2}".utf8)
            let error = await #expect(throws: EventStoreError.self) { try await store.append([changed], to: "device-app1/dev3") }
            #expect(error == .eventIDConflict(eventID: original.id))
            let elsewhere = await #expect(throws: EventStoreError.self) { try await store.append([original], to: "device-app1/other") }
            #expect(elsewhere == .eventIDConflict(eventID: original.id))
            #expect(try eventCount(database) == 1)
        }
    }

    @Test("8 concurrent writers to one stream: exactly one wins each version, and versions have no gaps")
    func expectedVersionUnderContention() async throws {
        try await withStore { store, _ throws in
            let stream = "device-app1/contended"
            let perWriter = 15
            let wins = try await withThrowingTaskGroup(of: [Int64].self) { group in
                for writer in 0..<8 {
                    group.addTask {
                        var won: [Int64] = []
                        var conflicts = 0
                        while won.count < perWriter {
                            let current = try await store.streamVersion(stream)
                            let expected: ExpectedVersion = current == 0 ? .noStream : .exact(current)
                            do {
                                let result = try await store.append([sampleEvent(writer * 1000 + won.count)], to: stream,
                                                                    expected: expected)
                                #expect(result.streamVersion == current + 1)
                                won.append(result.streamVersion)
                            } catch EventStoreError.wrongExpectedVersion(_, let sent, let actual) {
                                #expect(sent == expected)
                                #expect(actual > current)
                                conflicts += 1
                            }
                        }
                        return won
                    }
                }
                return try await group.reduce(into: [Int64]()) { $0 += $1 }
            }
            #expect(wins.count == 8 * perWriter)
            #expect(Set(wins).count == wins.count, "a version was won twice")
            #expect(wins.sorted() == Array(1...Int64(8 * perWriter)))
            let stored = try await store.readStream(stream, limit: 1000).map(\.streamVersion)
            #expect(stored == Array(1...Int64(8 * perWriter)))
        }
    }

    // The same rule with the race forced: each round, all 8 writers expect the same version, so
    // every round has a winner and 7 typed conflicts carrying the version the winner made.
    @Test("8 writers expecting the same version at once: one wins, 7 get a conflict carrying the actual version")
    func expectedVersionRaceEveryRound() async throws {
        try await withStore { store, _ throws in
            let stream = "device-app1/raced"
            for round in Int64(1)...10 {
                let expected: ExpectedVersion = round == 1 ? .noStream : .exact(round - 1)
                let outcomes = try await withThrowingTaskGroup(of: Int64?.self) { group in
                    for writer in 0..<8 {
                        group.addTask {
                            do {
                                return try await store.append([sampleEvent(writer)], to: stream, expected: expected).streamVersion
                            } catch EventStoreError.wrongExpectedVersion(_, let sent, let actual) {
                                #expect(sent == expected && actual == round)
                                return nil
                            }
                        }
                    }
                    return try await group.reduce(into: [Int64?]()) { $0.append($1) }
                }
                #expect(outcomes.compactMap { $0 } == [round], "round \(round): \(outcomes)")
            }
            #expect(try await store.readStream(stream).map(\.streamVersion) == Array(1...Int64(10)))
        }
    }

    @Test("bad input is refused with a typed error naming the field, and nothing is appended")
    func badInput() async throws {
        try await withStore { store, database throws in
            let good = sampleEvent(1)
            func refused(_ events: [NewEvent], to stream: String = "device-app1/bad") async -> EventStoreError? {
                await #expect(throws: EventStoreError.self) { try await store.append(events, to: stream) }
            }
            #expect(await refused([good], to: "") == .invalidStreamID("", rule: "non_empty"))
            #expect(await refused([good], to: "device app 1") == .invalidStreamID("device app 1", rule: "letters_digits_._:-/_max_256"))
            #expect(await refused([]) == .emptyBatch)

            var badType = sampleEvent(2)
            badType.type = "1nvalid type"
            guard case .invalidEvent(1, _, "type", "type_name", _)? = await refused([good, badType]) else {
                Issue.record("expected the type to be refused")
                return
            }
            var invalidUTF8 = sampleEvent(3)
            invalidUTF8.data = Data([0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xC3, 0x28, 0x22, 0x7D])  // {"a":"<bad>"}
            guard case .invalidEvent(0, _, "data", "utf8", _)? = await refused([invalidUTF8]) else {
                Issue.record("expected invalid UTF-8 to be refused")
                return
            }
            var notObject = sampleEvent(4)
            notObject.data = Data("[1,2]".utf8)
            guard case .invalidEvent(0, _, "data", "json_object", _)? = await refused([notObject]) else {
                Issue.record("expected a non-object to be refused")
                return
            }
            var oversize = sampleEvent(5)
            oversize.data = Data(("{\"blob\":\"" + String(repeating: "x", count: EventStore.maximumPayloadBytes) + "\"}").utf8)
            guard case .invalidEvent(0, _, "data", let rule, _)? = await refused([oversize]),
                rule == "max_1048576_bytes"
            else {
                Issue.record("expected an oversize payload to be refused")
                return
            }
            var nul = sampleEvent(6)
            nul.data = Data("{\"a\":\"x\\u0000y\"}".utf8)
            guard case .invalidEvent(0, _, "data", "no_nul_character", _)? = await refused([nul]) else {
                Issue.record("expected \\u0000 to be refused")
                return
            }
            var hugeVersion = sampleEvent(8)
            hugeVersion.schemaVersion = Int(Int32.max) + 1  // the column is an integer
            guard case .invalidEvent(0, _, "schema_version", "integer", _)? = await refused([hugeVersion]) else {
                Issue.record("expected a schema version past the column's range to be refused")
                return
            }
            let twice = sampleEvent(7)
            guard case .invalidEvent(1, _, "id", "unique_in_batch", _)? = await refused([twice, twice]) else {
                Issue.record("expected a repeated id to be refused")
                return
            }
            #expect(try eventCount(database) == 0)
        }
    }

    /// A batch travels to PostgreSQL as one JSON array with each payload's text in its slot. Text
    /// that is not one JSON object must not close its slot early and set envelope fields (jsonb
    /// keeps the last of duplicate keys: a forged type, id or time), nor pair with the metadata
    /// into something that parses.
    @Test("payload text that is not one JSON object is refused even where the spliced batch would parse; nothing stored")
    func splicedPayloadsRefused() async throws {
        try await withStore { store, database throws in
            let victim = UUID()
            let cases: [(data: String, metadata: String, field: String)] = [
                (#"{"n":1},"event_type":"Not a type!""#, "{}", "data"),
                ("{\"n\":1},\"event_id\":\"\(victim.uuidString.lowercased())\"", "{}", "data"),
                (#"{"n":1},"occurred_at":"1999-01-01T00:00:00Z""#, "{}", "data"),
                (#"{"n":1},"schema_version":0"#, "{}", "data"),
                (#"{"n":1"#, #"{"m":2}}"#, "data"),
                ("{}", #"{"actor":"x"},"data":{"forged":true}"#, "metadata"),
                (#"{"n":1}}"#, "{}", "data"),
                (#"{"n":1} {"m":2}"#, "{}", "data"),
            ]
            for (index, sample) in cases.enumerated() {
                var event = sampleEvent(index)
                event.data = Data(sample.data.utf8)
                event.metadata = Data(sample.metadata.utf8)
                let error = await #expect(throws: EventStoreError.self, "\(sample)") {
                    try await store.append([event], to: "device-app1/splice")
                }
                guard case .invalidEvent(0, "SessionStarted", let field, _, _)? = error else {
                    Issue.record("expected a typed refusal of \(sample), got \(String(describing: error))")
                    continue
                }
                #expect(field == sample.field, "\(sample)")
            }
            #expect(try eventCount(database) == 0)

            // Braces, quotes and backslashes inside strings are content, not structure.
            var tricky = sampleEvent(99)
            tricky.data = Data(#"{"s":"}, \"event_type\": {\\", "t": ["]"], "u": "\u007d"}  "#.utf8)
            let stored = try await store.append([tricky], to: "device-app1/splice")
            let back = try #require(try await store.readStream("device-app1/splice").first)
            #expect(back.id == tricky.id)
            #expect(back.position == stored.events[0].position)
            #expect(back.type == "SessionStarted")
            let object = try #require(try JSONSerialization.jsonObject(with: back.data) as? [String: Any])
            #expect(object["s"] as? String == #"}, "event_type": {\"#)
            #expect(object["u"] as? String == "}")
            #expect(try eventCount(database) == 1)
        }
    }

    @Test("a payload only jsonb refuses (a lone surrogate escape) is a typed error naming the event; nothing stored")
    func jsonbOnlyRefusal() async throws {
        try await withStore { store, database throws in
            var lone = sampleEvent(2)
            lone.data = Data(#"{"a":"\ud800"}"#.utf8)
            let error = await #expect(throws: EventStoreError.self) {
                try await store.append([sampleEvent(1), lone], to: "device-app1/surrogate")
            }
            guard case .invalidEvent(1, "SessionStarted", "data", _, _)? = error else {
                Issue.record("expected the second event's data to be named, got \(String(describing: error))")
                return
            }
            #expect(try eventCount(database) == 0)
        }
    }

    @Test("a validator from the catalog can refuse a payload, and nothing is appended")
    func validatorRefuses() async throws {
        try await TestDatabase.with { database throws in
            let pool = PostgresPool(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            defer { pool.close() }
            let store = EventStore(pool: pool, validator: { index, event in
                guard event.type == "SessionStarted" else {
                    throw EventStoreError.invalidEvent(index: index, eventType: event.type, field: "type",
                                                       rule: "unknown_type", message: "is not in the catalog")
                }
            }, logger: TestDatabase.quietLogger)
            let error = await #expect(throws: EventStoreError.self) {
                try await store.append([sampleEvent(1), sampleEvent(2, type: "Mystery")], to: "device-app1/v")
            }
            guard case .invalidEvent(1, "Mystery", "type", "unknown_type", _)? = error else {
                Issue.record("expected the catalog's refusal")
                return
            }
            #expect(try eventCount(database) == 0)
        }
    }

    @Test("events for several streams commit together in the caller's transaction, or not at all")
    func multiStreamTransaction() async throws {
        try await withStore { store, database throws in
            struct Abort: Error {}
            try await store.pool.withConnection { connection in
                try connection.transaction { connection in
                    try store.append([sampleEvent(1)], to: "device-app1/fact", on: connection)
                    try store.append([sampleEvent(2)], to: "send-0001", on: connection)
                }
                _ = try? connection.transaction { connection in
                    try store.append([sampleEvent(3)], to: "device-app1/fact", on: connection)
                    try store.append([sampleEvent(4)], to: "send-0002", on: connection)
                    throw Abort()
                }
            }
            #expect(try eventCount(database) == 2)
            #expect(try await store.streamVersion("device-app1/fact") == 1)
        }
    }
}

/// A JSON value, for reading payloads back in tests.
enum AnyCodableValue: Codable, Hashable {
    case string(String), number(Double), bool(Bool), null
    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let value = try? container.decode(Bool.self) { self = .bool(value) }
        else if let value = try? container.decode(Double.self) { self = .number(value) }
        else { self = .string(try container.decode(String.self)) }
    }
    func encode(to encoder: any Encoder) throws {}
}
