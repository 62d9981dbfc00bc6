import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import Testing

extension WorkerTests {
    // Apple AdServices attribution API: a 404 is retried after 5 seconds, and the 200 settles the
    // lookup. Every event the worker appends for the send (tries, answers, the retry, the end)
    // names the shard key of the device that caused it, so the send's stream lives with the
    // device's (docs/scaling.md), as does its queue row; with `events` and `send_queue`
    // hash-partitioned on the key (LEDGER_TEST_EVENTS_SHARDED=1), in the device's partition.
    @Test func theWorkersEventsForASendShareItsDevicesShardKey() async throws {
        try await Self.withRig { rig in
            let cause = try await install(rig)
            rig.fakes.apple.enqueue(.status(404))
            let send = try await enqueue(.appleAdServices, .tokenLookup, cause: cause, device: Self.device, key: "apple:shard",
                                         now: testEpoch, store: rig.store)
            let stream = StreamID.send(id: send.sendID).rawValue
            // The queue's row names the device's key too, and sits in the same remainder.
            let queued = try await rig.store.pool.withConnection { connection in
                let row = try connection.query("SELECT shard_key, tableoid::regclass::text FROM send_queue WHERE stream_id = \(stream)")
                    .single()
                return (try row.decode(String?.self, at: 0), try row.decode(String.self, at: 1))
            }
            #expect(queued.0 == "app1/dev1")
            #expect(try await rig.worker.drain() == 1)
            rig.clock.advance(by: 5)
            #expect(try await rig.worker.drain() == 1)
            #expect(try await streamTypes(stream, store: rig.store) == [
                "SendRequested", "SendAttempted", "ResponseReceived", "RetryScheduled", "SendAttempted", "ResponseReceived",
                "SendSucceeded",
            ])
            let rows = try await rig.store.pool.withConnection { connection in
                try connection.query("""
                    SELECT stream_id, shard_key, tableoid::regclass::text FROM events
                    WHERE stream_id = ANY(\(PostgresQuery.textArrayLiteral([Self.device, stream]))::text[])
                    """).map { (try $0.decode(String.self, at: 0), try $0.decode(String?.self, at: 1), try $0.decode(String.self, at: 2)) }
            }
            #expect(rows.count(where: { $0.0 == stream }) == 7 && rows.count(where: { $0.0 == Self.device }) >= 1)
            #expect(rows.allSatisfy { $0.1 == "app1/dev1" }, "\(rows)")
            #expect(Set(rows.map(\.2)).count == 1, "\(rows)")
            if TestDatabase.shardsEvents {
                #expect(rows.allSatisfy { $0.2.hasPrefix("events_shard_") }, "\(rows)")
                let eventsRemainder = rows.first.map { String($0.2.dropFirst("events_shard_".count)) }
                #expect(eventsRemainder == String(queued.1.dropFirst("send_queue_shard_".count)), "\(queued.1)")
            }
        }
    }
}
