import Foundation
import LedgerDomain
import LedgerFakeProviders
import LedgerProviders
import LedgerTestKit
import Testing

/// Two apps through the real `ledger append` and `ledger worker` processes, one apps file, the
/// fake providers over HTTP. Google App Conversion Tracking API: a `link_id` binds the developer
/// token "to a specific app". The fakes stand for app A's account only, so they accept A's
/// requests and refuse B's as `wrong_credential` (declared below): what the test reads is that
/// every request carried its own app's credentials and never the other app's.
@Suite("Two apps through ledger worker", .database, .serialized)
struct AppsFileWorkerTests {
    static let accountA = FakeProviders.Credentials(
        googleDevToken: "alpha-dev-token-SECRET", googleLinkID: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", branchKey: "key_live_alpha",
        branchSecret: "alpha-branch-secret")
    static let accountB = FakeProviders.Credentials(
        googleDevToken: "beta-dev-token-SECRET", googleLinkID: "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB", branchKey: "key_live_beta",
        branchSecret: "beta-branch-secret")

    /// A first open of an Android device of `app` as an append line (Google and Branch sends).
    static func firstOpenLine(app: String, device index: Int) throws -> String {
        let device = DeviceContext(
            platform: .android, gaid: String(format: "38400000-8CF0-11BD-B23E-%012X", index + (app.hasSuffix("beta") ? 100 : 0)),
            limitAdTracking: false, ip: "198.51.100.4",
            userAgent: UserAgentParts(appName: "App", appVersion: "2.0", osName: "Android", osVersion: "14", locale: "en_US",
                                      deviceModel: "Pixel 8", build: "UQ1A"),
            osVersion: "14", appVersion: "2.0", bundleID: app)
        let data = try EventCatalog.standard.encode(FirstOpen(appID: try AppID(app), device: device))
        let object: [String: Any] = [
            "app": app, "device_id": "dev\(index)", "id": UUID().uuidString, "type": "FirstOpen",
            "occurred_at": "2026-11-23T10:00:00Z", "data": try JSONSerialization.jsonObject(with: data),
        ]
        return String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    @Test(.timeLimit(.minutes(3)))
    func eachAppsRequestsCarryOnlyItsOwnCredentials() async throws {
        try await TestDatabase.with { database in
            try await withCheckedFakeProviders(configuration: .init(credentials: Self.accountA)) { fakes in
                fakes.branch.setRapidRepeatInterval(.zero)
                fakes.expectAnomaly(.google, "wrong_credential", count: 2)
                fakes.expectAnomaly(.branch, "wrong_credential", count: 2)
                let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-two-apps-\(UUID().uuidString.prefix(8))")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: folder) }
                let appsFile = folder.appendingPathComponent("apps.json")
                try Data(#"""
                    {"apps": {
                      "com.example.alpha": {"providers": {
                        "google": {"dev_token": {"env": "ALPHA_GOOGLE_DEV_TOKEN"}, "link_id": "\#(Self.accountA.googleLinkID)"},
                        "branch": {"key": {"env": "ALPHA_BRANCH_KEY"}, "secret": {"env": "ALPHA_BRANCH_SECRET"}}}},
                      "com.example.beta": {"providers": {
                        "google": {"dev_token": {"env": "BETA_GOOGLE_DEV_TOKEN"}, "link_id": "\#(Self.accountB.googleLinkID)"},
                        "branch": {"key": {"env": "BETA_BRANCH_KEY"}, "secret": {"env": "BETA_BRANCH_SECRET"}}}}}}
                    """#.utf8).write(to: appsFile)
                let environment = [
                    "ALPHA_GOOGLE_DEV_TOKEN": Self.accountA.googleDevToken, "ALPHA_BRANCH_KEY": Self.accountA.branchKey,
                    "ALPHA_BRANCH_SECRET": Self.accountA.branchSecret, "BETA_GOOGLE_DEV_TOKEN": Self.accountB.googleDevToken,
                    "BETA_BRANCH_KEY": Self.accountB.branchKey, "BETA_BRANCH_SECRET": Self.accountB.branchSecret,
                    "LEDGER_GOOGLE_URL": "http://127.0.0.1:\(fakes.port)", "LEDGER_BRANCH_URL": "http://127.0.0.1:\(fakes.port)",
                    "LEDGER_APPS_FILE": appsFile.path,
                ]
                let facts = folder.appendingPathComponent("facts.jsonl")
                let lines = try [0, 1].flatMap { index in
                    [try Self.firstOpenLine(app: "com.example.alpha", device: index), try Self.firstOpenLine(app: "com.example.beta", device: index)]
                }
                try Data(lines.joined(separator: "\n").utf8).write(to: facts)
                let append = try await LedgerProcess.runDetached(["append", "--database-url", database.conninfo], environment: environment,
                                                                 stdin: facts)
                #expect(append.status == 0, "\(append.stdout) \(append.stderr)")
                let worker = try await LedgerProcess.runDetached(["worker", "--drain", "--no-decide", "--database-url", database.conninfo],
                                                                 environment: environment)
                #expect(worker.status == 0, "\(worker.stderr)")
                #expect(worker.stdout.contains("drained: 8 tries"), "\(worker.stdout)")

                let google = fakes.google.requests
                #expect(google.count == 4)
                for request in google {
                    let link = request.queryValue("link_id")
                    let token = request.queryValue("dev_token")
                    #expect((link, token) == (Self.accountA.googleLinkID, Self.accountA.googleDevToken)
                        || (link, token) == (Self.accountB.googleLinkID, Self.accountB.googleDevToken), "\(request.rawQuery)")
                }
                #expect(google.filter { $0.queryValue("link_id") == Self.accountA.googleLinkID }.count == 2)
                #expect(google.filter { $0.queryValue("link_id") == Self.accountB.googleLinkID }.count == 2)
                let branch = fakes.branch.requests
                #expect(branch.count == 4)
                for request in branch {
                    let alpha = request.bodyText.contains("\"\(Self.accountA.branchKey)\"")
                        && request.bodyText.contains("\"\(Self.accountA.branchSecret)\"")
                    let beta = request.bodyText.contains("\"\(Self.accountB.branchKey)\"")
                        && request.bodyText.contains("\"\(Self.accountB.branchSecret)\"")
                    #expect(alpha != beta, "each Branch open carries one app's key and secret: \(request.bodyText)")
                }
                #expect(branch.filter { $0.bodyText.contains("\"\(Self.accountB.branchKey)\"") }.count == 2)
            }
        }
    }
}
