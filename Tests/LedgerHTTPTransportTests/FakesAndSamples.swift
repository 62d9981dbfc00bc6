import Foundation
import LedgerDispatch
import LedgerFakeProviders
import LedgerHTTPTransport
import LedgerProviders
import LedgerTestKit
import Testing

/// The credentials of the documents' samples, which the fakes accept in these tests: the Google App
/// Conversion Tracking API's `dev_token` and `link_id`, the Branch v1/open server-to-server guide's
/// iOS example keys as a live account would have them, the Singular SKAdNetwork 4 implementation
/// guide's `sdk_key_here`.
let sampleCredentials = FakeProviders.Credentials(
    googleDevToken: "Z_eErE4DkvcKjDM1OVE4c4", googleLinkID: "31FF8D67E5BB5DD5029DCC2734C2F884", branchKey: "key_live_k3y",
    branchSecret: "secret_live_s3cr3t", singularSDKKey: "sdk_key_here")

/// Starts fakes accepting ``sampleCredentials`` and a transport, runs `body`, then stops both
/// whatever happened (AsyncHTTPClient traps in debug builds if a client is released without
/// shutdown) and checks the fakes' anomalies (`withCheckedFakeProviders`).
func withFakes(
    configuration: HTTPProviderTransport.Configuration = HTTPProviderTransport.Configuration(),
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: (FakeProviders, HTTPProviderTransport) async throws -> Void
) async throws {
    try await withCheckedFakeProviders(
        configuration: FakeProviders.Configuration(credentials: sampleCredentials), sourceLocation: sourceLocation
    ) { fakes in
        let transport = HTTPProviderTransport(configuration: configuration)
        do {
            try await body(fakes, transport)
        } catch {
            await transport.shutdown()
            throw error
        }
        await transport.shutdown()
    }
}

/// Sends and expects an answer (any status). The default deadline is generous: the whole suite
/// keeps both cores and Swift's cooperative pool busy, and a test that is not about deadlines must
/// not fail because its answer waited its turn. Tests about deadlines pass their own.
func send(
    _ transport: HTTPProviderTransport, _ request: ProviderRequest, timeout: Duration = .seconds(30),
    sourceLocation: SourceLocation = #_sourceLocation
) async throws -> TransportResponse {
    do {
        return try await transport.send(request, timeout: timeout)
    } catch {
        Issue.record("expected an answer, got \(error)", sourceLocation: sourceLocation)
        throw error
    }
}

/// Sends and expects a ``DispatchError``; returns it (or `nil` after recording an issue).
func sendExpectingError(
    _ transport: HTTPProviderTransport, _ request: ProviderRequest, timeout: Duration = .seconds(30),
    sourceLocation: SourceLocation = #_sourceLocation
) async -> DispatchError? {
    do {
        let response = try await transport.send(request, timeout: timeout)
        Issue.record("expected a transport error, got status \(response.response.status)", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

/// The Google App Conversion Tracking API's sample values, sent to the fakes.
typealias GoogleSample = GoogleDocumentSample

extension GoogleDocumentSample {
    static func builder(_ fakes: FakeProviders) -> GoogleConversionRequestBuilder {
        GoogleConversionRequestBuilder(link: link, endpoint: fakes.googleEndpoint)
    }
}

/// The Branch v1/open server-to-server guide's iOS example, pointed at the fakes.
enum BranchSample {
    static func configuration(_ fakes: FakeProviders) -> BranchConfiguration {
        BranchConfiguration(branchKey: sampleCredentials.branchKey, branchSecret: sampleCredentials.branchSecret,
                            endpoint: fakes.branchEndpoint)
    }

    static func open(
        idfv: String = "0C381C08-B808-4C25-BE51-B00BC165B5F8", firstSession: Bool?, token: String? = nil
    ) -> BranchOpenRequest {
        var request = BranchOpenRequest(
            os: .iOS, osVersion: "17.4", appVersion: "1.12.4", userAgent: "Mozilla/5.0 (iPhone)", devicePublicIP: "8.8.4.4")
        request.idfv = idfv
        request.firstSession = firstSession
        request.serverToServerIdentity = true
        request.randomizedBundleToken = token
        return request
    }
}

/// The Singular SKAdNetwork 4 implementation guide's example device, registered at `now`.
enum SingularSample {
    static func request(idfv: String = "21DB6612-09B3-4ECC-84AC-B353B0AF1334", revenueUSD: String? = nil, now: Date)
        -> SingularConversionValueRequest
    {
        var state = SKANDeviceState()
        _ = state.register(at: now)
        if let revenueUSD { state.totalRevenueByCurrency = ["USD": Decimal(string: revenueUSD)!] }
        return SingularConversionValueRequest(
            osVersion: "16.1", bundleID: "com.singular.app", appVersion: "1.2.3", event: .session,
            idfa: "DFC5A647-9043-4699-B2A5-76F03A97064B", idfv: idfv, state: state)
    }

    static func configuration(_ fakes: FakeProviders) -> SingularConfiguration {
        SingularConfiguration(sdkKey: sampleCredentials.singularSDKKey, endpoint: fakes.singularEndpoint)
    }
}

/// The Apple AdServices attribution API's lookup of `token`, registered with the fake Apple as a
/// token a device made.
enum AppleSample {
    static func request(_ fakes: FakeProviders, token: String = "c3RhbGw=") throws -> ProviderRequest {
        fakes.apple.register(token: token)
        return AdServicesRequestBuilder.attributionRequest(token: try AdServicesToken(token), endpoint: fakes.appleEndpoint)
    }
}
