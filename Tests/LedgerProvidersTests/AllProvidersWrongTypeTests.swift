import Foundation
import Testing

@testable import LedgerProviders

/// Issue 4: "Every rule above has a test that breaks it and gets a typed error naming the field and
/// the rule" — here the type rules of every documented answer field: each field of each document's
/// sample, in turn, given a value of the wrong JSON type (or a huge or fractional number where an
/// integer belongs) must give a `ProviderError` naming exactly that field.
@Suite("Wrong types in every documented answer field (all five providers' documents)")
struct AllProvidersWrongTypeTests {
    enum Kind { case string, integer, timestamp, bool, date }

    /// Values of the wrong JSON type for each kind of field.
    static func wrongValues(for kind: Kind) -> [String] {
        switch kind {
        case .string, .date: ["1", "true", "[]", "{}", #"[{"a":1}]"#]
        case .integer: [#""1""#, "true", "[]", "{}", "1.5", "1e400", "99999999999999999999"]
        case .timestamp: [#""1432681913""#, "true", "[]", "{}", "1e400"]
        case .bool: [#""maybe""#, "2", "[]", "{}"]
        }
    }

    /// `json` with the value of `"key": …` (the first occurrence) replaced by `value`.
    static func replacing(_ key: String, in json: String, with value: String) -> String {
        let escaped = NSRegularExpression.escapedPattern(for: "\"\(key)\"")
        let pattern = try! NSRegularExpression(pattern: escaped + #":\s*("(?:[^"\\]|\\.)*"|[^,}\n]+)"#)
        guard let match = pattern.firstMatch(in: json, range: NSRange(json.startIndex..., in: json)) else {
            Issue.record("\(key) not in the sample")
            return json
        }
        return (json as NSString).replacingCharacters(in: match.range(at: 1), with: value)
    }

    /// Expects `body` to throw a `ProviderError` naming `field` with one of `rules`.
    static func expectField<T>(
        _ field: String, rules: Set<String>, _ note: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () throws(ProviderError) -> T
    ) {
        do {
            let value = try body()
            Issue.record("\(note): expected \(field) to be refused, got \(value)", sourceLocation: sourceLocation)
        } catch {
            #expect(error.field == field, "\(note): \(error)", sourceLocation: sourceLocation)
            #expect(rules.contains(error.rule), "\(note): \(error)", sourceLocation: sourceLocation)
            #expect(error.kind == .malformedResponse, sourceLocation: sourceLocation)
        }
    }

    // Google App Conversion Tracking API, "Conversion Tracking Response": every ad event property
    // with its documented type ("string", "number"); "Always present" ones may not be null.
    static let googleFields: [(key: String, kind: Kind, optional: Bool)] = [
        ("ad_event_id", .string, false), ("conversion_metric", .string, false), ("timestamp", .timestamp, false),
        ("campaign_type", .string, false), ("campaign_id", .integer, false), ("campaign_name", .string, false),
        ("ad_type", .string, false), ("external_customer_id", .integer, false), ("location", .integer, false),
        ("network_type", .string, false), ("network_subtype", .string, true), ("video_id", .string, true),
        ("keyword", .string, true), ("match_type", .string, true), ("placement", .string, true),
        ("ad_group_id", .integer, true), ("creative_id", .integer, true), ("interaction_type", .string, true),
    ]

    @Test("Google App Conversion Tracking API ad event fields: wrong type, fraction, huge number or a null where \"Always present\" → named error")
    func googleAdEventFields() throws {
        for field in Self.googleFields {
            let path = "ad_events[0].\(field.key)"
            var values = Self.wrongValues(for: field.kind)
            if !field.optional { values.append("null") }
            for value in values {
                let body = Self.replacing(field.key, in: GoogleResponseSamples.searchSample, with: value)
                Self.expectField(path, rules: ["wrong_type", "missing", "integer", "integer_out_of_range", "unix_seconds"], "\(field.key)=\(value)") {
                    () throws(ProviderError) in try GoogleConversionResponse.parse(Data(body.utf8))
                }
            }
            if field.optional {  // "Will be null when …" / "Only provided when …": null reads as absent.
                let body = Self.replacing(field.key, in: GoogleResponseSamples.searchSample, with: "null")
                #expect(try GoogleConversionResponse.parse(Data(body.utf8)).adEvents.count == 1)
            }
        }
        for (key, value) in [("attributed", "1"), ("attributed", "null"), ("errors", #""x""#), ("ad_events", #""x""#)] {
            let body = Self.replacing(key, in: GoogleResponseSamples.negativeSample, with: value)
            Self.expectField(key, rules: ["wrong_type", "missing"], "\(key)=\(value)") { () throws(ProviderError) in
                try GoogleConversionResponse.parse(Data(body.utf8))
            }
        }
    }

    // Apple AdServices attribution API, "Attribution payload descriptions":
    // adGroupId/adId/campaignId/keywordId/orgId long, attribution boolean,
    // claimType/conversionType/countryOrRegion string, clickDate/impressionDate date strings; with
    // attribution true only `attribution` is required: the document's payload descriptions mark no
    // other field required.
    static let adServicesFields: [(key: String, kind: Kind, optional: Bool)] = [
        ("attribution", .bool, false), ("orgId", .integer, true), ("campaignId", .integer, true),
        ("adGroupId", .integer, true), ("keywordId", .integer, true), ("adId", .integer, true),
        ("conversionType", .string, true), ("claimType", .string, true), ("countryOrRegion", .string, true),
        ("clickDate", .date, true),
    ]

    @Test("Apple AdServices attribution API payload fields: wrong type, fraction, huge number, or a missing required field → named error")
    func adServicesFields() throws {
        let sample = AppleAdServicesSamples.detailedClick
        for field in Self.adServicesFields {
            var values = Self.wrongValues(for: field.kind)
            if !field.optional { values.append("null") }
            for value in values {
                let body = Self.replacing(field.key, in: sample, with: value)
                Self.expectField(field.key, rules: ["wrong_type", "missing", "integer", "integer_out_of_range", "iso8601"], "\(field.key)=\(value)") {
                    () throws(ProviderError) in try AdServicesAttribution.parse(Data(body.utf8))
                }
            }
            guard !field.optional, field.key != "attribution" else { continue }
            let without = sample.replacingOccurrences(
                of: #"\s*"\#(field.key)": [^,\n]+,"#, with: "", options: .regularExpression)
            Self.expectField(field.key, rules: ["missing"], "no \(field.key)") { () throws(ProviderError) in
                try AdServicesAttribution.parse(Data(without.utf8))
            }
        }
        let impression = Self.replacing("impressionDate", in: AppleAdServicesSamples.detailedImpression, with: #""2024-13-08T17:17Z""#)
        Self.expectField("impressionDate", rules: ["iso8601"], "impressionDate month 13") { () throws(ProviderError) in
            try AdServicesAttribution.parse(Data(impression.utf8))
        }
    }

    @Test("Apple Search Ads Attribution API (iAd): known keys are lenient about strings and numbers, but arrays and objects are named errors")
    func iAdKnownKeys() throws {
        for key in IAdAttributionDetails.knownKeys.sorted() {
            for value in ["[]", "{}", #"[{"a":1}]"#] {
                let body = #"{"Version3.1": {"\#(key)": \#(value)}}"#
                Self.expectField(key, rules: ["wrong_type", "boolean"], "\(key)=\(value)") { () throws(ProviderError) in
                    try IAdAttributionDetails.parse(Data(body.utf8))
                }
            }
        }
        for key in ["iad-click-date", "iad-conversion-date", "iad-purchase-date"] {
            Self.expectField(key, rules: ["wrong_type"], "\(key) number") { () throws(ProviderError) in
                try IAdAttributionDetails.parse(Data(#"{"\#(key)": 1593456616}"#.utf8))
            }
        }
    }

    @Test("Branch v1/open server-to-server guide answer: session ids, tokens, link and every typed data key given the wrong type → named error")
    func branchFields() {
        for key in ["session_id", "randomized_bundle_token", "randomized_device_token", "identity"] {
            for value in ["true", "[]", "{}", "1.5"] {
                let body = key == "session_id" ? #"{"session_id":\#(value)}"# : #"{"session_id":"1","\#(key)":\#(value)}"#
                Self.expectField(key, rules: ["not_string"], "\(key)=\(value)") { () throws(ProviderError) in
                    try BranchOpenResponse.parse(Data(body.utf8))
                }
            }
        }
        Self.expectField("link", rules: ["not_string"], "link=1") { () throws(ProviderError) in
            try BranchOpenResponse.parse(Data(#"{"session_id":"1","link":1}"#.utf8))
        }
        let dataKeys: [(String, Kind)] = BranchSessionData.boolKeys.map { ($0, .bool) }
            + BranchSessionData.stringKeys.map { ($0, .string) } + [("+click_timestamp", .integer)]
        for (key, kind) in dataKeys {
            for value in Self.wrongValues(for: kind) where value != "99999999999999999999" {
                var inner = ""
                ProviderJSON.writeString(#"{"\#(key)":\#(value)}"#, to: &inner)
                let body = #"{"session_id":"1","data":\#(inner)}"#
                Self.expectField("data.\(key)", rules: ["not_string", "not_boolean", "not_integer"], "\(key)=\(value)") {
                    () throws(ProviderError) in try BranchOpenResponse.parse(Data(body.utf8))
                }
            }
        }
    }

    @Test("Singular SKAdNetwork 4 implementation guide answer: every response parameter given the wrong type → named error")
    func singularFields() {
        let fields: [(String, Kind)] = [
            ("conversion_value", .integer), ("skan_updated_coarse_value", .integer), ("postback_sequence_index", .integer),
            ("skan_updated_lock_window_value", .bool), ("status", .string), ("reason", .string),
        ]
        for (key, kind) in fields {
            for value in Self.wrongValues(for: kind) {
                let body =
                    switch key {
                    case "conversion_value": #"{"status":"ok","conversion_value":\#(value)}"#
                    case "status": #"{"conversion_value":1,"status":\#(value)}"#
                    case "reason": #"{"status":"error","reason":\#(value)}"#
                    default: #"{"conversion_value":1,"status":"ok","\#(key)":\#(value)}"#
                    }
                Self.expectField(key, rules: ["not_integer", "not_boolean", "not_string", "range_0_63", "range_0_2"], "\(key)=\(value)") {
                    () throws(ProviderError) in try SingularConversionValueResponse.parse(Data(body.utf8))
                }
            }
        }
    }
}
