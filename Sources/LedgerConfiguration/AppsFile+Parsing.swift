import Foundation
import LedgerDecisions
import LedgerDomain
import LedgerProviders

extension AppsFile {
    /// The environment variable naming the apps file.
    public static let environmentVariable = "LEDGER_APPS_FILE"

    /// Reads and parses the file at `path`.
    /// - Parameter environment: where `{"env": NAME}` secrets are read from.
    /// - Throws: ``AppsFileError`` naming the app, the key path and the rule.
    public static func load(path: String, environment: [String: String]) throws(AppsFileError) -> AppsFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw FileKeyPath.root.error("readable_file", "the apps file \(path) cannot be read")
        }
        var file = try AppsFile(json: data, environment: environment)
        file.path = path
        return file
    }

    /// Parses an apps file, strictly: unknown keys, providers and window names are refused, every
    /// secret is read now (an unset variable or unreadable file is an error), and the cross-app
    /// rules are checked (a digest belongs to one app; no Branch test key in a live app).
    /// - Throws: ``AppsFileError`` naming the app, the key path and the rule.
    public init(json: Data, environment: [String: String]) throws(AppsFileError) {
        let root: JSONValue
        do {
            root = try JSONDecoder().decode(JSONValue.self, from: json)
        } catch {
            throw FileKeyPath.root.error("json", "the apps file is not valid JSON")
        }
        var parser = AppsFileParser(environment: environment)
        let top = try parser.object(root, at: .root, keys: ["defaults", "apps"])
        var defaults = AppEntry()
        if let value = top["defaults"] { defaults = try parser.entry(value, at: .defaults) }
        if defaults.webhooks != nil {
            throw FileKeyPath.defaults.appending("webhooks").error(
                "per_app_only", "a webhook endpoint belongs to one app: give webhooks in each app's entry")
        }
        if defaults.apiKeyDigests != nil {
            throw FileKeyPath.defaults.appending("api_key_digests").error(
                "per_app_only", "an API key belongs to one app: give api_key_digests in each app's entry")
        }
        var apps: [String: AppEntry] = [:]
        var listed: [String: JSONValue] = [:]
        if let value = top["apps"] { listed = try parser.object(value, at: FileKeyPath.root.appending("apps")) }
        var owners: [String: String] = [:]
        for (id, value) in listed.sorted(by: { $0.key < $1.key }) {
            let path = FileKeyPath.app(id)
            do {
                _ = try AppID(id)
            } catch {
                throw path.error(error.rule, "\"\(id)\" is not a valid app id: \(error.message)")
            }
            let entry = try parser.entry(value, at: path)
            for (index, digest) in (entry.apiKeyDigests ?? []).enumerated() {
                if let owner = owners[digest], owner != id {
                    throw path.appending("api_key_digests").index(index).error(
                        "one_app_per_key", "this digest is also given to app \"\(owner)\": a key must belong to one app")
                }
                owners[digest] = id
            }
            let live = entry.live ?? defaults.live ?? false
            let providers = entry.providers ?? defaults.providers
            let providersPath = entry.providers == nil ? FileKeyPath(app: id, text: "defaults.providers") : path.appending("providers")
            if live, let branch = providers?.branch, branch.key.revealed().hasPrefix("key_test_") {
                throw providersPath.appending("branch").appending("key").error(
                    "live_app_live_key", "app \"\(id)\" is marked live but its Branch key is a test key (key_test_…): use its key_live_… key")
            }
            apps[id] = entry
        }
        self.init(path: nil, defaults: defaults, apps: apps, warnings: parser.warnings)
    }
}

/// Walks the file's JSON, turning each wrong value into an ``AppsFileError`` at its key path.
struct AppsFileParser {
    let environment: [String: String]
    var warnings: [AppsFileWarning] = []

    init(environment: [String: String]) {
        self.environment = environment
    }

    /// One app's entry, or `defaults`.
    mutating func entry(_ value: JSONValue, at path: FileKeyPath) throws(AppsFileError) -> AppEntry {
        let fields = try object(value, at: path, keys: [
            "api_key_digests", "providers", "windows", "awaits_iad_details", "decision_deadline_seconds", "live", "webhooks",
            "apple_postbacks",
        ])
        var entry = AppEntry()
        if let value = fields["api_key_digests"] {
            let at = path.appending("api_key_digests")
            guard case .array(let items) = value else { throw at.error("json_array", "must be a list of SHA-256 hex digests") }
            var digests: [String] = []
            for (index, item) in items.enumerated() {
                guard case .string(let text) = item, text.count == 64, text.allSatisfy(\.isHexDigit) else {
                    throw at.index(index).error("sha256_hex", "must be 64 hex digits: the SHA-256 of the key (ledger serve --hash-key)")
                }
                digests.append(text.lowercased())
            }
            entry.apiKeyDigests = digests
        }
        if let value = fields["providers"] { entry.providers = try providers(value, at: path.appending("providers")) }
        if let value = fields["windows"] {
            let at = path.appending("windows")
            for (name, seconds) in try object(value, at: at) {
                guard let window = AttributionWindowName(rawValue: name) else {
                    throw at.appending(name).error("known_window", "unknown window; the windows are "
                        + AttributionWindowName.allCases.map(\.rawValue).joined(separator: ", "))
                }
                entry.windows[window] = try self.seconds(seconds, at: at.appending(name))
            }
        }
        if let value = fields["awaits_iad_details"] { entry.awaitsIAdDetails = try bool(value, at: path.appending("awaits_iad_details")) }
        if let value = fields["decision_deadline_seconds"] {
            entry.decisionDeadline = try seconds(value, at: path.appending("decision_deadline_seconds"))
        }
        if let value = fields["live"] { entry.live = try bool(value, at: path.appending("live")) }
        if let value = fields["webhooks"] { entry.webhooks = try webhooks(value, at: path.appending("webhooks")) }
        if let value = fields["apple_postbacks"] {
            entry.applePostbacks = try applePostbacks(value, at: path.appending("apple_postbacks"))
        }
        return entry
    }

