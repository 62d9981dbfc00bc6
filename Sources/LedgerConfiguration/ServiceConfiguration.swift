import Foundation
import LedgerDecisions
import LedgerDispatch
import LedgerDomain
import LedgerHTTPAPI
import LedgerProviders

/// The ledger's configuration as `serve`, `worker`, `append` and `decisions` use it: the apps file
/// (when one is named) over the older variables, resolved into the values each part runs with —
/// the server's API keys, the attribution settings, and each app's provider rules.
///
/// Precedence, per key of an app listed in the apps file: its entry, then the file's `defaults`,
/// then what the variables (`LEDGER_API_KEYS[_FILE]`, `LEDGER_ATTRIBUTION_SETTINGS`,
/// `LEDGER_GOOGLE_*`/`LEDGER_BRANCH_*`/`LEDGER_SINGULAR_*`) say for it, then the built-in default.
/// An app not listed in the file is configured by the variables alone, exactly as without a file.
/// Base URLs, `LEDGER_GOOGLE_USER_AGENT_PRODUCT` and `LEDGER_SERVER_PUBLIC_IPS` are service-wide.
///
/// Each part is resolved on demand, so that `serve` (which sends nothing) does not need the
/// providers' variables, and the worker does not need API keys.
public struct ServiceConfiguration: Sendable {
    /// The process environment the variables and `{"env": …}` secrets come from.
    public let environment: [String: String]
    /// The apps file, when one is named.
    public let appsFile: AppsFile?

    /// Reads the apps file `path` names (else `LEDGER_APPS_FILE`; none when neither is set).
    /// - Throws: ``ConfigurationError`` (``AppsFileError``) naming the app, key path and rule.
    public static func load(environment: [String: String], appsFilePath path: String? = nil) throws(ConfigurationError)
        -> ServiceConfiguration
    {
        let named = path ?? environment[AppsFile.environmentVariable].flatMap { $0.isEmpty ? nil : $0 }
        guard let named else { return ServiceConfiguration(environment: environment, appsFile: nil) }
        do {
            return ServiceConfiguration(environment: environment, appsFile: try AppsFile.load(path: named, environment: environment))
        } catch {
            throw .appsFile(error)
        }
    }

    /// A configuration from parts already read.
    public init(environment: [String: String], appsFile: AppsFile?) {
        self.environment = environment
        self.appsFile = appsFile
    }

    /// The literal secrets of the apps file, to print at start-up.
    public var warnings: [AppsFileWarning] { appsFile?.warnings ?? [] }

    /// The API keys: each listed app's `api_key_digests` (else its digests in the variables), and
    /// the variables' digests of every other app.
    /// - Throws: ``ConfigurationError``: a digest given to two apps (also one in the file and
    ///   another app's in `LEDGER_API_KEYS`), invalid variables, or no key anywhere.
    public func apiKeys() throws(ConfigurationError) -> APIKeys {
        let variables: [String: [String]]?
        do {
            variables = try APIKeys.digestsFromEnvironment(environment)
        } catch {
            throw .apiKeys(error)
        }
        guard let appsFile else {
            guard let variables else { throw .apiKeys(APIKeys.noneConfigured) }
            do { return try APIKeys(digests: variables) } catch { throw .apiKeys(error) }
        }
        var digests = variables ?? [:]
        var fileOwners: [String: (app: String, index: Int)] = [:]
        for (app, entry) in appsFile.apps {
            guard let own = entry.apiKeyDigests else { continue }
            digests[app] = own
            for (index, digest) in own.enumerated() { fileOwners[digest] = (app, index) }
        }
        for (app, hexes) in (variables ?? [:]).sorted(by: { $0.key < $1.key }) where appsFile.apps[app]?.apiKeyDigests == nil {
            for hex in hexes {
                if let owner = fileOwners[hex.lowercased()], owner.app != app {
                    throw .appsFile(FileKeyPath.app(owner.app).appending("api_key_digests").index(owner.index).error(
                        "one_app_per_key", "this digest is also given to app \"\(app)\" by LEDGER_API_KEYS: a key must belong to one app"))
                }
            }
        }
        guard !digests.isEmpty else { throw .apiKeys(APIKeys.noneConfigured) }
        do { return try APIKeys(digests: digests) } catch { throw .apiKeys(error) }
    }

