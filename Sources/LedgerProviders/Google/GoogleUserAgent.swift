import Foundation
import LedgerDomain

/// The Google App Conversion Tracking API's "App User-Agent":
/// `name version (os_and_version; locale; device; build; Proxy)`.
///
/// The document's pattern separates name and version by a space, but every example
/// (`AdMob/7.10.1 (iOS 10.0.2; en_US; iPhone9,1; Build/13D15; Proxy)`) uses `/`; the examples are
/// followed. `; Proxy` is included "when constructing the app User-Agent server side", which the
/// ledger always does, so ``proxy`` defaults to `true`.
public struct GoogleAppUserAgent: Sendable, Hashable, Codable {
    /// The analytics/ads product name (`AdMob`, `MyAnalyticsCompany`).
    public var name: String
    /// The product's version (`7.10.1`).
    public var version: String
    /// Operating system and its version (`iOS 10.0.2`, `Android 6.0`).
    public var osAndVersion: String
    /// "two-letter language and country code separated by an underscore" (`en_US`).
    public var locale: String
    /// The device model (`iPhone9,1`, `SM-G900F`).
    public var device: String
    /// `Build/` followed by the OS build number (`Build/13D15`).
    public var build: String
    /// Whether `; Proxy` ends the parenthesis (server-side construction).
    public var proxy: Bool

    /// Stored under the document's component names.
    enum CodingKeys: String, CodingKey {
        case name, version, locale, device, build, proxy
        case osAndVersion = "os_and_version"
    }

    /// A user agent from its components; call ``validated()`` or ``headerValue()`` to check them.
    public init(
        name: String, version: String, osAndVersion: String, locale: String, device: String, build: String,
        proxy: Bool = true
    ) {
        self.name = name
        self.version = version
        self.osAndVersion = osAndVersion
        self.locale = locale
        self.device = device
        self.build = build
        self.proxy = proxy
    }

    /// The header value, after checking every component.
    ///
    /// - Throws: `ProviderError` naming the component (`name`, `version`, `os_and_version`,
    ///   `locale`, `device`, `build`) and the rule (`required`, `no_separators`, `locale_ll_CC`,
    ///   `build_prefix`).
    public func headerValue() throws(ProviderError) -> String {
        try validated()
        let tail = proxy ? "; Proxy" : ""
        return "\(name)/\(version) (\(osAndVersion); \(locale); \(device); \(build)\(tail))"
    }