    /// An `apple_postbacks` object: `copy_hosts` (DNS names) and `development_keys`.
    func applePostbacks(_ value: JSONValue, at path: FileKeyPath) throws(AppsFileError) -> ApplePostbacksEntry {
        let fields = try object(value, at: path, keys: ["copy_hosts", "development_keys"])
        var entry = ApplePostbacksEntry()
        if let value = fields["copy_hosts"] {
            let at = path.appending("copy_hosts")
            guard case .array(let items) = value else { throw at.error("json_array", "must be a list of host names") }
            for (index, item) in items.enumerated() {
                guard case .string(let host) = item, (1...253).contains(host.utf8.count),
                    host.utf8.allSatisfy({ (97...122).contains($0) || (48...57).contains($0) || $0 == 45 || $0 == 46 })
                else {
                    throw at.index(index).error("dns_name", "must be a lowercase host name (letters, digits, '-', '.'), without scheme or port")
                }
                entry.copyHosts.append(host)
            }
        }
        if let value = fields["development_keys"] { entry.developmentKeys = try bool(value, at: path.appending("development_keys")) }
        return entry
    }

    /// A `webhooks` list: each endpoint checked as the worker will use it (its URL, its name
    /// unique in the app, one secret and at most a previous one, known event kinds, a budget).
    mutating func webhooks(_ value: JSONValue, at path: FileKeyPath) throws(AppsFileError) -> [AppWebhook] {
        guard case .array(let items) = value else { throw path.error("json_array", "must be a list of endpoints") }
        var made: [AppWebhook] = []
        for (index, item) in items.enumerated() {
            let at = path.index(index)
            let fields = try object(item, at: at, keys: ["name", "url", "secret", "previous_secret", "events", "max_attempts", "max_age_seconds"])
            guard case .string(let name)? = fields["name"] else {
                throw at.appending("name").error("required", "an endpoint needs a name ([a-z0-9_-], 1–64 characters)")
            }
            if made.contains(where: { $0.name == name }) {
                throw at.appending("name").error("unique_name", "another endpoint of this app is named \"\(name)\"")
            }
            guard case .string(let url)? = fields["url"] else {
                throw at.appending("url").error("required", "an endpoint needs its url (https://…; http only towards a loopback host)")
            }
            var events: Set<WebhookEventKind> = [.decision]
            if let value = fields["events"] {
                let known = WebhookEventKind.allCases.map(\.rawValue).joined(separator: ", ")
                guard case .array(let kinds) = value, !kinds.isEmpty else {
                    throw at.appending("events").error("non_empty_list", "must be a non-empty list of event kinds: \(known)")
                }
                events = []
                for (kindIndex, kind) in kinds.enumerated() {
                    guard case .string(let text) = kind, let parsed = WebhookEventKind(rawValue: text) else {
                        throw at.appending("events").index(kindIndex).error("known_event_kind", "unknown event kind; the kinds are \(known)")
                    }
                    events.insert(parsed)
                }
            }
            var policy = WebhookRetryPolicy()
            if let value = fields["max_attempts"] {
                guard case .number(let number) = value, let attempts = Int(exactly: NSDecimalNumber(decimal: number).doubleValue),
                    (1...100).contains(attempts)
                else {
                    throw at.appending("max_attempts").error("range_1_100", "must be a whole number of calls from 1 to 100")
                }
                policy.maxAttempts = attempts
            }
            if let value = fields["max_age_seconds"] {
                let seconds = try self.seconds(value, at: at.appending("max_age_seconds"))
                guard seconds <= 7 * 86_400 else {
                    throw at.appending("max_age_seconds").error("at_most_7_days",
                        "must be at most 604800 (7 days): the send queue fails every send after 7 days")
                }
                policy.maxAge = seconds
            }
            let webhook = AppWebhook(
                name: name, url: url, secret: try secret(fields["secret"], at: at.appending("secret")),
                previousSecret: fields["previous_secret"] == nil ? nil : try secret(fields["previous_secret"], at: at.appending("previous_secret")),
                events: events, policy: policy)
            do {
                _ = try webhook.endpoint()
            } catch {
                let field = error.field == "secret" ? "secret" : error.field == "name" ? "name" : "url"
                throw at.appending(field).error(error.rule, error.message)
            }
            made.append(webhook)
        }
        return made
    }

