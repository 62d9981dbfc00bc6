import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import LedgerHTTPTransport
import LedgerPostgres
import LedgerProviders
import LedgerStore
import LedgerTestKit
import Testing

/// Two apps, two provider accounts: each send goes out with its own app's credentials, through the
/// real worker over HTTP on loopback. Google App Conversion Tracking API: a `link_id` binds the
/// developer token "to a specific app"; each fake accepts only its own account's credentials and
/// notes any other as an anomaly (`wrong_credential`), which fails the test.
@Suite("Per-app credentials through the send worker", .database, .serialized)
struct PerAppCredentialsTests {
    static let appA = "com.example.alpha"
    static let appB = "com.example.beta"
    static let accountA = FakeProviders.Credentials(
        googleDevToken: "alpha-dev-token-SECRET", googleLinkID: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", branchKey: "key_live_alpha",
        branchSecret: "alpha-branch-secret", singularSDKKey: "alpha-sdk")
    static let accountB = FakeProviders.Credentials(
        googleDevToken: "beta-dev-token-SECRET", googleLinkID: "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB", branchKey: "key_live_beta",
        branchSecret: "beta-branch-secret", singularSDKKey: "beta-sdk")
    static let accountARotated = FakeProviders.Credentials(
        googleDevToken: "rotated-dev-token-SECRET", googleLinkID: "CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC", branchKey: "key_live_rotated",
        branchSecret: "rotated-branch-secret", singularSDKKey: "rotated-sdk")

    /// Google and Branch rules towards `fakes`, with the credentials they accept.
    static func rules(_ fakes: FakeProviders) -> ProviderSendRules {
        ProviderSendRules(google: GoogleConversionRequestBuilder(link: fakes.googleLink, endpoint: fakes.googleEndpoint),
                          branch: fakes.branchConfiguration)
    }

    /// A first open of `device` of `app`, recorded as the facade records it: the app in the
    /// metadata (`app_id`) and in the stream id.
    static func firstOpen(app: String, device index: Int, store: EventStore) async throws -> (stream: String, cause: RecordedEvent) {
        let stream = "device-\(app)/dev\(index)"
        let open = FirstOpen(appID: try AppID(app), device: iosDevice(idfv: deviceUUID(app, index, kind: "F"),
                                                                        idfa: deviceUUID(app, index, kind: "A")))
        let metadata = try JSONEncoder().encode(["actor": "test", "app_id": app])
        let appended = try await store.append(
            [NewEvent(type: FirstOpen.eventType, schemaVersion: FirstOpen.schemaVersion, data: try EventCatalog.standard.encode(open),
                      metadata: metadata, occurredAt: testEpoch)],
            to: stream)
        return (stream, try #require(try await store.event(id: appended.events[0].id)))
    }

    /// A Google conversion and a Branch open for each of `count` devices of each app, interleaved.
    static func enqueueOpens(apps: [String], count: Int, from first: Int = 0, store: EventStore) async throws {
        for index in first..<(first + count) {
            for app in apps {
                let open = try await firstOpen(app: app, device: index, store: store)
                try await enqueue(.google, .conversion, cause: open.cause, device: open.stream, key: "g:\(app):\(index)",
                                  now: testEpoch, store: store)
                try await enqueue(.branch, .open, cause: open.cause, device: open.stream, key: "b:\(app):\(index)",
                                  now: testEpoch, store: store)
            }
        }
    }

    /// Every request `fakes` received carried `account`'s credentials and none of `others`'.
    static func expectOnly(_ account: FakeProviders.Credentials, notOf others: [FakeProviders.Credentials], in fakes: FakeProviders,
                           google: Int, branch: Int) {
        #expect(fakes.google.requestCount == google)
        #expect(fakes.branch.requestCount == branch)
        for request in fakes.google.requests {
            #expect(request.queryValue("link_id") == account.googleLinkID)
            #expect(request.queryValue("dev_token") == account.googleDevToken)
        }
        for request in fakes.branch.requests {
            #expect(request.bodyText.contains("\"\(account.branchKey)\""))
            #expect(request.bodyText.contains("\"\(account.branchSecret)\""))
        }
        for request in fakes.allRequests {
            let text = request.bodyText + request.query.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
            for other in others {
                for credential in [other.googleDevToken, other.googleLinkID, other.branchKey, other.branchSecret] {
                    #expect(!text.contains(credential), "a request to \(account.googleLinkID)'s fakes carried another app's credential")
                }
            }
        }
    }

    @Test func eachAppsSendsCarryOnlyItsOwnLinkTokenAndBranchKey() async throws {
        try await withStore(catalog: .standard) { store, _ in
            try await withCheckedFakeProviders(configuration: .init(credentials: Self.accountA)) { fakesA in
                try await withCheckedFakeProviders(configuration: .init(credentials: Self.accountB)) { fakesB in
                    try await withCheckedFakeProviders(configuration: .init(credentials: Self.accountARotated)) { fakesRotated in
                        for fakes in [fakesA, fakesB, fakesRotated] { fakes.branch.setRapidRepeatInterval(.zero) }
                        // Apps without rules of their own get none: a misrouted send would fail
                        // `provider_not_configured` instead of reaching a fake.
                        let rules = PerAppSendRules(.init(apps: [Self.appA: Self.rules(fakesA), Self.appB: Self.rules(fakesB)],
                                                          others: ProviderSendRules()))
                        let transport = HTTPProviderTransport()
                        do {
                            let worker = SendWorker(
                                store: store, rules: rules, transport: transport,
                                configuration: .init(workerID: "two-apps", slots: 4, lease: 30, requestTimeout: .seconds(5)),
                                clock: ManualClock(testEpoch), jitter: { 0.5 }, logger: TestDatabase.quietLogger)
                            try await Self.enqueueOpens(apps: [Self.appA, Self.appB], count: 3, store: store)
                            #expect(try await worker.drain() == 12)
                            #expect(try await store.pool.query(
                                "SELECT count(*) FROM events WHERE event_type = 'SendSucceeded'").single().decode(Int.self, at: 0) == 12)
                            Self.expectOnly(Self.accountA, notOf: [Self.accountB], in: fakesA, google: 3, branch: 3)
                            Self.expectOnly(Self.accountB, notOf: [Self.accountA], in: fakesB, google: 3, branch: 3)

                            // A reload rotates app A's credentials: its next sends use the new
                            // ones, app B's are untouched.
                            rules.table.replace(with: .init(
                                apps: [Self.appA: Self.rules(fakesRotated), Self.appB: Self.rules(fakesB)], others: ProviderSendRules()))
                            try await Self.enqueueOpens(apps: [Self.appA, Self.appB], count: 2, from: 3, store: store)
                            #expect(try await worker.drain() == 8)
                            Self.expectOnly(Self.accountA, notOf: [Self.accountB, Self.accountARotated], in: fakesA, google: 3, branch: 3)
                            Self.expectOnly(Self.accountARotated, notOf: [Self.accountA, Self.accountB], in: fakesRotated, google: 2,
                                            branch: 2)
                            Self.expectOnly(Self.accountB, notOf: [Self.accountA, Self.accountARotated], in: fakesB, google: 5, branch: 5)
                            #expect(try await queueCount(store) == 0)
                        } catch {
                            await transport.shutdown()
                            throw error
                        }
                        await transport.shutdown()
                    }
                }
            }
        }
    }
}