    /// Checks every component against the Google App Conversion Tracking API's "User-Agent
    /// components".
    public func validated() throws(ProviderError) {
        try Self.checkToken(name, field: "name", allowSpaces: false)
        try Self.checkToken(version, field: "version", allowSpaces: false)
        try Self.checkToken(osAndVersion, field: "os_and_version", allowSpaces: true)
        try Self.checkToken(device, field: "device", allowSpaces: true)
        try Self.checkToken(locale, field: "locale", allowSpaces: false)
        // The same rule the ledger's facts are checked by when appended
        // (`AppUserAgentLocale`): this builder takes only its `ll_CC` form.
        guard AppUserAgentLocale.isGoogleForm(locale) else {
            throw Self.error(
                "locale", AppUserAgentLocale.rule,
                "locale must be a two-letter language and country code separated by an underscore, e.g. en_US.")
        }
        guard !build.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw Self.error("build", "required", "build is required in the app User-Agent.")
        }
        guard build.hasPrefix("Build/"), build.count > "Build/".count else {
            throw Self.error("build", "build_prefix", "build must be \"Build/\" followed by the OS build number, e.g. Build/13D15.")
        }
        guard Self.allowedBuild(build) else {
            throw Self.error("build", "no_separators", "build's number must be printable ASCII without '(' ')' ';' '/' or spaces.")
        }
    }

    /// Reads a user agent in the document's form (with or without `; Proxy`), e.g. one built on the
    /// client side, and checks it.
    ///
    /// - Throws: `ProviderError` on `User-Agent` with rule `app_user_agent_format`, or a component's error.
    public static func parse(_ text: String) throws(ProviderError) -> GoogleAppUserAgent {
        let formatError = error(
            "User-Agent", "app_user_agent_format",
            "The User-Agent must read name/version (os_and_version; locale; device; build[; Proxy]).")
        guard let open = text.firstIndex(of: "("), text.hasSuffix(")") else { throw formatError }
        let head = text[..<open]
        guard head.hasSuffix(" ") else { throw formatError }
        let nameVersion = head.dropLast().split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard nameVersion.count == 2 else { throw formatError }
        let inner = text[text.index(after: open)..<text.index(before: text.endIndex)]
        var parts = inner.components(separatedBy: "; ")
        var proxy = false
        if parts.count == 5, parts[4] == "Proxy" {
            proxy = true
            parts.removeLast()
        }
        guard parts.count == 4 else { throw formatError }
        let agent = GoogleAppUserAgent(
            name: String(nameVersion[0]), version: String(nameVersion[1]), osAndVersion: parts[0], locale: parts[1],
            device: parts[2], build: parts[3], proxy: proxy)
        try agent.validated()
        return agent
    }

    /// Non-empty, printable, free of the characters that structure the header (`(`, `)`, `;`, `/`
    /// in name and version) — and never CR/LF, which would split the HTTP header.
    private static func checkToken(_ value: String, field: String, allowSpaces: Bool) throws(ProviderError) {
        guard !value.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw error(field, "required", "\(field) is required in the app User-Agent.")
        }
        let forbidden: Set<Unicode.Scalar> = allowSpaces ? ["(", ")", ";"] : ["(", ")", ";", " ", "/"]
        let allowed = value.unicodeScalars.allSatisfy { scalar in
            scalar.value >= 0x20 && scalar.value != 0x7F && scalar.value < 0x80 && !forbidden.contains(scalar)
        }
        guard allowed else {
            throw error(
                field, "no_separators",
                "\(field) must be printable ASCII without '(' ')' ';'\(allowSpaces ? "" : " ' ' '/'") or line breaks.")
        }
    }

    /// `build` contains exactly one `/`, the one of its `Build/` prefix.
    private static func allowedBuild(_ value: String) -> Bool {
        guard value.hasPrefix("Build/") else { return false }
        let rest = value.dropFirst("Build/".count)
        return rest.unicodeScalars.allSatisfy { scalar in
            scalar.value > 0x20 && scalar.value < 0x7F && !["(", ")", ";", "/"].contains(scalar)
        }
    }

    private static func error(_ field: String, _ rule: String, _ message: String) -> ProviderError {
        ProviderError(.invalidRequest, provider: .google, field: field, rule: rule, message: message + " (Google App Conversion Tracking API)")
    }
}

/// The analytics/ads product the app User-Agent names: the Google App Conversion Tracking API's
/// `name` ("The name of the analytics/ads product. (AdMob)") and `version` ("The version of the
/// analytics/ads product"), both "Specified by API consumer".
///
/// The ledger builds every User-Agent on the server, so it names itself (or the product it runs
/// inside), never the app: the app's bundle ID is the document's `name` only "if user agent is
/// constructed on the client side".
public struct GoogleUserAgentProduct: Sendable, Hashable {
    /// The product's name (`MyAnalyticsCompany`).
    public var name: String
    /// The product's version (`1.0.0`).
    public var version: String

    /// The ledger itself, when configuration names no other product.
    public static let ledger = GoogleUserAgentProduct(name: "AttributionLedger", version: "1.0.0")

    /// A product from its name and version; ``validated()`` checks them.
    public init(name: String, version: String) {
        self.name = name
        self.version = version
    }

    /// Reads `name/version` (`MyAnalyticsCompany/1.0.0`), as the header writes it, and checks it.
    ///
    /// - Throws: `ProviderError` on `name` or `version` (rules `required`, `no_separators`), or on
    ///   `User-Agent` with rule `product_format` when the text is not `name/version`.
    public init(parsing text: String) throws(ProviderError) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else {
            throw ProviderError(.invalidRequest, provider: .google, field: "User-Agent", rule: "product_format",
                                message: "The product must read name/version, e.g. MyAnalyticsCompany/1.0.0 (Google App Conversion Tracking API)")
        }
        self.init(name: String(parts[0]), version: String(parts[1]))
        try validated()
    }

    /// Checks both parts as the User-Agent's `name` and `version` components.
    public func validated() throws(ProviderError) {
        // The sample device's other components are valid; only this product's parts can fail.
        try GoogleAppUserAgent(name: name, version: version, osAndVersion: "iOS 10.0.2", locale: "en_US",
                               device: "iPhone9,1", build: "Build/13D15").validated()
    }
}
