import Foundation

/// The timing rules of the Apple AdServices attribution API, with the document's numbers as
/// defaults.
public struct AdServicesRetryPolicy: Sendable, Hashable, Codable {
    /// "has a 24-hour TTL".
    public var tokenTTL: TimeInterval
    /// After a 404: "initiate retries at intervals of 5 seconds".
    public var notFoundRetryInterval: TimeInterval
    /// After a 404: "with a maximum of three attempts" (attempts in all, the first included).
    public var notFoundMaxAttempts: Int
    /// After a 5xx or no answer ("you need to retry it later", no interval given): the first
    /// delay, doubled each attempt up to ``serverErrorMaxDelay``. The ledger's choice.
    public var serverErrorBaseDelay: TimeInterval
    /// The ceiling of the delay after a 5xx or no answer.
    public var serverErrorMaxDelay: TimeInterval

    /// A policy; the defaults are the Apple AdServices attribution API's numbers (24 h, 5 s, 3
    /// attempts) and 30 s … 30 min after server errors.
    public init(
        tokenTTL: TimeInterval = 86_400, notFoundRetryInterval: TimeInterval = 5, notFoundMaxAttempts: Int = 3,
        serverErrorBaseDelay: TimeInterval = 30, serverErrorMaxDelay: TimeInterval = 1_800
    ) {
        self.tokenTTL = tokenTTL
        self.notFoundRetryInterval = notFoundRetryInterval
        self.notFoundMaxAttempts = notFoundMaxAttempts
        self.serverErrorBaseDelay = serverErrorBaseDelay
        self.serverErrorMaxDelay = serverErrorMaxDelay
    }
}

/// Decides, purely, whether to send an AdServices token and what to do with Apple's answer.
///
/// The Apple AdServices attribution API's response codes: 200 — attribution found
/// (`attribution=true`) or not (`attribution=false`, "acknowledgment of the receipt"); 400 — "The
/// token is invalid"; 404 — either too soon after the token was made (retry every 5 s, at most
/// three attempts) or the token is past its 24 h TTL; 500 — "temporarily down or unreachable …
/// retry it later". The two meanings of 404 are told apart by the token's age, which is why every
/// decision takes the token's issue time and `now`.
public enum AdServicesClassifier {
    /// Whether the token is still within its TTL at `now`: its age must be strictly less than 24 h
    /// (23:59:59 is live, 24:00:00 is expired). A token "issued" in the future (clock skew) is live.
    public static func isTokenLive(issuedAt: Date, now: Date, policy: AdServicesRetryPolicy = AdServicesRetryPolicy()) -> Bool {
        now.timeIntervalSince(issuedAt) < policy.tokenTTL
    }

    /// "Should this token be sent at all at `now`?" `nil` means send; otherwise the disposition to
    /// record instead of calling (`adservices_token_expired`): past 24 h Apple can only answer 404.
    public static func preflight(
        tokenIssuedAt issuedAt: Date, now: Date, policy: AdServicesRetryPolicy = AdServicesRetryPolicy()
    ) -> SendDisposition? {
        isTokenLive(issuedAt: issuedAt, now: now, policy: policy) ? nil : expired(issuedAt, policy)
    }

    /// Classifies the answer to attempt number `attempt` (1-based) of a lookup.
    ///
    /// - Parameters:
    ///   - response: Apple's answer, or `nil` when the transport got none (handled like a 500).
    ///   - issuedAt: when the app generated the token.
    ///   - notFoundBefore: how many earlier calls of this lookup Apple answered 404; `nil` when
    ///     not known, counted then as every earlier call. The 404 rule's "maximum of three
    ///     attempts" counts these, not calls answered otherwise (a 500 has its own back-off).
    public static func classify(
        _ response: ProviderResponse?, tokenIssuedAt issuedAt: Date, attempt: Int, notFoundBefore: Int? = nil, now: Date,
        policy: AdServicesRetryPolicy = AdServicesRetryPolicy()
    ) -> SendDisposition {
        let expiresAt = issuedAt.addingTimeInterval(policy.tokenTTL)
        /// A retry is only worth scheduling if it happens while the token lives.
        func retry(after delay: TimeInterval, rule: String) -> SendDisposition {
            let notBefore = now.addingTimeInterval(delay)
            guard notBefore < expiresAt else { return expired(issuedAt, policy) }
            return .retry(notBefore: notBefore, rule: rule)
        }
        func serverError(_ rule: String) -> SendDisposition {
            let exponent = Double(min(max(attempt, 1) - 1, 40))
            return retry(after: min(policy.serverErrorMaxDelay, policy.serverErrorBaseDelay * pow(2, exponent)), rule: rule)
        }
        guard let response else { return serverError("adservices_network_error_retry") }
        switch response.status {
        case 200:
            do {
                _ = try AdServicesAttribution.parse(response.body)
                return .succeeded
            } catch {
                return .failed(rule: "adservices_malformed_payload", detail: error.description)
            }
        case 400:
            return .failed(
                rule: "adservices_400_invalid_token",
                detail: "Apple: \"The token is invalid.\" The app must fetch a new token; the next one is a new lookup.")
        case 404:
            guard isTokenLive(issuedAt: issuedAt, now: now, policy: policy) else { return expired(issuedAt, policy) }
            let notFound = (notFoundBefore ?? max(attempt, 1) - 1) + 1
            guard notFound < policy.notFoundMaxAttempts else {
                return .failed(
                    rule: "adservices_404_gave_up",
                    detail: "Apple answered 404 to \(notFound) attempts; the Apple AdServices attribution API allows a maximum of \(policy.notFoundMaxAttempts).")
            }
            return retry(after: policy.notFoundRetryInterval, rule: "adservices_404_retry_5s")
        case 500...599:
            return serverError("adservices_5xx_retry")
        default:
            return .failed(rule: "adservices_unexpected_status", detail: "HTTP \(response.status) is not in the Apple AdServices attribution API's response codes.")
        }
    }

    private static func expired(_ issuedAt: Date, _ policy: AdServicesRetryPolicy) -> SendDisposition {
        .failed(
            rule: "adservices_token_expired",
            detail: "The token issued at \(AppleISO8601.format(issuedAt)) is past its \(Int(policy.tokenTTL / 3_600)) h TTL.")
    }
}
