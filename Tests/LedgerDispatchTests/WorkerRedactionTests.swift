import Foundation
import LedgerDispatch
import LedgerDomain
import LedgerFakeProviders
import LedgerPostgres
import LedgerStore
import LedgerTestKit
import Testing

/// Answers are stored as received, but a provider's error answer may repeat the request it got,
/// credentials included (Branch v1/open server-to-server guide: "`branch_secret` is a credential";
/// the Google App Conversion Tracking API's `dev_token`; the Singular SKAdNetwork 4
/// implementation guide's SDK key `a`). The worker removes every configured secret from an answer
/// and from a failure's detail before they are appended.
extension WorkerTests {
    /// The events of the log whose data or metadata contain `secret`.
    func eventsContaining(_ secret: String, _ rig: Rig) async throws -> [String] {
        try await rig.store.pool.query(
            "SELECT event_type FROM events WHERE data::text LIKE \("%" + secret + "%") OR metadata::text LIKE \("%" + secret + "%")"
        ).map { try $0.decode(String.self, at: 0) }
    }

    // Google answers with an error code that echoes the request (its `dev_token` in the query),
    // Branch with a 400 page repeating the open (its key and secret in the body), Singular with an
    // error reason echoing the call (its SDK key `a`): each send fails for good, its answer and
    // failure are recorded, and no stored event holds a credential.
    @Test func anAnswerEchoingACredentialIsStoredWithoutIt() async throws {
        try await Self.withRig { rig in
            let cause = try await install(rig, token: nil)
            try await record(SKANRegistered(), to: Self.device, at: testEpoch, store: rig.store)
            rig.fakes.google.enqueue(.echoingRequest(200, json: #"{"ad_events":[],"errors":[$REQUEST],"attributed":false}"#))
            rig.fakes.branch.enqueue(.echoingRequest(400))
            rig.fakes.singular.enqueue(.echoingRequest(200, json: #"{"status":"error","reason":$REQUEST}"#))
            var streams: [String] = []
            for (provider, kind, key) in [(SendProvider.google, SendKind.conversion, "g:echo"), (.branch, .open, "b:echo"),
                                          (.singular, .conversionValue, "s:echo")] {
                let send = try await enqueue(provider, kind, cause: cause, device: Self.device, key: key, now: testEpoch,
                                             store: rig.store)
                streams.append(StreamID.send(id: send.sendID).rawValue)
            }
            #expect(try await rig.worker.drain() == 3)
            for stream in streams {
                #expect(try await streamTypes(stream, store: rig.store)
                        == ["SendRequested", "SendAttempted", "ResponseReceived", "SendFailed"])
            }
            // The fakes did echo the credentials they received.
            #expect(rig.fakes.google.requests.first?.queryValue("dev_token") == Self.devToken)
            #expect(rig.fakes.branch.requests.first?.bodyText.contains(Self.branchSecret) == true)
            // Read through the store: answers and details are sealed per device, and opened here.
            var stored: [String] = []
            for stream in streams {
                stored += try await rig.store.readStream(stream).map { "\($0.type) \(String(decoding: $0.data, as: UTF8.self))" }
            }
            #expect(stored.contains { $0.hasPrefix("ResponseReceived") && $0.contains("dev_token=") })
            for secret in [Self.devToken, Self.branchSecret, Self.branchKey, Self.sdkKey] {
                let opened = stored.filter { $0.contains(secret) }
                #expect(opened.isEmpty, "\(opened) hold \(secret.prefix(8))…")
                let found = try await eventsContaining(secret, rig)
                #expect(found.isEmpty, "\(found) hold \(secret.prefix(8))…")
            }
            // What is not a credential is kept: the answer still names the call it echoes.
            let google = try await rig.store.readStream(streams[0]).first { $0.type == ResponseReceived.eventType }
            let failed = try LedgerJSON.makeDecoder().decode(
                SendFailed.self, from: try #require(try await rig.store.readStream(streams[0]).last).data)
            #expect(failed.rule == "google_error_code" && (failed.detail ?? "").contains("link_id=LINK1"), "\(failed.detail ?? "")")
            #expect(String(decoding: try #require(google).data, as: UTF8.self).contains("app_event_type"))
        }
    }
}
