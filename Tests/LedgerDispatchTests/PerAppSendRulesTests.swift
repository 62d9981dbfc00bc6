import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFolds
import LedgerProviders
import LedgerStore
import Testing

/// Which app's rules a try is built with: the cause's metadata `app_id`, else the app of its
/// stream id, else the variables' rules. Google App Conversion Tracking API: the `link_id` binds
/// the developer token to one app, so the choice decides which app a conversion is reported for.
@Suite("Per-app send rules routing")
struct PerAppSendRulesTests {
    static let epoch = Date(timeIntervalSince1970: 1_763_000_000)

    static func google(_ link: String) -> ProviderSendRules {
        ProviderSendRules(google: GoogleConversionRequestBuilder(link: GoogleAppLink(devToken: "token-\(link)", linkID: link)))
    }

    static let rules = PerAppSendRules(.init(
        apps: ["com.example.a": google("ALINK"), "com.example.b": google("BLINK")], others: google("OTHERLINK")))

    /// A first open in `stream` with `metadata`, and a Google conversion send caused by it.
    static func context(stream: String, metadata: String) throws -> SendContext {
        let device = DeviceContext(
            platform: .ios, idfa: "F10E1DE2-E237-4F50-B6AA-843C45CC63D6", idfv: "21DB6612-09B3-4ECC-84AC-B353B0AF1334",
            limitAdTracking: false, attStatus: .authorized, ip: "81.2.69.160",
            userAgent: UserAgentParts(appName: "App", appVersion: "1.2.3", osName: "iOS", osVersion: "17.1", locale: "en_US",
                                      deviceModel: "iPhone15,2", build: "21B74"),
            osVersion: "17.1", appVersion: "1.2.3", bundleID: "com.example.app")
        let open = FirstOpen(appID: try AppID("com.example.a"), device: device)
        let cause = RecordedEvent(
            position: 1, transactionID: 1, streamID: stream, streamVersion: 1, id: UUID(), type: FirstOpen.eventType,
            schemaVersion: FirstOpen.schemaVersion, data: try EventCatalog.standard.encode(open), metadata: Data(metadata.utf8),
            occurredAt: epoch, recordedAt: epoch, hash: Data())
        let send = SendRequested(
            sendID: UUID(), provider: .google, kind: .conversion, causeEventID: cause.id, causeStreamID: try StreamID(stream),
            deviceStreamID: try StreamID(stream), idempotencyKey: "g:\(cause.id)")
        return SendContext(send: send, sendStreamID: "send-x", attempt: 1, cause: cause,
                           branchIdentity: BranchIdentityReducer().initialState(), skan: SKANDeviceReducer().initialState(),
                           now: epoch.addingTimeInterval(2), jitter: 0)
    }

    static func linkID(stream: String, metadata: String) throws -> String? {
        try rules.buildRequest(context(stream: stream, metadata: metadata)).query.first { $0.name == "link_id" }?.value
    }

    @Test func theCausesMetadataAppChoosesTheRules() throws {
        #expect(try Self.linkID(stream: "device-com.example.a/dev1", metadata: #"{"actor":"x","app_id":"com.example.a"}"#) == "ALINK")
        #expect(try Self.linkID(stream: "device-com.example.b/dev1", metadata: #"{"actor":"x","app_id":"com.example.b"}"#) == "BLINK")
    }

    @Test func withoutAnAppInTheMetadataTheStreamsAppChooses() throws {
        #expect(try Self.linkID(stream: "device-com.example.b/dev1", metadata: "{}") == "BLINK")
    }

    @Test func anAppWithoutRulesOfItsOwnGetsTheVariablesRules() throws {
        #expect(try Self.linkID(stream: "device-com.example.c/dev1", metadata: #"{"app_id":"com.example.c"}"#) == "OTHERLINK")
        #expect(try Self.linkID(stream: "device-legacy-stream", metadata: "{}") == "OTHERLINK")
    }

    @Test func everyAppsCredentialsAreConfiguredSecrets() {
        #expect(Self.rules.configuredSecrets == ["token-ALINK", "token-BLINK", "token-OTHERLINK"])
    }
}
