import Foundation

/// What a webhook endpoint can ask to receive. An endpoint lists the kinds it wants
/// (`"events": ["decision"]` in the apps file); the list is open: a new kind is one more case, and
/// endpoints that did not ask for it never receive it.
public enum WebhookEventKind: String, Sendable, Hashable, Codable, CaseIterable {
    /// Every `AttributionDecided`, a decision that supersedes an earlier one (`ledger decisions
    /// redo`) included: the receiver gets it as a delivery of its own whose `decision.supersedes`
    /// names the decision it replaces.
    case decision
}

/// How long a webhook delivery keeps trying: at most ``maxAttempts`` calls, and no retry due later
/// than ``maxAge`` after the decision was recorded; then the send fails for good (`SendFailed`,
/// rule `webhook_attempts_exhausted` or `webhook_age_exhausted`) and `ledger sends list --state
/// failed` shows it. Between calls it waits ``baseDelay`` doubling to ``maxDelay``, or longer when
/// the receiver's `Retry-After` asks (up to ``maxRetryAfter``).
public struct WebhookRetryPolicy: Sendable, Hashable {
    /// Calls in all, the first included (apps file `max_attempts`; default 12).
    public var maxAttempts: Int
    /// How long after the decision a retry may still be due (apps file `max_age_seconds`;
    /// default 3 days, inside the send queue's 7-day deadline).
    public var maxAge: TimeInterval
    /// The first back-off; doubled after each further call.
    public var baseDelay: TimeInterval
    /// The longest back-off.
    public var maxDelay: TimeInterval
    /// The longest wait a `Retry-After` header may ask for.
    public var maxRetryAfter: TimeInterval

    /// A policy; the defaults retry for about three days (30 s, 1 min, 2 min … capped at 1 h).
    public init(maxAttempts: Int = 12, maxAge: TimeInterval = 3 * 86_400, baseDelay: TimeInterval = 30,
                maxDelay: TimeInterval = 3_600, maxRetryAfter: TimeInterval = 86_400) {
        self.maxAttempts = maxAttempts
        self.maxAge = maxAge
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxRetryAfter = maxRetryAfter
    }
}

/// One of an app's webhook endpoints: where deliveries go, the secrets they are signed with, and
/// which event kinds it wants. Built from the apps file; the secrets never leave memory except as
/// signatures (``WebhookDelivery``).
public struct WebhookEndpoint: Sendable, Hashable {
    /// The endpoint's name within its app (`[a-z0-9_-]`, 1–64): what each delivery's send records
    /// (never the URL, which may carry a token in its query), so a reload that changes the URL
    /// or the secret reaches the sends already queued.
    public var name: String
    /// `https`, or `http` towards a loopback host only.
    public var scheme: String
    /// The host.
    public var host: String
    /// The port, when not the scheme's default.
    public var port: Int?
    /// The path (with its query, if any), starting with `/`.
    public var path: String
    /// The signing secrets: the first is the current one; a second, during a rotation, signs too
    /// (the receiver accepts either), as Stripe does.
    public var secrets: [String]
    /// The kinds this endpoint wants.
    public var events: Set<WebhookEventKind>
    /// Its retry budget.
    public var policy: WebhookRetryPolicy

    /// An endpoint from its URL text.
    /// - Throws: ``ProviderError`` naming `url` (`absolute_url`, `https_only`, `no_credentials_in_url`),
    ///   `name` (`endpoint_name`) or `secret` (`one_or_two_secrets`).
    public init(name: String, url: String, secrets: [String], events: Set<WebhookEventKind> = [.decision],
                policy: WebhookRetryPolicy = WebhookRetryPolicy()) throws(ProviderError) {
        let validName = !name.isEmpty && name.count <= 64 && name.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || $0 == "-"
        }
        guard validName else {
            throw ProviderError(.invalidRequest, provider: .webhook, field: "name", rule: "endpoint_name",
                                message: "An endpoint's name is 1–64 characters of a–z, 0–9, '_' and '-'.")
        }
        guard let components = URLComponents(string: url), let scheme = components.scheme, let host = components.host,
            !host.isEmpty, components.fragment == nil
        else {
            throw ProviderError(.invalidRequest, provider: .webhook, field: "url", rule: "absolute_url",
                                message: "The URL must be absolute, such as https://backend.example.com/ledger-webhooks.")
        }
        guard components.user == nil, components.password == nil else {
            throw ProviderError(.invalidRequest, provider: .webhook, field: "url", rule: "no_credentials_in_url",
                                message: "The URL must not carry a user or password: deliveries are signed instead.")
        }
        let checked = try EndpointRules.check(scheme: scheme, host: host, port: components.port, provider: .webhook)
        guard (1...2).contains(secrets.count), secrets.allSatisfy({ !$0.isEmpty }) else {
            throw ProviderError(.invalidRequest, provider: .webhook, field: "secret", rule: "one_or_two_secrets",
                                message: "An endpoint has one signing secret, and a second one only while rotating.")
        }
        self.name = name
        self.scheme = checked.scheme
        self.host = checked.host
        self.port = components.port
        var path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { path += "?" + query }
        self.path = path
        self.secrets = secrets
        self.events = events
        self.policy = policy
    }

    /// Whether this endpoint wants `kind`.
    public func wants(_ kind: WebhookEventKind) -> Bool { events.contains(kind) }
}

extension WebhookEndpoint: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `webhook NAME → URL (N secrets)`: never a secret's value, so logging an endpoint is safe.
    public var description: String {
        "webhook \(name) → \(scheme)://\(host)\(port.map { ":\($0)" } ?? "")\(path) (\(secrets.count) secret\(secrets.count == 1 ? "" : "s"))"
    }

    /// Same as ``description``.
    public var debugDescription: String { description }

    /// Reflection (`dump`, test failure output) shows ``description`` alone.
    public var customMirror: Mirror { Mirror(self, children: ["endpoint": description], displayStyle: .struct) }
}