    /// The settings of Apple's postback routes from the apps file: each app's developer-copy
    /// hosts and whether it takes development-key postbacks (`defaults` may set the latter only).
    /// - Throws: ``ConfigurationError`` when a host is given to two apps, or `defaults` names hosts.
    public func applePostbackSettings() throws(ConfigurationError) -> ApplePostbackSettings {
        guard let appsFile else { return ApplePostbackSettings() }
        if appsFile.defaults.applePostbacks?.copyHosts.isEmpty == false {
            throw .appsFile(FileKeyPath.defaults.appending("apple_postbacks").appending("copy_hosts").error(
                "not_in_defaults", "a copy host belongs to one app: list it in that app's entry"))
        }
        var hosts: [String: AppID] = [:]
        var development = Set<AppID>()
        for (name, entry) in appsFile.apps.sorted(by: { $0.key < $1.key }) {
            guard let app = try? AppID(name) else { continue }
            if entry.applePostbacks?.developmentKeys ?? appsFile.defaults.applePostbacks?.developmentKeys ?? false {
                development.insert(app)
            }
            for (index, host) in (entry.applePostbacks?.copyHosts ?? []).enumerated() {
                if let owner = hosts[host], owner != app {
                    throw .appsFile(FileKeyPath.app(name).appending("apple_postbacks").appending("copy_hosts").index(index).error(
                        "one_app_per_host", "this host is also app \"\(owner)\"'s: a copy is bound to an app by its host alone"))
                }
                hosts[host] = app
            }
        }
        return ApplePostbackSettings(copyHosts: hosts, developmentKeyApps: development)
    }

    /// The attribution settings: `LEDGER_ATTRIBUTION_SETTINGS` (or the built-in defaults), with
    /// each listed app's entry and the file's `defaults` over what it says for that app.
    /// - Throws: ``ConfigurationError`` when `LEDGER_ATTRIBUTION_SETTINGS` cannot be used.
    public func attributionSettings() throws(ConfigurationError) -> AttributionSettings {
        var settings: AttributionSettings
        do {
            settings = try AttributionSettings.fromEnvironment(environment)
        } catch {
            throw .attributionSettings(error)
        }
        guard let appsFile else { return settings }
        for (app, entry) in appsFile.apps {
            var resolved = settings.forApp(app)
            for layer in [appsFile.defaults, entry] {
                if let providers = layer.providers { resolved.providers = providers.enabled }
                for (window, seconds) in layer.windows { resolved.windows[keyPath: window.field] = seconds }
                if let awaits = layer.awaitsIAdDetails { resolved.awaitsIAdDetails = awaits }
                if let deadline = layer.decisionDeadline { resolved.decisionDeadline = deadline }
            }
            resolved.webhooks = (entry.webhooks ?? []).map { WebhookSubscription(endpoint: $0.name, events: $0.events) }
            settings.apps[app] = resolved
        }
        return settings
    }

    /// The send rules: each listed app whose entry (or `defaults`) gives `providers` gets rules
    /// with exactly those providers and credentials; every other app the rules of the variables.
    /// - Throws: ``ConfigurationError`` when a provider variable is invalid.
    public func sendRules() throws(ConfigurationError) -> ResolvedSendRules {
        let variables: ProviderConfiguration
        var endpoints = ProviderEndpoints()
        do {
            variables = try ProviderConfiguration.fromEnvironment(environment)
            // Without a file, the variables are read exactly as before (a base URL only matters
            // with its provider's credentials).
            if appsFile != nil { endpoints = try ProviderEndpoints.fromEnvironment(environment) }
        } catch {
            throw .providers(error)
        }
        var apps: [String: ProviderSendRules] = [:]
        var enabled: [String: [String]] = [:]
        for (app, entry) in (appsFile?.apps ?? [:]).sorted(by: { $0.key < $1.key }) {
            var webhooks: [String: WebhookEndpoint] = [:]
            for (index, webhook) in (entry.webhooks ?? []).enumerated() {
                do {
                    webhooks[webhook.name] = try webhook.endpoint()
                } catch {
                    throw .appsFile(FileKeyPath.app(app).appending("webhooks").index(index).appending(error.field).error(error.rule, error.message))
                }
            }
            guard let providers = entry.providers ?? appsFile?.defaults.providers else {
                // The variables' credentials: a live app must not get a Branch test key from them either.
                let live = entry.live ?? appsFile?.defaults.live ?? false
                if live, let key = variables.rules.branch?.branchKey, key.hasPrefix("key_test_") {
                    throw .appsFile(FileKeyPath.app(app).appending("live").error(
                        "live_app_live_key", "app \"\(app)\" is marked live and has no providers in the apps file, "
                            + "so it would send with LEDGER_BRANCH_KEY, a test key (key_test_…): give the app its own providers"))
                }
                if !webhooks.isEmpty {
                    // The variables' providers, with the app's own webhook endpoints.
                    var rules = variables.rules
                    rules.webhooks = webhooks
                    apps[app] = rules
                    enabled[app] = variables.enabled + ["webhook"]
                }
                continue
            }
            apps[app] = providers.rules(endpoints: endpoints)
            apps[app]?.webhooks = webhooks
            enabled[app] = SendProvider.allCases.filter { providers.enabled.contains($0) }.map(\.rawValue)
                + (webhooks.isEmpty ? [] : ["webhook"])
        }
        return ResolvedSendRules(table: PerAppSendRules.Table(apps: apps, others: variables.rules),
                                 enabledByApp: enabled, enabledForOthers: variables.enabled)
    }
}

