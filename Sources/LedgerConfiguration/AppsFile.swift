import Foundation
import LedgerDecisions
import LedgerDomain
import LedgerProviders

/// The apps file (`LEDGER_APPS_FILE` or `--apps-file`): every app's API key digests, provider
/// credentials and attribution settings in one JSON document, parsed strictly into typed values.
///
/// Why one file: the ledger holds many apps, and Google binds a `link_id` to one app, so
/// credentials must be per app; a single file reloaded on `SIGHUP` lets an operator add an app
/// without a restart. The reference is docs/configuration.md, "The apps file".
public struct AppsFile: Sendable {
    /// Where it was read from (nil when parsed from bytes).
    public var path: String?
    /// What apps listed in the file take for a key their entry leaves out.
    public var defaults: AppEntry
    /// Every listed app's entry, by app id (each a valid ``AppID``).
    public var apps: [String: AppEntry]
    /// Allowed but worth changing: literal secrets.
    public var warnings: [AppsFileWarning]
}

/// One app's entry (or the file's `defaults`): every key optional; a missing key takes the next
/// value in the precedence (app entry, then `defaults`, then the old variables, then the built-in
/// default).
public struct AppEntry: Sendable {
    /// `api_key_digests`: the SHA-256 hex digests of the app's API keys (never in `defaults`).
    public var apiKeyDigests: [String]?
    /// `providers`: the app's enabled providers with their credentials.
    public var providers: AppProviders?
    /// `windows`: lookback windows in seconds, by the names ``AttributionWindowName`` knows.
    public var windows: [AttributionWindowName: TimeInterval]
    /// `awaits_iad_details`.
    public var awaitsIAdDetails: Bool?
    /// `decision_deadline_seconds`.
    public var decisionDeadline: TimeInterval?
    /// `live`: whether the app is in production (then Branch test keys are refused).
    public var live: Bool?
    /// `webhooks`: the app's webhook endpoints (never in `defaults`: an endpoint is one app's).
    public var webhooks: [AppWebhook]?
    /// `apple_postbacks`: where Apple's developer copies reach the app, and whether it takes
    /// postbacks signed with Apple's development keys.
    public var applePostbacks: ApplePostbacksEntry?

    /// An empty entry: everything from the next level of the precedence.
    public init(apiKeyDigests: [String]? = nil, providers: AppProviders? = nil,
                windows: [AttributionWindowName: TimeInterval] = [:], awaitsIAdDetails: Bool? = nil,
                decisionDeadline: TimeInterval? = nil, live: Bool? = nil) {
        self.apiKeyDigests = apiKeyDigests
        self.providers = providers
        self.windows = windows
        self.awaitsIAdDetails = awaitsIAdDetails
        self.decisionDeadline = decisionDeadline
        self.live = live
    }
}

/// An entry's `apple_postbacks` object: `copy_hosts` (host names, each bound to this app alone)
/// and `development_keys` (false unless set).
public struct ApplePostbacksEntry: Sendable {
    /// `copy_hosts`: the host names Apple's developer copies reach for this app (lowercase).
    public var copyHosts: [String]
    /// `development_keys`: whether AdAttributionKit postbacks signed with Apple's development keys
    /// are taken (nil: as `defaults` says, else no).
    public var developmentKeys: Bool?

    /// An entry.
    public init(copyHosts: [String] = [], developmentKeys: Bool? = nil) {
        self.copyHosts = copyHosts
        self.developmentKeys = developmentKeys
    }
}

/// An entry's `providers` object: its keys are the enabled providers, their values the
/// credentials.
public struct AppProviders: Sendable {
    /// `google`: `dev_token` (secret) and `link_id`.
    public var google: GoogleCredentials?
    /// `apple_adservices: {}`: enabled (it has no credentials).
    public var appleAdServices: Bool
    /// `branch`: `key`, `secret` and an optional `identity_key` (secrets).
    public var branch: BranchCredentials?
    /// `singular`: `sdk_key` (secret).
    public var singular: SingularCredentials?

    /// The enabled providers: the object's keys.
    public var enabled: Set<SendProvider> {
        var set: Set<SendProvider> = []
        if google != nil { set.insert(.google) }
        if appleAdServices { set.insert(.appleAdServices) }
        if branch != nil { set.insert(.branch) }
        if singular != nil { set.insert(.singular) }
        return set
    }

    /// Providers as given.
    public init(google: GoogleCredentials? = nil, appleAdServices: Bool = false, branch: BranchCredentials? = nil,
                singular: SingularCredentials? = nil) {
        self.google = google
        self.appleAdServices = appleAdServices
        self.branch = branch
        self.singular = singular
    }
}

/// Google App Conversion Tracking API credentials of one app: the `dev_token` and the `link_id`
/// binding it to the app.
public struct GoogleCredentials: Sendable {
    /// `dev_token`.
    public var devToken: Secret
    /// `link_id` (not a secret: it names the app's link).
    public var linkID: String
}

/// Branch credentials of one app.
public struct BranchCredentials: Sendable {
    /// `key`: the Branch key (`key_live_…`; `key_test_…` only in an app not marked live).
    public var key: Secret
    /// `secret`: the Branch secret.
    public var secret: Secret
    /// `identity_key`: the key Branch's `identity` is hashed with; nil sends no `identity`.
    public var identityKey: Secret?
}

/// One entry of an app's `webhooks` list (docs/webhooks.md): checked when the file is loaded,
/// its secrets read then.
public struct AppWebhook: Sendable {
    /// `name`: unique within the app, `[a-z0-9_-]`, 1–64 characters.
    public var name: String
    /// `url`: https, or http towards a loopback host only.
    public var url: String
    /// `secret`: the signing secret.
    public var secret: Secret
    /// `previous_secret`: while rotating, the secret being retired; deliveries are signed with both.
    public var previousSecret: Secret?
    /// `events`: the kinds the endpoint wants (default `["decision"]`).
    public var events: Set<WebhookEventKind>
    /// `max_attempts` and `max_age_seconds`.
    public var policy: WebhookRetryPolicy

    /// The endpoint the worker sends to (the secrets revealed for signing, nowhere else).
    public func endpoint() throws(ProviderError) -> WebhookEndpoint {
        try WebhookEndpoint(name: name, url: url, secrets: [secret.revealed()] + (previousSecret.map { [$0.revealed()] } ?? []),
                            events: events, policy: policy)
    }
}

/// Singular credentials of one app.
public struct SingularCredentials: Sendable {
    /// `sdk_key`: the SDK key (not the reporting API key).
    public var sdkKey: Secret
}
