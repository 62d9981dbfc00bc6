import Foundation

/// One call to Singular's conversion value API (Singular SKAdNetwork 4 implementation guide, "API
/// de valores de conversão"): `GET https://sdk-api-v1.singular.net/api/v2/conversion_value` with
/// the device, the event and the device's SKAN state as query parameters, no body,
/// `Accept: application/json`.
public struct SingularConversionValueRequest: Sendable, Hashable {
    /// `n`: what happened.
    public enum Event: Sendable, Hashable {
        /// A session: `n=__SESSION__` (the snippet's `SESSION_EVENT_NAME`).
        case session
        /// A named conversion event.
        case named(String)

        /// The `n` value.
        public var name: String {
            switch self {
            case .session: SingularConversionValueRequest.sessionEventName
            case .named(let name): name
            }
        }
    }

    /// The event name Singular reserves for sessions.
    public static let sessionEventName = "__SESSION__"
    /// The API path.
    public static let path = "/api/v2/conversion_value"

    /// `v`: the device's OS version at the time of the session, e.g. `16.1`.
    public var osVersion: String
    /// `i`: the app's bundle id, case-sensitive, e.g. `com.singular.app`.
    public var bundleID: String
    /// `app_v`: the app version, e.g. `1.2.3`.
    public var appVersion: String
    /// `n`.
    public var event: Event
    /// `idfa`, when the user allowed tracking. An all-zero IDFA counts as unavailable.
    public var idfa: String?
    /// `idfv`.
    public var idfv: String
    /// The SKAN state the request carries.
    public var state: SKANDeviceState

    /// Creates a request.
    public init(
        osVersion: String, bundleID: String, appVersion: String, event: Event = .session, idfa: String? = nil,
        idfv: String, state: SKANDeviceState
    ) {
        self.osVersion = osVersion
        self.bundleID = bundleID
        self.appVersion = appVersion
        self.event = event
        self.idfa = idfa
        self.idfv = idfv
        self.state = state
    }

    /// Checks the rules and builds the request. Query order follows the document's HTTP example
    /// (`a p i v idfa idfv n app_v skan_current_conversion_value p1_coarse p2_coarse
    /// skan_total_revenue_by_currency skan_total_admon_revenue_by_currency` then the timestamps),
    /// with the optional SKAN 4 parameters placed beside their kin. `a` is marked sensitive.
    ///
    /// Refused (`invalidRequest`): a blank `a`, `v`, `i`, `app_v` or event name (`required`); an
    /// event named `__SESSION__` (`reserved_event_name`: use ``Event/session``); an `idfa` / `idfv`
    /// that is not a UUID (`uuid_format`); an unregistered state (`not_registered`); 35 days or
    /// more after the first call (`skan_window_over`: the snippet stops asking); state values out
    /// of range (`range_0_63`).
    public func build(with configuration: SingularConfiguration, at now: Date) throws(ProviderError) -> ProviderRequest {
        let endpoint = configuration.endpoint
        let host = try BranchSingularHTTP.validateEndpoint(
            provider: .singular, scheme: endpoint.scheme, host: endpoint.host, port: endpoint.port)
        var query = [
            QueryItem("a", try Self.required(configuration.sdkKey, "a")),
            QueryItem("p", "iOS"),
            QueryItem("i", try Self.required(bundleID, "i")),
            QueryItem("v", try Self.required(osVersion, "v")),
        ]
        if let idfa, !BranchSingularHTTP.isZeroUUID(try Self.uuid(idfa, "idfa")) { query.append(QueryItem("idfa", idfa)) }
        query.append(QueryItem("idfv", try Self.uuid(idfv, "idfv")))
        if case .named(let name) = event, name == Self.sessionEventName {
            throw SingularRules.fail(
                .invalidRequest, "n", "reserved_event_name", "__SESSION__ is the session event name; use Event.session.")
        }
        query.append(QueryItem("n", try Self.required(event.name, "n")))
        query.append(QueryItem("app_v", try Self.required(appVersion, "app_v")))
        guard state.isRegistered else {
            throw SingularRules.fail(
                .invalidRequest, "skan_first_call_to_skadnetwork_timestamp", "not_registered",
                "The device never registered for SKAdNetwork; register before asking for a conversion value.")
        }
        guard state.window(at: now) != .over else {
            throw SingularRules.fail(
                .invalidRequest, "skan_first_call_to_skadnetwork_timestamp", "skan_window_over",
                "35 days or more since the first SKAdNetwork call: the SKAN window is over (isSkanWindowOver).")
        }
        query += try state.queryItems()
        return ProviderRequest(
            provider: .singular, method: .get, scheme: endpoint.scheme, host: host, port: endpoint.port,
            path: Self.path, query: query, headers: [Header("Accept", "application/json")],
            sensitiveFields: [.query("a")])
    }

