import Foundation
import LedgerProviders

/// The providers' credentials and base URLs, from configuration (environment variables), checked
/// loudly at start-up: a "200 OK" can still be a silent drop when configuration is wrong, so a
/// worker refuses to start on a malformed value instead of sending into the void.
///
/// | variable | meaning | default |
/// |---|---|---|
/// | `LEDGER_GOOGLE_DEV_TOKEN`, `LEDGER_GOOGLE_LINK_ID` | Google app conversion tracking credentials | Google off |
/// | `LEDGER_GOOGLE_URL` | Google's base URL | `https://www.googleadservices.com` |
/// | `LEDGER_GOOGLE_USER_AGENT_PRODUCT` | the analytics/ads product the app User-Agent names, `name/version` (Google App Conversion Tracking API: "Specified by API consumer") | `AttributionLedger/1.0.0` |
/// | `LEDGER_ADSERVICES_URL` | Apple AdServices' base URL (no credentials) | `https://api-adservices.apple.com` |
/// | `LEDGER_BRANCH_KEY`, `LEDGER_BRANCH_SECRET` | Branch credentials | Branch off |
/// | `LEDGER_BRANCH_URL` | Branch's base URL | `https://api2.branch.io` |
/// | `LEDGER_BRANCH_IDENTITY_KEY` | the secret key Branch's `identity` is computed with: the HMAC-SHA256 of the device's custom user id, hex (Branch v1/open server-to-server guide: never personal information, "encrypted before being passed to Branch") | no `identity` sent |
/// | `LEDGER_SERVER_PUBLIC_IPS` | this service's own public IP addresses, comma-separated: a Branch open whose `X-IP-Override`, or a Google conversion whose `X-Forwarded-For`, is one of them is refused (it must be the device's IP, "not your server's IP": Branch v1/open server-to-server guide; Google App Conversion Tracking API) | none |
/// | `LEDGER_SINGULAR_SDK_KEY` | Singular SDK key | Singular off |
/// | `LEDGER_SINGULAR_URL` | Singular's base URL | `https://sdk-api-v1.singular.net` |
///
/// Plain `http` is accepted only towards a loopback host (the fake providers).
public struct ProviderConfiguration: Sendable {
    /// The rules built from the configuration.
    public let rules: ProviderSendRules
    /// Which providers are configured, for the start-up line (`google`, `apple_adservices`, …).
    public let enabled: [String]

