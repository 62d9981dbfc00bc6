import Foundation
import LedgerDomain

/// What becomes of a send after a try whose outcome is unknown: its `SendAttempted` was committed,
/// so the request may have left, but no answer was recorded (the worker ended, or its lease ran
/// out, during the call). ``SendQueue/rescue(now:store:policy:on:)`` asks for each such send.
public enum DeliveryAfterUnknownOutcome: Sendable, Hashable {
    /// Pending again at once: the next worker repeats the call. For providers where a repeat
    /// changes nothing that is counted.
    case retry
    /// Parked under `rule`: no worker claims it until an operator settles it (`ledger sends
    /// retry` or `ledger sends cancel`). For providers that count every request they receive.
    case park(rule: String)
}

/// Delivery after an unknown outcome, per provider: the one place this is decided (docs/dispatch.md,
/// "Delivery after an unknown outcome"). Each provider's choice follows from its own document:
///
/// | provider | after an unknown outcome | why |
/// |---|---|---|
/// | Google | retry | Google App Conversion Tracking API: a conversion is one app event named by its own `timestamp` (microseconds) and device identifiers, which every try of the send repeats unchanged; the answer is a lookup of the ad events that preceded it, and the ledger already repeats a call after a timeout or a 5xx |
/// | Apple AdServices | retry | Apple AdServices attribution API: the lookup reads the attribution record of a token and changes nothing, and the document itself asks to repeat it (every 5 s, three attempts) |
/// | Branch | retry | Branch v1/open server-to-server guide: "Implement retry logic … if your request times out after 5 seconds": a repeated open is what the guide prescribes for a call whose answer did not come |
/// | webhook | retry | a delivery carries the same `Ledger-Delivery` id on every try, so a receiver dedupes a repeat (docs/webhooks.md) |
/// | Singular | park (`singular_outcome_unknown`) | Singular SKAdNetwork 4 implementation guide: "In case of retrying an event, avoid calling this method so the same revenue will not be counted twice"; Singular does not deduplicate, so a repeated call may count an event, or its revenue, twice |
///
/// A parked send keeps its place in its device's Singular lane (``SendQueue/lane(provider:deviceStreamID:)``):
/// the device's later Singular calls wait behind it, since each carries the SKAN state the calls
/// before it left.
public struct UnknownOutcomePolicy: Sendable, Hashable {
    /// The delivery per provider; a provider not listed is retried.
    public var deliveries: [SendProvider: DeliveryAfterUnknownOutcome]

    /// A policy; providers not in `deliveries` are retried.
    public init(_ deliveries: [SendProvider: DeliveryAfterUnknownOutcome]) {
        self.deliveries = deliveries
    }

    /// The rule id a parked Singular send carries (`SendParked.rule`).
    public static let singularParkRule = "singular_outcome_unknown"

    /// The providers' documents' policy (the table above): Singular parked, the others retried.
    public static let documented = UnknownOutcomePolicy([
        .google: .retry, .appleAdServices: .retry, .branch: .retry, .singular: .park(rule: singularParkRule), .webhook: .retry,
    ])

    /// What becomes of `provider`'s send after a try whose outcome is unknown.
    public func delivery(for provider: SendProvider) -> DeliveryAfterUnknownOutcome {
        deliveries[provider] ?? .retry
    }
}
