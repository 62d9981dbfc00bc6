import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import Testing

/// The outbox and the queue against the real private PostgreSQL (issue 6, items 1 and 2).
@Suite("Outbox and send queue", .database)
struct SendQueueTests {
    // Issue 6: enqueueing is idempotent — the same cause never enqueues twice, even after the send
    // finished and left the queue.
    @Test func enqueueIsIdempotentByKey() async throws {
        try await withStore(catalog: .standard) { store, _ in
            let device = "device-app1/dev1"
            let cause = try await record(SessionStarted(device: iosDevice()), to: device, at: testEpoch, store: store)
            let first = try await enqueue(.singular, .conversionValue, cause: cause, device: device, key: "singular:\(cause.id)",
                                          now: testEpoch, store: store)
            let again = try await enqueue(.singular, .conversionValue, cause: cause, device: device, key: "singular:\(cause.id)",
                                          now: testEpoch, store: store)
            #expect(!first.wasDuplicate && again.wasDuplicate && again.sendID == first.sendID && again.position == first.position)
            #expect(try await queueCount(store) == 1)
            _ = try await store.pool.withConnection { try SendQueue.remove(first.sendID, on: $0) }
            let afterFinish = try await enqueue(.singular, .conversionValue, cause: cause, device: device,
                                                key: "singular:\(cause.id)", now: testEpoch, store: store)
            #expect(afterFinish.wasDuplicate)
            #expect(try await queueCount(store) == 0)
        }
    }

