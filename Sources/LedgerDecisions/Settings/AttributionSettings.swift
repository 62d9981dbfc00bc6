import Foundation
import LedgerDomain
import LedgerProviders

/// One of an app's webhook endpoints as the decider sees it: its name and the event kinds it
/// wants. The URL and secrets are the worker's alone (``LedgerDispatch/ProviderSendRules/webhooks``),
/// so the log records the endpoint's name, never where it points or how it signs.
public struct WebhookSubscription: Sendable, Hashable, Codable {
    /// The endpoint's name within its app.
    public var endpoint: String
    /// The kinds it wants.
    public var events: Set<WebhookEventKind>

    /// A subscription.
    public init(endpoint: String, events: Set<WebhookEventKind> = [.decision]) {
        self.endpoint = endpoint
        self.events = events
    }
}

/// One app's attribution settings: which providers it uses, their lookback windows, and how long
/// a decision waits for answers.
public struct AppAttributionSettings: Sendable, Hashable, Codable {
    /// The providers the app has enabled. Facts cause sends only to these, and a decision waits
    /// only for these.
    public var providers: Set<SendProvider>
    /// Whether the app phones home Apple's legacy iAd `attributionDetails`; when true, an install
    /// decision also waits for an `IAdAttributionDetailsReceived` (or the deadline).
    public var awaitsIAdDetails: Bool
    /// Lookback windows.
    public var windows: AttributionWindows
    /// How long after the trigger was recorded a decision is made even if some provider never
    /// answered. The default, 26 hours, outlives Apple's 24 h token TTL (an unanswered token is
    /// expired by then) with margin for the worker's last retries.
    public var decisionDeadline: TimeInterval
    /// The app's webhook endpoints (apps file `webhooks`): each decision requests one delivery
    /// per endpoint that wants `decision`, in the decision's transaction. Not read from
    /// `LEDGER_ATTRIBUTION_SETTINGS`.
    public var webhooks: [WebhookSubscription] = []

    /// Settings with every provider enabled and the documented windows.
    public init(
        providers: Set<SendProvider> = [.google, .appleAdServices, .branch, .singular], awaitsIAdDetails: Bool = false,
        windows: AttributionWindows = AttributionWindows(), decisionDeadline: TimeInterval = 26 * 3600
    ) {
        self.providers = providers
        self.awaitsIAdDetails = awaitsIAdDetails
        self.windows = windows
        self.decisionDeadline = decisionDeadline
    }

    enum CodingKeys: String, CodingKey {
        case providers
        case awaitsIAdDetails = "awaits_iad_details"
        case windows
        case decisionDeadline = "decision_deadline_seconds"
    }
}

/// Attribution settings for every app: a default, and per-app overrides.
public struct AttributionSettings: Sendable, Hashable, Codable {
    /// The settings of apps without their own.
    public var defaults: AppAttributionSettings
    /// Per-app settings by app id.
    public var apps: [String: AppAttributionSettings]

    /// Settings from a default and per-app overrides.
    public init(defaults: AppAttributionSettings = AppAttributionSettings(), apps: [String: AppAttributionSettings] = [:]) {
        self.defaults = defaults
        self.apps = apps
    }

    /// The settings of `app`.
    public func forApp(_ app: String) -> AppAttributionSettings { apps[app] ?? defaults }

    /// The shortest decision deadline of any app (the decider's first filter).
    public var shortestDeadline: TimeInterval {
        apps.values.map(\.decisionDeadline).reduce(defaults.decisionDeadline, min)
    }

}

extension AttributionSettings {
    /// The environment variable naming a JSON settings file.
    public static let environmentVariable = "LEDGER_ATTRIBUTION_SETTINGS"

    /// Settings from the JSON file `LEDGER_ATTRIBUTION_SETTINGS` names, or the defaults when unset.
    ///
    /// The file: `{"defaults": {...}, "apps": {"<app id>": {...}}}`, each with `providers`
    /// (`google`, `apple_adservices`, `branch`, `singular`), `awaits_iad_details`, `windows`
    /// (seconds: `google_click`, `apple_click`, `apple_view`, `apple_preorder_click`,
    /// `apple_preorder_view`, `branch_click`, `iad_click`) and `decision_deadline_seconds`; every
    /// key may be left out for its default.
    /// - Throws: ``AttributionSettingsError`` naming the file and what is wrong.
    public static func fromEnvironment(_ environment: [String: String]) throws(AttributionSettingsError) -> AttributionSettings {
        guard let path = environment[environmentVariable], !path.isEmpty else { return AttributionSettings() }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw AttributionSettingsError(path: path, problem: "cannot be read")
        }
        do {
            return try JSONDecoder().decode(AttributionSettings.self, from: data)
        } catch {
            throw AttributionSettingsError(path: path, problem: "is not valid settings JSON: \(error)")
        }
    }

    enum CodingKeys: String, CodingKey {
        case defaults, apps
    }

    /// Decodes settings, every key optional.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            defaults: try container.decodeIfPresent(AppAttributionSettings.self, forKey: .defaults) ?? AppAttributionSettings(),
            apps: try container.decodeIfPresent([String: AppAttributionSettings].self, forKey: .apps) ?? [:])
    }
}

extension AppAttributionSettings {
    /// Decodes one app's settings; a missing key takes its default.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let defaults = AppAttributionSettings()
        self.init(
            providers: try container.decodeIfPresent(Set<SendProvider>.self, forKey: .providers) ?? defaults.providers,
            awaitsIAdDetails: try container.decodeIfPresent(Bool.self, forKey: .awaitsIAdDetails) ?? defaults.awaitsIAdDetails,
            windows: try container.decodeIfPresent(AttributionWindows.self, forKey: .windows) ?? defaults.windows,
            decisionDeadline: try container.decodeIfPresent(TimeInterval.self, forKey: .decisionDeadline) ?? defaults.decisionDeadline)
    }
}

extension AttributionWindows {
    /// Decodes windows in seconds; a missing key takes its default.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let d = AttributionWindows()
        func value(_ key: CodingKeys, _ fallback: TimeInterval) throws -> TimeInterval {
            try container.decodeIfPresent(TimeInterval.self, forKey: key) ?? fallback
        }
        self.init(
            googleClick: try value(.googleClick, d.googleClick), appleClick: try value(.appleClick, d.appleClick),
            appleView: try value(.appleView, d.appleView), applePreOrderClick: try value(.applePreOrderClick, d.applePreOrderClick),
            applePreOrderView: try value(.applePreOrderView, d.applePreOrderView),
            branchClick: try value(.branchClick, d.branchClick), iAdClick: try value(.iAdClick, d.iAdClick))
    }
}

/// The attribution settings file could not be used.
public struct AttributionSettingsError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file.
    public var path: String
    /// What is wrong with it.
    public var problem: String
    /// `LEDGER_ATTRIBUTION_SETTINGS file '<path>' <problem>`.
    public var description: String { "\(AttributionSettings.environmentVariable) file '\(path)' \(problem)" }
}
