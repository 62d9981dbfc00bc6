import Foundation

/// Something the user did in the app that the app reports as a conversion: a tutorial finished, an
/// item viewed, a level reached. Causes Google in-app conversions and Singular conversion-value
/// updates.
///
/// Stream: `device-<app>/<device>`.
public struct InAppEventRecorded: LedgerEvent {
    /// The stored type name (see ``LedgerEvent/eventType``).
    public static let eventType = "InAppEventRecorded"
    /// The version of this JSON shape.
    public static let schemaVersion = 1
    /// What the event is about.
    public static let category = EventCategory.device
    /// The category of the streams it is appended to.
    public static let streamCategory = StreamCategory.device
    /// The fields the privacy layer encrypts per device (see ``LedgerEvent/personalFields``).
    public static let personalFields = FieldPath.prefixed("device", DeviceContext.personalFields) + ["custom_data"]

    /// The device at the time of the event. `ip` and `user_agent` may be absent when a backend
    /// reports the event; the request builders then use the last session's.
    public var device: DeviceContext
    /// The app's name for the event (Google `app_event_name` for custom events, Singular `n`).
    public var name: String
    /// The Google app event type this event maps to, if the app chose one; `custom` otherwise.
    public var googleEventType: GoogleAppEventType?
    /// The event's value, if it has one (Google `value` + `currency_code`).
    public var value: Money?
    /// App-defined data (Google `app_event_data`): an object whose values are strings, numbers,
    /// booleans, or arrays of those. Personal as a whole: the app decides what goes in.
    public var customData: [String: JSONValue]?

    /// Creates the event.
    public init(
        device: DeviceContext, name: String, googleEventType: GoogleAppEventType? = nil, value: Money? = nil,
        customData: [String: JSONValue]? = nil
    ) {
        self.device = device
        self.name = name
        self.googleEventType = googleEventType
        self.value = value
        self.customData = customData
    }

    enum CodingKeys: String, CodingKey {
        case device, name
        case googleEventType = "google_event_type"
        case value
        case customData = "custom_data"
    }

    /// Device rules; a name of 1–256 characters; custom data of primitives or arrays of primitives
    /// with keys of 1–100 characters.
    public func validate() throws(RuleViolation) {
        try device.validate(at: "device", requireNetwork: false)
        try Check.text(name, "name")
        for (key, value) in customData ?? [:] {
            let field = FieldPath.key("custom_data", key)
            try Check.text(key, field, max: 100)
            let primitive: Bool
            switch value {
            case .array(let elements): primitive = elements.allSatisfy(\.isPrimitive)
            default: primitive = value.isPrimitive
            }
            guard primitive else {
                throw RuleViolation(
                    field: field, rule: "primitive_or_array_of_primitives",
                    message: "Custom data values are strings, numbers, booleans, or arrays of those (no null, no nested objects).")
            }
        }
    }
}

/// Google's `app_event_type` values (conversion tracking API 1.0).
public enum GoogleAppEventType: String, LedgerEnum {
    /// The first launch (only `FirstOpen` causes it).
    case firstOpen = "first_open"
    /// A session start (re-attribution).
    case sessionStart = "session_start"
    /// A purchase inside the app.
    case inAppPurchase = "in_app_purchase"
    /// A list of items was viewed.
    case viewItemList = "view_item_list"
    /// An item was viewed.
    case viewItem = "view_item"
    /// Search results were viewed.
    case viewSearchResults = "view_search_results"
    /// An item was added to a cart.
    case addToCart = "add_to_cart"
    /// An e-commerce purchase.
    case ecommercePurchase = "ecommerce_purchase"
    /// Anything else, named by `app_event_name`.
    case custom
}

/// Money the app earned from the user: a store purchase or ad revenue. Feeds Google
/// `in_app_purchase` conversions and Singular's SKAN revenue totals (IAP and ad monetization kept
/// apart, each counted once per transaction).
///
/// Stream: `device-<app>/<device>`.
public struct RevenueRecorded: LedgerEvent {
    /// The stored type name (see ``LedgerEvent/eventType``).
    public static let eventType = "RevenueRecorded"
    /// The version of this JSON shape.
    public static let schemaVersion = 1
    /// What the event is about.
    public static let category = EventCategory.device
    /// The category of the streams it is appended to.
    public static let streamCategory = StreamCategory.device
    /// The fields the privacy layer encrypts per device (see ``LedgerEvent/personalFields``).
    public static let personalFields = FieldPath.prefixed("device", DeviceContext.personalFields) + ["transaction_id"]

    /// The device at the time of the revenue (`ip`, `user_agent` optional, as for in-app events).
    public var device: DeviceContext
    /// How much, in which currency. Zero or more: refunds are not revenue events.
    public var revenue: Money
    /// In-app purchase or ad monetization (Singular totals them apart).
    public var kind: RevenueKind
    /// The store's transaction id (or the app's id for an ad impression). Makes a retried report
    /// count once. Required at append time. Personal (it identifies a person's purchase).
    public var transactionID: String?
    /// The product bought, if any (store product id).
    public var productID: String?

    /// Creates the event.
    public init(device: DeviceContext, revenue: Money, kind: RevenueKind, transactionID: String?, productID: String? = nil) {
        self.device = device
        self.revenue = revenue
        self.kind = kind
        self.transactionID = transactionID
        self.productID = productID
    }

    enum CodingKeys: String, CodingKey {
        case device, revenue, kind
        case transactionID = "transaction_id"
        case productID = "product_id"
    }

    /// Device rules; a non-negative amount; a transaction id.
    public func validate() throws(RuleViolation) {
        try device.validate(at: "device", requireNetwork: false)
        guard revenue.amount >= 0 else {
            throw RuleViolation(field: "revenue.amount", rule: "non_negative", message: "Revenue must not be negative.")
        }
        try Check.text(Check.required(transactionID, "transaction_id"), "transaction_id")
        try Check.text(productID, "product_id")
    }
}

/// Where revenue came from.
public enum RevenueKind: String, LedgerEnum {
    /// A purchase in the app store (in-app purchase or subscription).
    case iap
    /// Revenue from ads shown in the app.
    case adMonetization = "ad_monetization"
}