/// Each app's send rules, with what the start-up line reports.
public struct ResolvedSendRules: Sendable {
    /// The table the worker's ``PerAppSendRules`` routes by.
    public var table: PerAppSendRules.Table
    /// The providers of each app with rules of its own.
    public var enabledByApp: [String: [String]]
    /// The providers the variables configure (for every other app).
    public var enabledForOthers: [String]

    /// `com.example.game: google, branch; other apps: apple_adservices`, or only the variables'
    /// providers when no app has rules of its own (`apple_adservices, branch`).
    public var summary: String {
        let others = enabledForOthers.joined(separator: ", ")
        guard !enabledByApp.isEmpty else { return others }
        return (enabledByApp.sorted(by: { $0.key < $1.key }).map { "\($0.key): \($0.value.joined(separator: ", "))" }
            + ["other apps: \(others)"]).joined(separator: "; ")
    }
}

extension AppProviders {
    /// Rules with these providers' credentials and the service-wide endpoints.
    func rules(endpoints: ProviderEndpoints) -> ProviderSendRules {
        var branchConfiguration: BranchConfiguration?
        if let branch {
            var made = BranchConfiguration(branchKey: branch.key.revealed(), branchSecret: branch.secret.revealed(),
                                           endpoint: endpoints.branch, serverPublicIPs: endpoints.serverPublicIPs)
            made.identityKey = branch.identityKey?.revealed()
            branchConfiguration = made
        }
        var rules = ProviderSendRules(
            google: google.map {
                GoogleConversionRequestBuilder(link: GoogleAppLink(devToken: $0.devToken.revealed(), linkID: $0.linkID),
                                               endpoint: endpoints.google, product: endpoints.googleProduct)
            },
            adServices: appleAdServices ? endpoints.adServices : nil,
            branch: branchConfiguration,
            singular: singular.map { SingularConfiguration(sdkKey: $0.sdkKey.revealed(), endpoint: endpoints.singular) })
        rules.serverPublicIPs = endpoints.serverPublicIPs
        return rules
    }
}

/// Why the configuration could not be used: the apps file, or one of the older variables. Each
/// names where and which rule, never a secret's value.
public enum ConfigurationError: Error, Sendable, CustomStringConvertible {
    /// The apps file (or a digest shared between it and `LEDGER_API_KEYS`).
    case appsFile(AppsFileError)
    /// `LEDGER_API_KEYS[_FILE]`, or no API key at all.
    case apiKeys(APIError)
    /// `LEDGER_ATTRIBUTION_SETTINGS`.
    case attributionSettings(AttributionSettingsError)
    /// A provider variable (`LEDGER_GOOGLE_*`, `LEDGER_*_URL`, …).
    case providers(DispatchError)

    /// The underlying error's words.
    public var description: String {
        switch self {
        case .appsFile(let error): error.description
        case .apiKeys(let error): "\(error)"
        case .attributionSettings(let error): error.description
        case .providers(let error): "\(error)"
        }
    }
}