    private static func required(_ value: String, _ field: String) throws(ProviderError) -> String {
        guard !BranchSingularHTTP.isBlank(value) else {
            throw SingularRules.fail(.invalidRequest, field, "required", "\(field) is a required parameter (Singular SKAdNetwork 4 implementation guide).")
        }
        return value
    }

    private static func uuid(_ value: String, _ field: String) throws(ProviderError) -> String {
        guard BranchSingularHTTP.isUUID(value) else {
            throw SingularRules.fail(.invalidRequest, field, "uuid_format", "\(field) must be a UUID, got '\(value)'.")
        }
        return value
    }
}

extension SKANDeviceState {
    /// The state as Singular's query parameters, in the request's order; absent values are left
    /// out (as `getSkanDetails` leaves them out). Revenue objects are JSON text with currencies
    /// sorted and amounts written with `.` and no exponent (`{"USD":9.99}`), percent-encoded when
    /// the request is sent (`%7B%22USD%22%3A9.99%7D`). Throws `range_0_63` for an out-of-range
    /// fine value.
    public func queryItems() throws(ProviderError) -> [QueryItem] {
        for (field, value) in [("skan_current_conversion_value", conversionValue), ("prev_fine_value", previousFineValue)] {
            if let value, !(0...63).contains(value) {
                throw SingularRules.illegal(.invalidRequest, field, "range_0_63", "\(value) is not in 0...63")
            }
        }
        var items: [QueryItem] = []
        func add(_ name: String, _ value: String?) { if let value { items.append(QueryItem(name, value)) } }
        func money(_ name: String, _ totals: [String: Decimal]) {
            if !totals.isEmpty { items.append(QueryItem(name, Self.revenueJSON(totals))) }
        }
        add("skan_current_conversion_value", conversionValue.map(String.init))
        add("prev_fine_value", previousFineValue.map(String.init))
        add("p0_coarse", p0Coarse.map { String($0.rawValue) })
        add("p1_coarse", p1Coarse.map { String($0.rawValue) })
        add("p2_coarse", p2Coarse.map { String($0.rawValue) })
        add("p0_prev_coarse_value", p0PreviousCoarse.map { String($0.rawValue) })
        add("p1_prev_coarse_value", p1PreviousCoarse.map { String($0.rawValue) })
        add("p2_prev_coarse_value", p2PreviousCoarse.map { String($0.rawValue) })
        money("skan_total_revenue_by_currency", totalRevenueByCurrency)
        money("skan_total_admon_revenue_by_currency", totalAdMonRevenueByCurrency)
        money("p0_total_iap_revenue", p0TotalIAPRevenue)
        money("p1_total_iap_revenue", p1TotalIAPRevenue)
        money("p2_total_iap_revenue", p2TotalIAPRevenue)
        money("p0_total_admon_revenue", p0TotalAdMonRevenue)
        money("p1_total_admon_revenue", p1TotalAdMonRevenue)
        money("p2_total_admon_revenue", p2TotalAdMonRevenue)
        add("p0_window_lock", p0WindowLock.map(String.init))
        add("p1_window_lock", p1WindowLock.map(String.init))
        add("p2_window_lock", p2WindowLock.map(String.init))
        add("skan_first_call_to_skadnetwork_timestamp", firstCallTimestamp.map(String.init))
        add("skan_last_call_to_skadnetwork_timestamp", lastCallTimestamp.map(String.init))
        return items
    }

    /// `{"USD":9.99}`: a revenue object as the snippet's `dictionaryToJsonString` writes it, with
    /// currencies sorted so the text is reproducible.
    public static func revenueJSON(_ totals: [String: Decimal]) -> String {
        var out = "{"
        for (index, currency) in totals.keys.sorted().enumerated() {
            if index > 0 { out += "," }
            ProviderJSON.writeString(currency, to: &out)
            out += ":" + formatAmount(totals[currency] ?? 0)
        }
        return out + "}"
    }

    /// A decimal amount with `.` and no exponent or grouping: `9.99`, `1.2`, `-0.5`, `100`.
    public static func formatAmount(_ amount: Decimal) -> String {
        amount.isNaN ? "0" : amount.description
    }
}