    // Issue 6: the send request commits with its cause or not at all.
    @Test func enqueueCommitsWithItsCause() async throws {
        try await withStore(catalog: .standard) { store, _ in
            struct Abort: Error {}
            let device = "device-app1/dev1"
            let cause = try await record(SessionStarted(device: iosDevice()), to: device, at: testEpoch, store: store)
            let request = try Outbox.request(provider: .singular, kind: .conversionValue, cause: cause,
                                             deviceStreamID: try StreamID(device), idempotencyKey: "k1")
            await #expect(throws: Abort.self) {
                try await store.pool.withConnection { connection in
                    try connection.transaction { connection in
                        _ = try Outbox.enqueue(request, store: store, now: testEpoch, on: connection)
                        throw Abort()
                    }
                }
            }
            #expect(try await queueCount(store) == 0)
            #expect(try await store.streamVersion(StreamID.send(id: request.sendID).rawValue) == 0)
        }
    }

    // Issue 6: a Branch device is a lane — only its oldest send is claimable, and only while nothing
    // of the lane is running; other devices are not held up.
    @Test func branchLanesOfferOnlyTheOldestSend() async throws {
        try await withStore(catalog: .standard) { store, _ in
            let a = "device-app1/a", b = "device-app1/b"
            let openA = try await record(SessionStarted(device: iosDevice()), to: a, at: testEpoch, store: store)
            let openB = try await record(SessionStarted(device: iosDevice()), to: b, at: testEpoch, store: store)
            let a1 = try await enqueue(.branch, .open, cause: openA, device: a, key: "a1", now: testEpoch, store: store)
            let a2 = try await enqueue(.branch, .open, cause: openA, device: a, key: "a2", now: testEpoch, store: store)
            let b1 = try await enqueue(.branch, .open, cause: openB, device: b, key: "b1", now: testEpoch, store: store)
            let claims = try await store.pool.withConnection {
                try SendQueue.claim(limit: 10, owner: "w1", now: testEpoch, lease: 60, on: $0)
            }
            #expect(Set(claims.map(\.sendID)) == [a1.sendID, b1.sendID])
            #expect(try await store.pool.withConnection {
                try SendQueue.claim(limit: 10, owner: "w2", now: testEpoch, lease: 60, on: $0)
            }.isEmpty)
            _ = try await store.pool.withConnection { try SendQueue.remove(a1.sendID, on: $0) }
            let next = try await store.pool.withConnection {
                try SendQueue.claim(limit: 10, owner: "w2", now: testEpoch, lease: 60, on: $0)
            }
            #expect(next.map(\.sendID) == [a2.sendID] && next.first?.attempt == 1)
        }
    }

    // provider-rules (Singular, facts beyond the providers' documents): "events must arrive in
    // order, a session before its events". A device's Singular calls share a lane of their own: one
    // at a time, oldest first, apart from the device's Branch lane and from sends without a lane.
    @Test func singularLanesKeepADevicesCallsInOrder() async throws {
        try await withStore(catalog: .standard) { store, _ in
            let device = "device-app1/s"
            let open = try await record(SessionStarted(device: iosDevice()), to: device, at: testEpoch, store: store)
            func enqueued(_ provider: SendProvider, _ kind: SendKind, _ key: String) async throws -> UUID {
                try await enqueue(provider, kind, cause: open, device: device, key: key, now: testEpoch, store: store).sendID
            }
            let session = try await enqueued(.singular, .conversionValue, "session")
            let branch = try await enqueued(.branch, .open, "branch")
            let event = try await enqueued(.singular, .conversionValue, "event")
            let google = try await enqueued(.google, .conversion, "google")
            let first = try await store.pool.withConnection {
                try SendQueue.claim(limit: 10, owner: "w1", now: testEpoch, lease: 60, on: $0)
            }
            #expect(Set(first.map(\.sendID)) == [session, branch, google])
            _ = try await store.pool.withConnection { try SendQueue.remove(session, on: $0) }
            let next = try await store.pool.withConnection {
                try SendQueue.claim(limit: 10, owner: "w2", now: testEpoch, lease: 60, on: $0)
            }
            #expect(next.map(\.sendID) == [event])
            // The queue rebuilt from the log keeps the lanes (the session, with no terminal event
            // in the log, is back too).
            _ = try await store.pool.withConnection { try SendQueue.rebuild(on: $0) }
            let lanes = try await store.pool.query("SELECT provider, lane FROM send_queue ORDER BY provider").map {
                "\(try $0.decode(String.self, at: 0)) \(try $0.decode(String?.self, at: 1) ?? "-")"
            }
            #expect(lanes == ["branch \(device)", "google -", "singular singular:\(device)", "singular singular:\(device)"])
        }
    }

    // Issue 6: an outcome is recorded "only if the attempt number still matches": the settling
    // statement changes the queue only for the claim's own attempt and owner, while it runs.
    @Test func settlingNeedsTheClaimStillHeld() async throws {
        try await withStore(catalog: .standard) { store, _ in
            let device = "device-app1/s"
            let open = try await record(SessionStarted(device: iosDevice()), to: device, at: testEpoch, store: store)
            let retried = try await enqueue(.google, .conversion, cause: open, device: device, key: "s1", now: testEpoch, store: store)
            let finished = try await enqueue(.singular, .conversionValue, cause: open, device: device, key: "s2", now: testEpoch,
                                             store: store)
            let claims = try await store.pool.withConnection {
                try SendQueue.claim(limit: 10, owner: "w1", now: testEpoch, lease: 60, on: $0)
            }
            let retry = try #require(claims.first { $0.sendID == retried.sendID })
            let done = try #require(claims.first { $0.sendID == finished.sendID })
            var older = retry
            older.attempt += 1
            let stale = older
            let later = testEpoch.addingTimeInterval(30)
            // Each outcome is recorded the way the worker does it: its events appended only if the
            // settle condition found the claim still held, in the same statement.
            @Sendable func settle(_ claim: SendQueue.Claim, owner: String, retryAt: Date?, on connection: PostgresConnection)
                throws -> Bool
            {
                let event: NewEvent
                if let retryAt {
                    event = try NewEvent(RetryScheduled(attempt: claim.attempt, rule: "test", detail: nil, notBefore: retryAt),
                                         occurredAt: testEpoch)
                } else {
                    event = try NewEvent(SendSucceeded(attempt: claim.attempt), occurredAt: testEpoch)
                }
                let written = try store.append([StreamAppend([event], to: claim.streamID)],
                                               where: SendQueue.settled([(claim, retryAt)], owner: owner), on: connection)
                return written[claim.streamID] != nil
            }
            let (wrongAttempt, wrongOwner, retriedHeld, doneHeld, doneAgain) = try await store.pool.withConnection { connection in
                (try settle(stale, owner: "w1", retryAt: later, on: connection),
                 try settle(retry, owner: "w2", retryAt: later, on: connection),
                 try settle(retry, owner: "w1", retryAt: later, on: connection),
                 try settle(done, owner: "w1", retryAt: nil, on: connection),
                 try settle(done, owner: "w1", retryAt: nil, on: connection))
            }
            #expect(!wrongAttempt && !wrongOwner && retriedHeld && doneHeld && !doneAgain)
            #expect(try await streamTypes(retry.streamID, store: store) == ["SendRequested", "RetryScheduled"])
            #expect(try await streamTypes(done.streamID, store: store) == ["SendRequested", "SendSucceeded"])
            let rows = try await store.pool.query("SELECT state, not_before, lease_owner IS NULL FROM send_queue")
            #expect(rows.count == 1)
            let row = try #require(rows.first)
            #expect(try row.decode(String.self, at: 0) == "pending" && row.decode(Date.self, at: 1) == later
                    && row.decode(Bool.self, at: 2))
        }
    }

    // Issue 6: "SendAttempted … is committed before the call … only if the attempt number still
    // matches": a claim's tries are recorded only for claims still held by this worker.
    @Test func triesAreRecordedOnlyWhileTheClaimHolds() async throws {
        try await withStore(catalog: .standard) { store, _ in
            let device = "device-app1/h"
            let open = try await record(SessionStarted(device: iosDevice()), to: device, at: testEpoch, store: store)
            _ = try await enqueue(.google, .conversion, cause: open, device: device, key: "h1", now: testEpoch, store: store)
            let claims = try await store.pool.withConnection {
                try SendQueue.claim(limit: 10, owner: "w1", now: testEpoch, lease: 60, on: $0)
            }
            let claim = try #require(claims.first)
            // The claim read the cause with it.
            #expect(claim.cause?.id == open.id)
            var other = claim
            other.attempt += 1
            let stale = other
            @Sendable func recorded(_ claim: SendQueue.Claim, owner: String, on connection: PostgresConnection) throws -> Bool {
                let event = try NewEvent(SendAttempted(attempt: claim.attempt, request: RecordedRequest(
                    method: "POST", url: "https://example.test/", headers: [], body: nil)),
                    id: Outbox.attemptEventID(sendID: claim.sendID, attempt: claim.attempt), occurredAt: testEpoch)
                let written = try store.append([StreamAppend([event], to: claim.streamID)],
                                               where: SendQueue.stillHeld([claim], owner: owner), on: connection)
                return written[claim.streamID] != nil
            }
            let (wrongOwner, wrongAttempt, held) = try await store.pool.withConnection { connection in
                (try recorded(claim, owner: "w2", on: connection), try recorded(stale, owner: "w1", on: connection),
                 try recorded(claim, owner: "w1", on: connection))
            }
            #expect(!wrongOwner && !wrongAttempt && held)
            #expect(try await streamTypes(claim.streamID, store: store) == ["SendRequested", "SendAttempted"])
            // The same try recorded again (its first statement's answer lost): refused, not stored twice.
            await #expect(throws: EventStoreError.self) {
                try await store.pool.withConnection { connection in try recorded(claim, owner: "w1", on: connection) }
            }
            #expect(try await streamTypes(claim.streamID, store: store) == ["SendRequested", "SendAttempted"])
        }
    }

    // The claim's commit skips its flush only when it runs on its own: inside a caller's
    // transaction it leaves that transaction's durability as it was.
    @Test func claimingLeavesACallersCommitDurable() async throws {
        try await withStore(catalog: .standard) { store, _ in
            let setting = try await store.pool.withConnection { connection in
                try connection.transaction { connection -> String in
                    _ = try SendQueue.claim(limit: 1, owner: "w1", now: testEpoch, lease: 60, on: connection)
                    return try connection.query("SHOW synchronous_commit").single().decode(String.self, at: 0)
                }
            }
            #expect(setting == "on")
            let after = try await store.pool.withConnection { connection in
                _ = try SendQueue.claim(limit: 1, owner: "w1", now: testEpoch, lease: 60, on: connection)
                return try connection.query("SHOW synchronous_commit").single().decode(String.self, at: 0)
            }
            #expect(after == "on")
        }
    }

    // Issue 6: a dead worker's claims are rescued at once (its liveness lock is gone); a live
    // worker's are rescued only when the lease runs out; a recorded attempt becomes outcome-unknown.
    @Test func rescueDeadWorkersAndExpiredLeases() async throws {
        try await withStore(catalog: .standard) { store, database in
            let device = "device-app1/dev1"
            let cause = try await record(SessionStarted(device: iosDevice()), to: device, at: testEpoch, store: store)
            let dead = try await enqueue(.singular, .conversionValue, cause: cause, device: device, key: "dead", now: testEpoch,
                                         store: store)
            // (A Google send: two Singular sends of one device would share a lane.)
            let live = try await enqueue(.google, .conversion, cause: cause, device: device, key: "live", now: testEpoch,
                                         store: store)
            let holder = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            try holder.execute("SELECT pg_advisory_lock(hashtextextended('ledger.worker.alive-worker', 0))")
            let claimedDead = try await store.pool.withConnection {
                try SendQueue.claim(limit: 1, owner: "gone-worker", now: testEpoch, lease: 60, on: $0)
            }
            let claimedLive = try await store.pool.withConnection {
                try SendQueue.claim(limit: 1, owner: "alive-worker", now: testEpoch, lease: 60, on: $0)
            }
            try #require(claimedDead.map(\.sendID) == [dead.sendID] && claimedLive.map(\.sendID) == [live.sendID])
            // The dead worker had recorded its attempt before dying.
            let attempted = SendAttempted(attempt: 1, request: RecordedRequest(method: "GET", url: "https://example.test/", headers: []))
            try await store.append([NewEvent(type: SendAttempted.eventType, data: try EventCatalog.standard.encode(attempted),
                                             occurredAt: testEpoch)], to: try #require(claimedDead.first).streamID)

            let rescued = try await store.pool.withConnection { try SendQueue.rescue(now: testEpoch, store: store, on: $0) }
            #expect(rescued == 1)
            // Singular does not deduplicate (Singular SKAdNetwork 4 implementation guide): the send
            // whose outcome is unknown is parked for an operator, not made pending.
            #expect(try await streamTypes(claimedDead[0].streamID, store: store)
                    == ["SendRequested", "SendAttempted", "SendOutcomeUnknown", "SendParked"])
            let laterRescue = try await store.pool.withConnection {
                try SendQueue.rescue(now: testEpoch.addingTimeInterval(61), store: store, on: $0)
            }
            #expect(laterRescue == 1)
            // No attempt was recorded for the live worker's claim: released, no outcome-unknown; the
            // log says that try made no call.
            #expect(try await streamTypes(claimedLive[0].streamID, store: store) == ["SendRequested", "RetryScheduled"])
            let again = try await store.pool.withConnection {
                try SendQueue.claim(limit: 5, owner: "w3", now: testEpoch.addingTimeInterval(61), lease: 60, on: $0)
            }
            #expect(Set(again.map(\.attempt)) == [2])
        }
    }

    // Issue 6: one terminal event per send is a database rule, whoever writes it.
    @Test func aSecondTerminalEventIsRefusedByTheDatabase() async throws {
        try await withStore(catalog: .standard) { store, _ in
            let stream = StreamID.send(id: UUID()).rawValue
            let succeeded = try EventCatalog.standard.encode(SendSucceeded(attempt: 1))
            try await store.append([NewEvent(type: SendSucceeded.eventType, data: succeeded, occurredAt: testEpoch)], to: stream)
            let failed = try EventCatalog.standard.encode(SendFailed(attempt: 1, rule: "late"))
            let error = await #expect(throws: PostgresError.self) {
                try await store.append([NewEvent(type: SendFailed.eventType, data: failed, occurredAt: testEpoch)], to: stream)
            }
            #expect(error?.sqlState == "LE004")
            #expect(try await streamTypes(stream, store: store) == ["SendSucceeded"])
        }
    }

    // Issue 6: the same rule on every way an event reaches `events` (schema/0009 checks it in the
    // append statements; the partial unique index holds it for everyone else).
    @Test func aSecondTerminalEventIsRefusedOnEveryPath() async throws {
        try await withStore(catalog: .standard) { store, database in
            let connection = try PostgresConnection(conninfo: database.conninfo, logger: TestDatabase.quietLogger)
            func terminal(_ n: Int) throws -> NewEvent {
                NewEvent(type: SendFailed.eventType, data: try EventCatalog.standard.encode(SendFailed(attempt: n, rule: "late")),
                         occurredAt: testEpoch)
            }
            // Two in one batch: refused before anything is sent, naming the rule.
            let batch = StreamID.send(id: UUID()).rawValue
            await #expect(throws: EventStoreError.self) { try await store.append([try terminal(1), try terminal(2)], to: batch) }
            do {
                _ = try await store.append([try terminal(1), try terminal(2)], to: batch)
            } catch let EventStoreError.invalidEvent(index, _, field, rule, _) {
                #expect(index == 1 && field == "type" && rule == "one_terminal_per_send")
            }
            #expect(try await streamTypes(batch, store: store).isEmpty)
            // A batch (the head-reading statement), a conditional multi-stream append (the worker's
            // outcomes) and a plain multi-stream append, each after the stream's terminal event.
            let stream = StreamID.send(id: UUID()).rawValue
            let other = StreamID.send(id: UUID()).rawValue
            try await store.append([try terminal(1)], to: stream)
            let unknown = NewEvent(type: SendOutcomeUnknown.eventType,
                                   data: try EventCatalog.standard.encode(SendOutcomeUnknown(attempt: 2, leaseExpiredAt: testEpoch)),
                                   occurredAt: testEpoch)
            var refusals: [String?] = []
            for append in [
                { try store.append([unknown, try terminal(3)], to: stream, on: connection) },
                {
                    let condition = AppendCondition(function: "string_to_table", arguments: [.text("\(stream),\(other)"), .text(",")])
                    _ = try store.append([StreamAppend([try terminal(2)], to: stream), StreamAppend([try terminal(1)], to: other)],
                                         where: condition, on: connection)
                },
                { _ = try store.append([StreamAppend([try terminal(2)], to: stream), StreamAppend([try terminal(1)], to: other)], on: connection) },
            ] as [() throws -> Void] {
                do { try append(); refusals.append(nil) } catch { refusals.append((error as? PostgresError)?.sqlState) }
            }
            #expect(refusals == ["LE004", "LE004", "LE004"])
            #expect(try await streamTypes(stream, store: store) == ["SendFailed"])
            #expect(try await streamTypes(other, store: store).isEmpty)
            // Direct SQL, as the application role: the index's unique violation.
            try connection.run(script: "SET ROLE ledger_app")
            let direct = #expect(throws: PostgresError.self) {
                try connection.execute("""
                    INSERT INTO events (stream_id, stream_version, event_id, event_type, schema_version, data, occurred_at,
                                        recorded_at, hash, shard_key)
                    SELECT stream_id, 2, id, 'SendCancelled', 1, '{}', now(), t,
                           ledger_event_hash(hash, stream_id, 2, id, 'SendCancelled', 1, '{}', '{}', now(), t), shard_key
                    FROM events, (SELECT \(UUID()) AS id, greatest(now(), max(recorded_at)) AS t FROM events
                                  WHERE stream_id = \(stream)) AS x
                    WHERE stream_id = \(stream) AND stream_version = 1
                    """)
            }
            // (On events partitioned by time, the key table's trigger refuses it with the store's LE004:
            // ops/sql/partition-events-by-time.sql.)
            #expect(direct?.sqlState == (TestDatabase.partitionsEvents ? "LE004" : "23505"))
            try connection.run(script: "RESET ROLE")
            #expect(try await streamTypes(stream, store: store) == ["SendFailed"])
        }
    }

    // A try rescued before it recorded anything called nobody: it is not one of the send's calls,
    // and the live queue and the queue rebuilt from the log give the next try the same call number.
    @Test func aRescuedTryThatRecordedNothingIsNotACall() async throws {
        try await withStore(catalog: .standard) { store, _ in
            let device = "device-app1/r"
            let open = try await record(SessionStarted(device: iosDevice()), to: device, at: testEpoch, store: store)
            _ = try await enqueue(.google, .conversion, cause: open, device: device, key: "r1", now: testEpoch, store: store)
            func claim(at now: Date) async throws -> SendQueue.Claim {
                try #require(try await store.pool.withConnection {
                    try SendQueue.claim(limit: 1, owner: "w1", now: now, lease: 60, on: $0)
                }.first)
            }
            let first = try await claim(at: testEpoch)
            #expect(first.attempt - first.uncalled == 1)
            // The worker dies before recording its attempt; the lease runs out.
            let later = testEpoch.addingTimeInterval(61)
            #expect(try await store.pool.withConnection { try SendQueue.rescue(now: later, store: store, on: $0) } == 1)
            let second = try await claim(at: later)
            #expect(second.attempt - second.uncalled == 1, "the rescued try was no call")
            // The second try calls and is answered with a retry.
            let retryAt = later.addingTimeInterval(100)
            _ = try await store.pool.withConnection { connection in
                try store.append([StreamAppend([
                    try NewEvent(SendAttempted(attempt: second.attempt,
                                               request: RecordedRequest(method: "POST", url: "https://example.test/", headers: [])),
                                 occurredAt: later),
                    try NewEvent(RetryScheduled(attempt: second.attempt, rule: "http_5xx_backoff", notBefore: retryAt), occurredAt: later),
                ], to: second.streamID)], where: SendQueue.settled([(second, retryAt)], owner: "w1"), on: connection)
            }
            // The next try is the send's second call, in the live queue and in one rebuilt from the log.
            let live = try await claim(at: retryAt)
            #expect(live.attempt - live.uncalled == 2, "live queue")
            _ = try await store.pool.withConnection { try SendQueue.rebuild(on: $0) }
            let rebuilt = try await claim(at: retryAt)
            #expect(rebuilt.attempt - rebuilt.uncalled == 2, "rebuilt queue")
        }
    }

    // Issue 6: the queue is a projection — rebuilt from the log, it holds the same sends, attempts,
    // tries that made no call (schema/0010) and due times.
    @Test func queueRebuildsFromTheLog() async throws {
        try await withStore(catalog: .standard) { store, _ in
            let device = "device-app1/dev1"
            let cause = try await record(SessionStarted(device: iosDevice()), to: device, at: testEpoch, store: store)
            let done = try await enqueue(.singular, .conversionValue, cause: cause, device: device, key: "done", now: testEpoch,
                                         store: store)
            let waiting = try await enqueue(.branch, .open, cause: cause, device: device, key: "waiting", now: testEpoch,
                                            store: store)
            let doneStream = StreamID.send(id: done.sendID).rawValue
            try await store.append([NewEvent(type: SendSucceeded.eventType,
                                             data: try EventCatalog.standard.encode(SendSucceeded(attempt: 1)),
                                             occurredAt: testEpoch)], to: doneStream)
            let waitingStream = StreamID.send(id: waiting.sendID).rawValue
            let retryAt = testEpoch.addingTimeInterval(300)
            // Try 1 called and was answered 429; try 2 made no call.
            for attempt in 1...2 {
                let retry = attempt == 1
                    ? RetryScheduled(attempt: 1, rule: "branch_429_back_off", notBefore: retryAt)
                    : RetryScheduled(attempt: 2, rule: "request_changed_while_waiting", notBefore: testEpoch, called: false)
                try await store.append([
                    NewEvent(SendAttempted(attempt: attempt, request: RecordedRequest(method: "POST", url: "https://example.test/",
                                                                                     headers: [])), occurredAt: testEpoch),
                    NewEvent(retry, occurredAt: testEpoch),
                ], to: waitingStream)
            }
            let rebuilt = try await store.pool.withConnection { try SendQueue.rebuild(on: $0) }
            #expect(rebuilt == 1)
            let row = try await store.pool.query(
                "SELECT send_id, attempt, not_before, lane, state, uncalled FROM send_queue").single()
            #expect(try row.decode(UUID.self, at: 0) == waiting.sendID)
            #expect(try row.decode(Int.self, at: 1) == 2)
            #expect(try row.decode(Int.self, at: 5) == 1, "the next try is the send's second call")
            #expect(try row.decode(Date.self, at: 2) == retryAt)
            #expect(try row.decode(String?.self, at: 3) == device)
            #expect(try row.decode(String.self, at: 4) == "pending")
        }
    }
}
