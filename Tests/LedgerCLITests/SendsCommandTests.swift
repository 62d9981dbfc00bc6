import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import Testing

/// `ledger sends list|retry|cancel` through the real `ledger` process (docs/operations.md, "Parked
/// and failed sends"). The sends are put in their states by the queue's own functions: a Singular
/// send parked by the rescue after a try whose outcome is unknown (Singular SKAdNetwork 4
/// implementation guide: Singular counts every request), and a Google send failed for good.
@Suite("ledger sends", .database)
struct SendsCommandTests {
    static let epoch = Date(timeIntervalSince1970: 1_763_000_000)

    static func device(_ app: String, _ id: String) -> DeviceContext {
        DeviceContext(platform: .ios, idfv: "21DB6612-09B3-4ECC-84AC-B353B0AF1334", limitAdTracking: false, ip: "203.0.113.7",
                      userAgent: UserAgentParts(appName: "App", appVersion: "1.0", osName: "iOS", osVersion: "17.1",
                                                locale: "en_US", deviceModel: "iPhone15,2", build: "21B74"),
                      osVersion: "17.1", appVersion: "1.0", bundleID: app)
    }

    /// A first open of `device-<app>/<id>` and one send of it, claimed by a worker that is gone;
    /// its try recorded as attempted when `attempted`.
    static func claimedSend(_ provider: SendProvider, _ kind: SendKind, app: String, id: String, attempted: Bool,
                            store: EventStore) async throws -> SendQueue.Claim {
        let stream = "device-\(app)/\(id)"
        let data = try EventCatalog.standard.encode(FirstOpen(appID: try AppID(app), device: device(app, id)))
        let appended = try await store.append([NewEvent(type: FirstOpen.eventType, data: data, occurredAt: epoch)], to: stream)
        let cause = try #require(try await store.event(id: appended.events[0].id))
        let request = try Outbox.request(provider: provider, kind: kind, cause: cause, deviceStreamID: try StreamID(stream),
                                         idempotencyKey: "\(provider.rawValue):\(id)")
        return try await store.pool.withConnection { connection in
            try connection.transaction { _ = try Outbox.enqueue(request, store: store, now: epoch, on: $0) }
            let owner = "gone-\(id)"
            let claim = try #require(try SendQueue.claim(limit: 10, owner: owner, now: epoch, lease: 30, on: connection)
                .first { $0.sendID == request.sendID })
            if attempted {
                let event = try NewEvent(SendAttempted(attempt: claim.attempt, request: RecordedRequest(
                    method: "GET", url: "https://sdk-api-v1.singular.net/api/v2/conversion_value", headers: [], body: nil)),
                    id: Outbox.attemptEventID(sendID: claim.sendID, attempt: claim.attempt), occurredAt: epoch)
                _ = try store.append([StreamAppend([event], to: claim.streamID)],
                                     where: SendQueue.stillHeld([claim], owner: owner), on: connection)
            }
            return claim
        }
    }

    /// Two apps' Singular sends parked by the rescue, and a Google send failed for good.
    static func fixtures(_ store: EventStore) async throws -> (parkedGame: UUID, parkedOther: UUID, failed: UUID) {
        let game = try await claimedSend(.singular, .conversionValue, app: "com.example.game", id: "p1", attempted: true, store: store)
        let other = try await claimedSend(.singular, .conversionValue, app: "com.example.other", id: "p2", attempted: true,
                                          store: store)
        let failed = try await claimedSend(.google, .conversion, app: "com.example.game", id: "f1", attempted: false, store: store)
        try await store.pool.withConnection { connection in
            let event = try NewEvent(SendFailed(attempt: nil, rule: "locale_invalid", detail: "es_419"), occurredAt: epoch)
            _ = try store.append([StreamAppend([event], to: failed.streamID)],
                                 where: SendQueue.settled([(claim: failed, retryAt: nil)], owner: "gone-f1"), on: connection)
            // The Singular workers are gone (no liveness lock): the rescue parks their sends.
            let rescued = try SendQueue.rescue(now: epoch.addingTimeInterval(5), store: store, policy: .documented, on: connection)
            #expect(rescued.count == 2 && rescued.parked.count == 2)
        }
        return (game.sendID, other.sendID, failed.sendID)
    }

    static func run(_ arguments: [String], _ database: TestDatabase.Handle) async throws -> LedgerProcess.Result {
        try await LedgerProcess.runDetached(arguments + ["--database-url", database.conninfo])
    }

    @Test("list filters by state and app, naming send, app, provider/kind, device, state, rule and when")
    func listFiltersByStateAndApp() async throws {
        try await withStore(catalog: .standard) { store, database in
            let (parkedGame, parkedOther, failed) = try await Self.fixtures(store)

            let parked = try await Self.run(["sends", "list", "--state", "parked", "--json"], database)
            #expect(parked.status == 0, "\(parked.stderr)")
            let report = try #require(try JSONSerialization.jsonObject(with: Data(parked.stdout.utf8)) as? [String: Any])
            let sends = try #require(report["sends"] as? [[String: Any]])
            #expect(Set(sends.compactMap { $0["send_id"] as? String }) == [parkedGame.lowercasedText, parkedOther.lowercasedText])
            let game = try #require(sends.first { $0["send_id"] as? String == parkedGame.lowercasedText })
            #expect(game["app"] as? String == "com.example.game")
            #expect(game["provider"] as? String == "singular" && game["kind"] as? String == "conversion_value")
            #expect(game["device_stream_id"] as? String == "device-com.example.game/p1")
            #expect(game["state"] as? String == "parked" && game["rule"] as? String == "singular_outcome_unknown")
            #expect(game["at"] != nil)

            let gameOnly = try await Self.run(["sends", "list", "--state", "parked", "--app", "com.example.game"], database)
            #expect(gameOnly.status == 0, "\(gameOnly.stderr)")
            #expect(gameOnly.stdout.contains(parkedGame.lowercasedText) && !gameOnly.stdout.contains(parkedOther.lowercasedText))
            #expect(gameOnly.stdout.contains("singular/conversion_value  device-com.example.game/p1  parked  rule=singular_outcome_unknown"))
            #expect(gameOnly.stdout.contains("1 parked send of com.example.game"))

            let failedList = try await Self.run(["sends", "list", "--state", "failed"], database)
            #expect(failedList.status == 0, "\(failedList.stderr)")
            #expect(failedList.stdout.contains("\(failed.lowercasedText)  app=com.example.game  google/conversion"))
            #expect(failedList.stdout.contains("failed  rule=locale_invalid"))
            #expect(!failedList.stdout.contains(parkedGame.lowercasedText))
            #expect(!failedList.stdout.contains("es_419"), "a failure's detail is personal: not listed")

            let none = try await Self.run(["sends", "list", "--state", "failed", "--app", "com.example.other"], database)
            #expect(none.status == 0 && none.stdout.contains("no failed sends of com.example.other"))
            let bad = try await Self.run(["sends", "list", "--state", "stuck"], database)
            #expect(bad.status == 64 && bad.stderr.contains("--state must be failed or parked"))

            // `ledger explain` shows the device's parked send and why, and its failed one.
            let explained = try await Self.run(["explain", "device-com.example.game/p1"], database)
            #expect(explained.status == 0, "\(explained.stderr)")
            #expect(explained.stdout.contains("singular/conversion_value send \(parkedGame.lowercasedText): parked at"))
            #expect(explained.stdout.contains("(singular_outcome_unknown) — a try's outcome is unknown"))
            #expect(explained.stdout.contains("ledger sends retry \(parkedGame.lowercasedText)"))
            let explainedFailed = try await Self.run(["explain", "device-com.example.game/f1", "--json"], database)
            #expect(explainedFailed.status == 0, "\(explainedFailed.stderr)")
            let explanation = try #require(try JSONSerialization.jsonObject(with: Data(explainedFailed.stdout.utf8)) as? [String: Any])
            let needing = try #require(explanation["sendsNeedingPeople"] as? [[String: Any]])
            #expect(needing.count == 1 && needing.first?["state"] as? String == "failed" && needing.first?["rule"] as? String == "locale_invalid")
        }
    }

    @Test("retry makes a parked send pending with who and why; cancel ends one; refusals are clear")
    func retryAndCancelSettleParkedSends() async throws {
        try await withStore(catalog: .standard) { store, database in
            let (parkedGame, parkedOther, failed) = try await Self.fixtures(store)

            let retried = try await Self.run(["sends", "retry", parkedGame.lowercasedText, "--reason", "not in Singular's log",
                                              "--by", "ops-oncall"], database)
            #expect(retried.status == 0, "\(retried.stderr)")
            #expect(retried.stdout.contains("is pending again"))
            let state = try await store.pool.query("SELECT state FROM send_queue WHERE send_id = \(parkedGame)").single()
                .decode(String.self, at: 0)
            #expect(state == "pending")
            let unparked = try #require(try await store.readStream(StreamID.send(id: parkedGame).rawValue).last)
            #expect(unparked.type == SendUnparked.eventType)
            let decision = try LedgerJSON.makeDecoder().decode(SendUnparked.self, from: unparked.data)
            #expect(decision.by == "ops-oncall" && decision.reason == "not in Singular's log")

            let cancelled = try await Self.run(["sends", "cancel", parkedOther.lowercasedText, "--reason", "Singular has it",
                                                "--by", "ops-oncall"], database)
            #expect(cancelled.status == 0, "\(cancelled.stderr)")
            #expect(try await store.pool.query("SELECT count(*) FROM send_queue WHERE send_id = \(parkedOther)").single()
                .decode(Int.self, at: 0) == 0)
            let ended = try #require(try await store.readStream(StreamID.send(id: parkedOther).rawValue).last)
            let cancel = try LedgerJSON.makeDecoder().decode(SendCancelled.self, from: ended.data)
            #expect(ended.type == SendCancelled.eventType && cancel.reason == "operator")
            #expect(cancel.detail == "by ops-oncall: Singular has it")

            let parkedNow = try await Self.run(["sends", "list", "--state", "parked"], database)
            #expect(parkedNow.stdout.contains("no parked sends"))

            // Refusals: not parked (pending, ended), no such send, bad id.
            let again = try await Self.run(["sends", "retry", parkedGame.lowercasedText, "--reason", "twice"], database)
            #expect(again.status == 13 && again.stderr.contains("is not parked (it is pending)"), "\(again.stderr)")
            let ended2 = try await Self.run(["sends", "cancel", failed.lowercasedText, "--reason", "x"], database)
            #expect(ended2.status == 13 && ended2.stderr.contains("it is ended with SendFailed"), "\(ended2.stderr)")
            let unknown = UUID()
            let missing = try await Self.run(["sends", "cancel", unknown.lowercasedText, "--reason", "x"], database)
            #expect(missing.status == 12 && missing.stderr.contains("no send \(unknown.lowercasedText)"), "\(missing.stderr)")
            let malformed = try await Self.run(["sends", "retry", "not-a-uuid", "--reason", "x"], database)
            #expect(malformed.status == 64)
        }
    }
}
