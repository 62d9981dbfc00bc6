import Foundation
import LedgerProviders

/// What every app shares when the apps file gives each app credentials of its own: where each
/// provider lives, the product Google's User-Agent names, and this service's own public IPs.
/// These stay service-wide variables (`LEDGER_GOOGLE_URL`, `LEDGER_ADSERVICES_URL`,
/// `LEDGER_BRANCH_URL`, `LEDGER_SINGULAR_URL`, `LEDGER_GOOGLE_USER_AGENT_PRODUCT`,
/// `LEDGER_SERVER_PUBLIC_IPS`; see ``ProviderConfiguration``): they describe this deployment, not
/// an app.
public struct ProviderEndpoints: Sendable {
    /// Google's base URL.
    public var google: GoogleEndpoint
    /// The analytics/ads product Google's app User-Agent names.
    public var googleProduct: GoogleUserAgentProduct
    /// Apple AdServices' base URL.
    public var adServices: AdServicesEndpoint
    /// Branch's base URL.
    public var branch: BranchEndpoint
    /// Singular's base URL.
    public var singular: SingularEndpoint
    /// This service's own public IP addresses (a Branch `X-IP-Override` must not be one of them).
    public var serverPublicIPs: Set<String>

    /// Endpoints, production unless told otherwise.
    public init(google: GoogleEndpoint = .production, googleProduct: GoogleUserAgentProduct = .ledger,
                adServices: AdServicesEndpoint = .production, branch: BranchEndpoint = .production,
                singular: SingularEndpoint = .production, serverPublicIPs: Set<String> = []) {
        self.google = google
        self.googleProduct = googleProduct
        self.adServices = adServices
        self.branch = branch
        self.singular = singular
        self.serverPublicIPs = serverPublicIPs
    }

    /// Reads every service-wide variable, whether or not a provider is configured by variables.
    /// - Throws: ``DispatchError`` naming the variable and the rule.
    public static func fromEnvironment(_ environment: [String: String]) throws(DispatchError) -> ProviderEndpoints {
        let variables = ConfigurationVariables(environment)
        var endpoints = ProviderEndpoints()
        if let custom = try variables.endpoint("LEDGER_GOOGLE_URL") {
            do {
                endpoints.google = try GoogleEndpoint(scheme: custom.scheme, host: custom.host, port: custom.port)
            } catch {
                throw .invalidConfiguration(variable: "LEDGER_GOOGLE_URL", rule: error.rule, message: error.message)
            }
        }
        if let text = variables.value("LEDGER_GOOGLE_USER_AGENT_PRODUCT") {
            do {
                endpoints.googleProduct = try GoogleUserAgentProduct(parsing: text)
            } catch {
                throw .invalidConfiguration(variable: "LEDGER_GOOGLE_USER_AGENT_PRODUCT", rule: error.rule, message: error.message)
            }
        }
        if let custom = try variables.endpoint("LEDGER_ADSERVICES_URL") {
            do {
                endpoints.adServices = try AdServicesEndpoint(scheme: custom.scheme, host: custom.host, port: custom.port)
            } catch {
                throw .invalidConfiguration(variable: "LEDGER_ADSERVICES_URL", rule: error.rule, message: error.message)
            }
        }
        if let custom = try variables.endpoint("LEDGER_BRANCH_URL") {
            endpoints.branch = BranchEndpoint(scheme: custom.scheme, host: custom.host, port: custom.port)
        }
        if let custom = try variables.endpoint("LEDGER_SINGULAR_URL") {
            endpoints.singular = SingularEndpoint(scheme: custom.scheme, host: custom.host, port: custom.port)
        }
        for text in (variables.value("LEDGER_SERVER_PUBLIC_IPS") ?? "").split(separator: ",") {
            let address = text.trimmingCharacters(in: .whitespaces)
            guard BranchIPAddress(address) != nil else {
                throw .invalidConfiguration(variable: "LEDGER_SERVER_PUBLIC_IPS", rule: "ip_address",
                                            message: "must be IPv4 or IPv6 addresses separated by commas")
            }
            endpoints.serverPublicIPs.insert(address)
        }
        return endpoints
    }
}