    /// A `providers` object.
    mutating func providers(_ value: JSONValue, at path: FileKeyPath) throws(AppsFileError) -> AppProviders {
        var providers = AppProviders()
        for (name, settings) in try object(value, at: path).sorted(by: { $0.key < $1.key }) {
            let at = path.appending(name)
            switch name {
            case "google":
                let fields = try object(settings, at: at, keys: ["dev_token", "link_id"])
                let token = try secret(fields["dev_token"], at: at.appending("dev_token"))
                guard case .string(let link)? = fields["link_id"], !link.isEmpty else {
                    throw at.appending("link_id").error("required", "a Google provider needs its link_id (Google binds a link id to one app)")
                }
                providers.google = GoogleCredentials(devToken: token, linkID: link)
            case "apple_adservices":
                _ = try object(settings, at: at, keys: [])
                providers.appleAdServices = true
            case "branch":
                let fields = try object(settings, at: at, keys: ["key", "secret", "identity_key"])
                providers.branch = BranchCredentials(
                    key: try secret(fields["key"], at: at.appending("key")),
                    secret: try secret(fields["secret"], at: at.appending("secret")),
                    identityKey: fields["identity_key"] == nil ? nil : try secret(fields["identity_key"], at: at.appending("identity_key")))
            case "singular":
                let fields = try object(settings, at: at, keys: ["sdk_key"])
                providers.singular = SingularCredentials(sdkKey: try secret(fields["sdk_key"], at: at.appending("sdk_key")))
            default:
                throw at.error("known_provider", "unknown provider; the providers are google, apple_adservices, branch, singular")
            }
        }
        return providers
    }

    /// A secret: `{"env": NAME}`, `{"file": PATH}` (trailing newlines trimmed), or a literal
    /// string (with a warning). The errors never hold the value.
    mutating func secret(_ value: JSONValue?, at path: FileKeyPath) throws(AppsFileError) -> Secret {
        let form = "must be {\"env\": NAME}, {\"file\": PATH} or a string"
        switch value {
        case nil:
            throw path.error("required", "is required (\(form))")
        case .string(let literal)?:
            guard !literal.isEmpty else { throw path.error("non_empty", "must not be empty") }
            warnings.append(AppsFileWarning(app: path.app, keyPath: path.description,
                message: "a secret written in the apps file itself: prefer {\"env\": NAME} or {\"file\": PATH}"))
            return Secret(literal, source: .literal)
        case .object(let fields)? where fields.count == 1:
            if case .string(let name)? = fields["env"] {
                guard let text = environment[name], !text.isEmpty else {
                    throw path.error("env_set", "the environment variable \(name) is not set (or empty)")
                }
                return Secret(text, source: .environment(name))
            }
            if case .string(let file)? = fields["file"] {
                guard let data = FileManager.default.contents(atPath: file), let text = String(data: data, encoding: .utf8) else {
                    throw path.error("file_readable", "the secret file \(file) cannot be read (or is not UTF-8)")
                }
                var trimmed = Substring(text)
                while let last = trimmed.last, last == "\n" || last == "\r" || last == "\r\n" { trimmed.removeLast() }
                guard !trimmed.isEmpty else { throw path.error("non_empty", "the secret file \(file) is empty") }
                return Secret(String(trimmed), source: .file(file))
            }
            throw path.error("secret_form", form)
        default:
            throw path.error("secret_form", form)
        }
    }

    /// A JSON object; with `keys`, any other key is refused (a typo must not pass silently).
    func object(_ value: JSONValue, at path: FileKeyPath, keys: Set<String>? = nil) throws(AppsFileError) -> [String: JSONValue] {
        guard case .object(let fields) = value else { throw path.error("json_object", "must be a JSON object") }
        if let keys, let unknown = fields.keys.sorted().first(where: { !keys.contains($0) }) {
            let known = keys.isEmpty ? "none" : keys.sorted().joined(separator: ", ")
            throw path.appending(unknown).error("known_key", "unknown key; the keys here are: \(known)")
        }
        return fields
    }

    func bool(_ value: JSONValue, at path: FileKeyPath) throws(AppsFileError) -> Bool {
        guard case .bool(let flag) = value else { throw path.error("json_bool", "must be true or false") }
        return flag
    }

    func seconds(_ value: JSONValue, at path: FileKeyPath) throws(AppsFileError) -> TimeInterval {
        guard case .number(let number) = value, number > 0 else {
            throw path.error("positive_seconds", "must be a number of seconds above 0")
        }
        return NSDecimalNumber(decimal: number).doubleValue
    }
}
