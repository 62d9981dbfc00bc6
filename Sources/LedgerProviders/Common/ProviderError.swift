/// Why a provider request could not be built, or a provider's answer could not be read.
///
/// Every error names the provider, the field and the rule that was broken, so a caller can tell a
/// person exactly what to fix. `rule` is a short stable identifier (usable as a metric label);
/// `message` is the human sentence, which cites the document's rule.
public struct ProviderError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, broadly.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// An input to a request builder breaks a rule of the provider's document.
        case invalidRequest = "invalid_request"
        /// A provider's answer does not have the shape its document gives.
        case malformedResponse = "malformed_response"
    }

    public var kind: Kind
    public var provider: Provider
    /// The field, in the provider's own spelling (`app_event_name`, `os_version`, `conversion_value`),
    /// or a JSON path into a response (`ad_events[0].timestamp`).
    public var field: String
    /// A short stable identifier of the rule, e.g. `required_for_custom`, `max_64_characters`,
    /// `range_0_63`, `not_json`.
    public var rule: String
    /// A sentence for a person.
    public var message: String

    public init(_ kind: Kind, provider: Provider, field: String, rule: String, message: String) {
        self.kind = kind
        self.provider = provider
        self.field = field
        self.rule = rule
        self.message = message
    }

    public var description: String { "\(provider.rawValue): \(field): \(message) [\(rule)]" }
}
