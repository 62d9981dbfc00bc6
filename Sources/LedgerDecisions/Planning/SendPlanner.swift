import Crypto
import Foundation
import LedgerDispatch
import LedgerDomain

/// Which sends a device fact causes (the architecture's "process rules"), as pure data: the
/// recorder appends them in the fact's transaction.
///
/// | fact | sends (only to the app's enabled providers) |
/// |---|---|
/// | `FirstOpen` | Google `first_open`; Apple AdServices lookup of its token (iOS); Branch open (`first_session` true); Singular `__SESSION__` (iOS) |
/// | `SessionStarted` | Google `session_start`; Branch open; Singular `__SESSION__` (iOS) |
/// | `DeepLinkOpened` | Branch open (the link's click id) |
/// | `InAppEventRecorded` | Google in-app conversion; Singular event (iOS) |
/// | `RevenueRecorded` | Google `in_app_purchase` (store purchases only: Google's event is "a purchase made through the native app store"); Singular revenue (iOS) |
/// | `AdServicesTokenReceived` | Apple AdServices lookup (AdServices tokens exist only on iOS) |
///
/// Idempotency keys name the cause (`google:conversion:<event id>`), except Apple's lookup, keyed
/// by the token's digest: Apple caches a token on the device for about 5 minutes, and "the same
/// token twice is one lookup" (provider-rules, facts beyond the providers' documents).
public struct SendPlanner: Sendable {
    /// The sends a fact asks for: provider, kind, key and parameters. The cause is the fact.
    public struct PlannedSend: Sendable, Hashable {
        /// The provider.
        public var provider: SendProvider
        /// The call.
        public var kind: SendKind
        /// The idempotency key.
        public var key: String
        /// Extra parameters for the builder.
        public var parameters: [String: String]?
    }

    /// The app's settings.
    public let settings: AppAttributionSettings

    /// A planner for one app.
    public init(settings: AppAttributionSettings) { self.settings = settings }

    /// The sends `fact` (appended with id `eventID`) causes.
    public func plan(_ fact: any LedgerEvent, eventID: UUID) -> [PlannedSend] {
        let id = eventID.uuidString.lowercased()
        var sends: [PlannedSend] = []
        func add(_ provider: SendProvider, _ kind: SendKind, _ key: String, _ parameters: [String: String]? = nil) {
            guard settings.providers.contains(provider) else { return }
            sends.append(PlannedSend(provider: provider, kind: kind, key: key, parameters: parameters))
        }
        switch fact {
        case let open as FirstOpen:
            add(.google, .conversion, "google:conversion:\(id)")
            if open.device.platform == .ios, let token = open.adServicesToken {
                add(.appleAdServices, .tokenLookup, Self.tokenLookupKey(token.token))
            }
            add(.branch, .open, "branch:open:\(id)")
            if open.device.platform == .ios { add(.singular, .conversionValue, "singular:conversion_value:\(id)") }
        case let session as SessionStarted:
            add(.google, .conversion, "google:conversion:\(id)")
            add(.branch, .open, "branch:open:\(id)")
            if session.device.platform == .ios { add(.singular, .conversionValue, "singular:conversion_value:\(id)") }
        case is DeepLinkOpened:
            add(.branch, .open, "branch:open:\(id)")
        case let event as InAppEventRecorded:
            add(.google, .conversion, "google:conversion:\(id)")
            if event.device.platform == .ios { add(.singular, .conversionValue, "singular:conversion_value:\(id)") }
        case let revenue as RevenueRecorded:
            if revenue.kind == .iap { add(.google, .conversion, "google:conversion:\(id)") }
            if revenue.device.platform == .ios { add(.singular, .conversionValue, "singular:conversion_value:\(id)") }
        case let received as AdServicesTokenReceived:
            add(.appleAdServices, .tokenLookup, Self.tokenLookupKey(received.token.token))
        default:
            break
        }
        return sends
    }

    /// `apple_adservices:token_lookup:<sha256 of the token>` (the token itself stays out of keys).
    static func tokenLookupKey(_ token: String) -> String {
        let digest = SHA256.hash(data: Data(token.utf8)).map { String(format: "%02x", $0) }.joined()
        return "apple_adservices:token_lookup:\(digest)"
    }
}
