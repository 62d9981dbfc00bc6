import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import LedgerStore
import LedgerTestKit
import Testing

/// Google App Conversion Tracking API, "User-Agent components": `locale` is "an IETF locale tag
/// for the device, using two-letter language and country code separated by an underscore
/// (en_US)", and `build` is "Build/" followed by the OS build number. One rule decides both when
/// a fact is appended and when the User-Agent is built: a locale that names a two-letter language
/// and a two-letter country is accepted and sent as `ll_CC` (a script or variant dropped, the
/// separator and case mended); one that cannot be written so — a region that is no country
/// (`es_419`), no country at all (`en`), a three-letter language (`haw_US`) — and a user agent
/// without its OS build are refused when appended, naming the field and the rule, instead of
/// failing the conversion later where no one sees it.
extension WorkerTests {
    /// ``iosDevice()`` with its user agent's locale and build replaced.
    static func deviceContext(locale: String, build: String? = "21B74") -> DeviceContext {
        var device = iosDevice()
        device.userAgent?.locale = locale
        device.userAgent?.build = build
        return device
    }

    @Test(arguments: ["es_419", "en", "haw_US", "EN", "en_", "419"])
    func aLocaleGoogleCannotCarryIsRefusedWhenAppended(locale: String) async throws {
        try await Self.withRig { rig in
            let error = try #require(throws: EventValidationError.self) {
                _ = try EventCatalog.standard.encode(FirstOpen(appID: try AppID("app1"), device: Self.deviceContext(locale: locale)))
            }
            #expect(error.field == "device.user_agent.locale" && error.rule == "locale_ll_CC", "\(error)")
            await #expect(throws: EventValidationError.self) {
                try await record(FirstOpen(appID: try AppID("app1"), device: Self.deviceContext(locale: locale)), to: Self.device,
                                 at: testEpoch, store: rig.store)
            }
            #expect(try await rig.store.readStream(Self.device).isEmpty)
        }
    }

    @Test func aUserAgentWithoutItsBuildIsRefusedWhenAppended() async throws {
        let error = try #require(throws: EventValidationError.self) {
            _ = try EventCatalog.standard.encode(FirstOpen(appID: try AppID("app1"), device: Self.deviceContext(locale: "en_US", build: nil)))
        }
        #expect(error.field == "device.user_agent.build" && error.rule == "required", "\(error)")
    }

    @Test(arguments: [("en_US", "en_US"), ("en-US", "en_US"), ("pt_br", "pt_BR"), ("zh_Hans_CN", "zh_CN"), ("zh-Hant-TW", "zh_TW"),
                      ("en_US_POSIX", "en_US"), ("de_DE@calendar=gregorian", "de_DE")])
    func anAcceptedLocaleReachesGoogleInItsForm(locale: String, sent: String) async throws {
        try await Self.withRig { rig in
            let open = try await record(FirstOpen(appID: try AppID("app1"), device: Self.deviceContext(locale: locale)), to: Self.device,
                                        at: testEpoch, store: rig.store)
            let send = try await enqueue(.google, .conversion, cause: open, device: Self.device, key: "g:locale", now: testEpoch,
                                         store: rig.store)
            #expect(try await rig.worker.drain() == 1)
            #expect(try await streamTypes(StreamID.send(id: send.sendID).rawValue, store: rig.store).last == "SendSucceeded")
            let agent = try #require(rig.fakes.google.conversionRequests.first?.headerValue("User-Agent"))
            #expect(agent.contains("(iOS 17.1; \(sent); iPhone15,2; Build/21B74; Proxy)"), "\(agent)")
        }
    }
}