    /// Reads `environment`.
    /// - Throws: ``DispatchError`` naming the variable and the rule.
    public static func fromEnvironment(_ environment: [String: String]) throws(DispatchError) -> ProviderConfiguration {
        let variables = ConfigurationVariables(environment)
        func value(_ name: String) -> String? { variables.value(name) }
        func endpoint(_ name: String) throws(DispatchError) -> (scheme: String, host: String, port: Int?)? {
            try variables.endpoint(name)
        }
        func pair(_ first: String, _ second: String) throws(DispatchError) -> (String, String)? {
            switch (value(first), value(second)) {
            case let (a?, b?): return (a, b)
            case (nil, nil): return nil
            case (nil, _): throw .invalidConfiguration(variable: first, rule: "required_with_\(second.lowercased())",
                                                            message: "is required when \(second) is set")
            case (_, nil): throw .invalidConfiguration(variable: second, rule: "required_with_\(first.lowercased())",
                                                            message: "is required when \(first) is set")
            }
        }

        var enabled: [String] = []
        var google: GoogleConversionRequestBuilder?
        if let (token, link) = try pair("LEDGER_GOOGLE_DEV_TOKEN", "LEDGER_GOOGLE_LINK_ID") {
            var googleEndpoint = GoogleEndpoint.production
            if let custom = try endpoint("LEDGER_GOOGLE_URL") {
                do {
                    googleEndpoint = try GoogleEndpoint(scheme: custom.scheme, host: custom.host, port: custom.port)
                } catch {
                    throw .invalidConfiguration(variable: "LEDGER_GOOGLE_URL", rule: error.rule, message: error.message)
                }
            }
            var product = GoogleUserAgentProduct.ledger
            if let text = value("LEDGER_GOOGLE_USER_AGENT_PRODUCT") {
                do {
                    product = try GoogleUserAgentProduct(parsing: text)
                } catch {
                    throw .invalidConfiguration(variable: "LEDGER_GOOGLE_USER_AGENT_PRODUCT", rule: error.rule, message: error.message)
                }
            }
            google = GoogleConversionRequestBuilder(link: GoogleAppLink(devToken: token, linkID: link), endpoint: googleEndpoint,
                                                    product: product)
            enabled.append("google")
        }
        var adServices = AdServicesEndpoint.production
        if let custom = try endpoint("LEDGER_ADSERVICES_URL") {
            do {
                adServices = try AdServicesEndpoint(scheme: custom.scheme, host: custom.host, port: custom.port)
            } catch {
                throw .invalidConfiguration(variable: "LEDGER_ADSERVICES_URL", rule: error.rule, message: error.message)
            }
        }
        enabled.append("apple_adservices")
        var serverIPs: Set<String> = []
        for text in (value("LEDGER_SERVER_PUBLIC_IPS") ?? "").split(separator: ",") {
            let address = text.trimmingCharacters(in: .whitespaces)
            guard BranchIPAddress(address) != nil else {
                throw .invalidConfiguration(variable: "LEDGER_SERVER_PUBLIC_IPS", rule: "ip_address",
                                                 message: "must be IPv4 or IPv6 addresses separated by commas")
            }
            serverIPs.insert(address)
        }
        var branch: BranchConfiguration?
        if let (key, secret) = try pair("LEDGER_BRANCH_KEY", "LEDGER_BRANCH_SECRET") {
            let custom = try endpoint("LEDGER_BRANCH_URL")
            branch = BranchConfiguration(
                branchKey: key, branchSecret: secret,
                endpoint: custom.map { BranchEndpoint(scheme: $0.scheme, host: $0.host, port: $0.port) } ?? .production,
                serverPublicIPs: serverIPs, identityKey: value("LEDGER_BRANCH_IDENTITY_KEY"))
            enabled.append("branch")
        }
        var singular: SingularConfiguration?
        if let key = value("LEDGER_SINGULAR_SDK_KEY") {
            let custom = try endpoint("LEDGER_SINGULAR_URL")
            singular = SingularConfiguration(
                sdkKey: key, endpoint: custom.map { SingularEndpoint(scheme: $0.scheme, host: $0.host, port: $0.port) } ?? .production)
            enabled.append("singular")
        }
        var rules = ProviderSendRules(google: google, adServices: adServices, branch: branch, singular: singular)
        rules.serverPublicIPs = serverIPs
        return ProviderConfiguration(rules: rules, enabled: enabled)
    }
}

/// The environment's configuration variables, read the way every provider variable is: blank is
/// unset, base URLs are checked (https, or http towards a loopback host; no path).
struct ConfigurationVariables {
    let environment: [String: String]

    init(_ environment: [String: String]) {
        self.environment = environment
    }

    /// The variable's value, trimmed; nil when unset or blank.
    func value(_ name: String) -> String? {
        guard let text = environment[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        return text
    }

    /// The base URL the variable holds, split; nil when unset.
    /// - Throws: ``DispatchError`` `base_url` or `https_only` naming the variable.
    func endpoint(_ name: String) throws(DispatchError) -> (scheme: String, host: String, port: Int?)? {
        guard let text = value(name) else { return nil }
        guard let url = URLComponents(string: text), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty,
            url.path.isEmpty || url.path == "/", url.query == nil
        else {
            throw .invalidConfiguration(variable: name, rule: "base_url",
                                        message: "must be a base URL such as https://host[:port], without a path")
        }
        let loopback = ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host.lowercased())
        guard scheme == "https" || (scheme == "http" && loopback) else {
            throw .invalidConfiguration(variable: name, rule: "https_only",
                                        message: "must use https (http only towards a loopback host)")
        }
        return (scheme, host, url.port)
    }
}
