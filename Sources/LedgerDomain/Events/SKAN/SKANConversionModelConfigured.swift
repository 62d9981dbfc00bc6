import Foundation

/// A version of one app's SKAN conversion model: what each fine conversion value (0–63) and each
/// coarse value (low, medium, high) means in the app's own events and revenue (Singular SKAdNetwork
/// 4 implementation guide: "decoding the conversion value with the app's conversion model").
///
/// Versions of one app are consecutive from 1. The SKAN postback projection decodes every
/// postback of the app with its newest version and keeps the decodings made with the older ones.
///
/// Stream: `skan-model-<app-id>` (Apple's numeric `app-id`, as in the postbacks).
public struct SKANConversionModelConfigured: LedgerEvent {
    /// The stored type name (see ``LedgerEvent/eventType``).
    public static let eventType = "SKANConversionModelConfigured"
    /// The version of this JSON shape.
    public static let schemaVersion = 1
    /// What the event is about.
    public static let category = EventCategory.skanPostback
    /// The category of the streams it is appended to.
    public static let streamCategory = StreamCategory.skan
    /// The fields the privacy layer encrypts per device (see ``LedgerEvent/personalFields``).
    public static let personalFields: [String] = []

    /// A revenue bucket: the revenue a value stands for lies between `min` and `max`.
    public struct RevenueRange: Codable, Sendable, Hashable {
        /// The least revenue the value stands for.
        public var min: Money
        /// The most revenue the value stands for (same currency, not below `min`).
        public var max: Money

        /// Creates a bucket.
        public init(min: Money, max: Money) {
            self.min = min
            self.max = max
        }
    }

    /// What one value means.
    public struct Meaning: Codable, Sendable, Hashable {
        /// The app's events the value stands for (`tutorial_complete`, `purchase`), counted as
        /// conversions.
        public var events: [String]
        /// The revenue bucket, if the value carries revenue.
        public var revenue: RevenueRange?

        /// Creates a meaning.
        public init(events: [String] = [], revenue: RevenueRange? = nil) {
            self.events = events
            self.revenue = revenue
        }
    }

    /// A range of fine values and its meaning.
    public struct FineRange: Codable, Sendable, Hashable {
        /// The first fine value of the range (0–63).
        public var from: Int
        /// The last fine value of the range, inclusive (`from`–63).
        public var to: Int
        /// What every value of the range means.
        public var meaning: Meaning

        /// Creates a range.
        public init(from: Int, to: Int, meaning: Meaning) {
            self.from = from
            self.to = to
            self.meaning = meaning
        }
    }

    /// Apple's `app-id` of the app, digits.
    public var appID: String
    /// The model's version: 1 for the first, then consecutive.
    public var modelVersion: Int
    /// Fine value ranges, not overlapping; values in no range decode to nothing.
    public var fine: [FineRange]
    /// The meaning of each coarse value; a value without one decodes to nothing.
    public var coarse: [String: Meaning]
    /// Who configured it (a role or system, never a person's name).
    public var configuredBy: String

    /// Creates the event.
    public init(appID: String, modelVersion: Int, fine: [FineRange], coarse: [String: Meaning], configuredBy: String) {
        self.appID = appID
        self.modelVersion = modelVersion
        self.fine = fine
        self.coarse = coarse
        self.configuredBy = configuredBy
    }

    enum CodingKeys: String, CodingKey {
        case appID = "app_id"
        case modelVersion = "model_version"
        case fine, coarse
        case configuredBy = "configured_by"
    }

    /// The meaning of fine value `value`, if the model gives one.
    public func meaning(ofFine value: Int) -> Meaning? {
        fine.first { $0.from <= value && value <= $0.to }?.meaning
    }

    /// An app id of 1–20 digits; a version from 1; fine ranges inside 0–63, ordered and not
    /// overlapping; coarse keys among low, medium, high; event names of 1–100 characters; revenue
    /// buckets in one currency with `min` ≤ `max`, neither negative.
    public func validate() throws(RuleViolation) {
        guard (1...20).contains(appID.utf8.count), appID.utf8.allSatisfy({ (48...57).contains($0) }) else {
            throw RuleViolation(field: "app_id", rule: "digits_1_20", message: "Apple's app id is 1–20 digits.")
        }
        try Check.atLeast(modelVersion, 1, "model_version")
        try Check.text(configuredBy, "configured_by", max: 200)
        var previousEnd = -1
        for (index, range) in fine.enumerated() {
            let path = FieldPath.index("fine", index)
            try Check.range(range.from, 0...63, path + ".from")
            try Check.range(range.to, range.from...63, path + ".to")
            guard range.from > previousEnd else {
                throw RuleViolation(field: path + ".from", rule: "ordered_not_overlapping",
                                    message: "Fine ranges are in ascending order and do not overlap.")
            }
            previousEnd = range.to
            try Self.check(range.meaning, path + ".meaning")
        }
        for (key, meaning) in coarse {
            guard ["low", "medium", "high"].contains(key) else {
                throw RuleViolation(field: FieldPath.key("coarse", key), rule: "one_of",
                                    message: "Coarse values are low, medium and high.")
            }
            try Self.check(meaning, FieldPath.key("coarse", key))
        }
    }

    static func check(_ meaning: Meaning, _ path: String) throws(RuleViolation) {
        for (index, event) in meaning.events.enumerated() {
            try Check.text(event, FieldPath.index(path + ".events", index), max: 100)
        }
        guard let revenue = meaning.revenue else { return }
        guard revenue.min.currency == revenue.max.currency else {
            throw RuleViolation(field: path + ".revenue.max.currency", rule: "same_currency",
                                message: "A revenue bucket's bounds are in one currency.")
        }
        guard revenue.min.amount >= 0, revenue.min.amount <= revenue.max.amount else {
            throw RuleViolation(field: path + ".revenue", rule: "min_le_max_non_negative",
                                message: "A revenue bucket runs from a non-negative min up to max.")
        }
    }
}
