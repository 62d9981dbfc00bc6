import Foundation

/// One value of Google's `app_event_data`, typed so that it is written the way the Google App
/// Conversion Tracking API's "Event Data Encoding" requires.
///
/// Why typed: the document's rules depend on what a number *means* (money has two decimals, an
/// integer none, a timestamp up to six), which a bare JSON number cannot tell. Numbers are
/// `Decimal`/`Int64`, never `Double`, so that `0.00001` is never written `1e-05`.
public indirect enum GoogleEventValue: Sendable, Hashable {
    /// A string, written as a JSON string.
    case string(String)
    /// A boolean (allowed in arrays by the document, so allowed alone too).
    case bool(Bool)
    /// "Only send whole integer values with no decimal digits": `1000`, `-11`, `0`.
    case integer(Int64)
    /// "Use dot character as decimal separator … Do not use exponential notation … Do not use a
    /// comma character to separate groups of digits": `-0.5`, `1000000.123`.
    case float(Decimal)
    /// "Use two-digit decimal precision to represent monetary values. e.g. 2.99" (rounded half up).
    case money(Decimal)
    /// "Date format: yyyy-mm-dd", written as a JSON string `"2016-09-23"`.
    case date(GoogleDate)
    /// "Unix/Epoch timestamp defined in UTC timezone with up to microseconds precision", written as
    /// a JSON number `1073513982.123000`.
    case timestamp(GoogleTimestamp)
    /// "Only send arrays of primitive values (strings, numbers, and booleans)".
    case array([GoogleEventValue])
    /// A nested object: never valid in `app_event_data`. It exists so that data received from an
    /// app can be represented and refused with a precise error (`nested_object_refused`).
    case object([GoogleEventField])
}

/// One key of `app_event_data` and its value; fields keep their order in the body.
public struct GoogleEventField: Sendable, Hashable, Codable {
    /// The key, sent as is.
    public var key: String
    /// The value.
    public var value: GoogleEventValue

    /// A field.
    public init(_ key: String, _ value: GoogleEventValue) {
        self.key = key
        self.value = value
    }
}

/// The Google App Conversion Tracking API's optional `app_event_data` body: "a simple JSON object
/// mapping string keys to values".
///
/// The Google App Conversion Tracking API contradicts itself on what values are allowed: the field
/// description says "strings and arrays of strings" but its example is
/// `{"level": 5, "attempts": 20}` and "Event Data Encoding" gives rules for floats, integers,
/// dates, timestamps and arrays of "strings, numbers, and booleans". The encoding section, being
/// the more specific, is followed: primitives and arrays of primitives are accepted; nested
/// objects, arrays of arrays and `null` are refused.
public struct GoogleEventData: Sendable, Hashable, Codable {
    /// The fields, in body order.
    public var fields: [GoogleEventField]

    /// Event data from fields, in order (checked when encoded).
    public init(_ fields: [GoogleEventField] = []) { self.fields = fields }

    /// Event data from literal pairs, in order: `["item_id": .array([.string("Crayons")])]`.
    public init(_ pairs: KeyValuePairs<String, GoogleEventValue>) {
        self.fields = pairs.map { GoogleEventField($0.key, $0.value) }
    }

    /// No fields: the request then has no body and an explicit `Content-Length: 0`.
    public var isEmpty: Bool { fields.isEmpty }

    /// The `app_event_data` object as JSON text, e.g. `{"item_id":["Crayons","Markers"]}`.
    ///
    /// - Throws: `ProviderError` on `app_event_data.<key>` (or `…[index]`) with rule
    ///   `non_empty_key`, `duplicate_key`, `nested_object_refused`, `array_of_primitives_only` or
    ///   `finite_number`.
    public func encodedObject() throws(ProviderError) -> String {
        try jsonValue().serialized
    }

    /// The whole request body, `{"app_event_data":{…}}`, or `nil` when there are no fields.
    public func requestBody() throws(ProviderError) -> Data? {
        guard !isEmpty else { return nil }
        let body = ProviderJSON.object([ProviderJSONMember(key: "app_event_data", value: try jsonValue())])
        return Data(body.serialized.utf8)
    }

    /// Imports event data received as JSON (e.g. from the app): integers become `.integer`, other
    /// numbers `.float` (exactly, from their text), strings stay strings.
    ///
    /// - Throws: `ProviderError` (`app_event_data`): `not_json`/`too_deep`/`wrong_type` for a
    ///   document that is not an object, and the encoding rules' errors for its values.
    public static func fromJSON(_ data: Data) throws(ProviderError) -> GoogleEventData {
        let root: ProviderJSON
        do {
            root = try GoogleAppleJSON.parse(data, provider: .google)
        } catch {
            throw ProviderError(.invalidRequest, provider: .google, field: "app_event_data", rule: error.rule, message: error.message)
        }
        guard case .object(let members) = root else {
            throw failure("app_event_data", "wrong_type", "app_event_data must be a JSON object.")
        }
        var fields: [GoogleEventField] = []
        for member in members {
            fields.append(GoogleEventField(member.key, try importValue(member.value, path: "app_event_data.\(member.key)")))
        }
        let imported = GoogleEventData(fields)
        _ = try imported.jsonValue()
        return imported
    }

    private static func importValue(_ value: ProviderJSON, path: String) throws(ProviderError) -> GoogleEventValue {
        switch value {
        case .string(let text): return .string(text)
        case .bool(let flag): return .bool(flag)
        case .null: throw failure(path, "primitive_values_only", "\(path) is null; only strings, numbers and booleans are allowed.")
        case .number(let text):
            if GoogleAppleJSON.isIntegerText(text), let integer = Int64(text) { return .integer(integer) }
            guard text.utf8.count <= 64, let decimal = Decimal(string: text), decimal.isFinite,
                !decimal.description.contains("e")
            else { throw failure(path, "finite_number", "\(path) is not a number that can be written exactly.") }
            return .float(decimal)
        case .array(let items):
            var values: [GoogleEventValue] = []
            for (index, item) in items.enumerated() {
                values.append(try importValue(item, path: "\(path)[\(index)]"))
            }
            return .array(values)
        case .object:
            throw failure(path, "nested_object_refused", "\(path) is an object; app_event_data values must be primitives or arrays of primitives.")
        }
    }

    /// Checks the document's rules and builds the JSON value.
    func jsonValue() throws(ProviderError) -> ProviderJSON {
        var seen = Set<String>()
        var members: [ProviderJSONMember] = []
        for field in fields {
            let path = "app_event_data.\(field.key)"
            guard !field.key.isEmpty else { throw Self.failure("app_event_data", "non_empty_key", "app_event_data keys must not be empty.") }
            guard seen.insert(field.key).inserted else {
                throw Self.failure(path, "duplicate_key", "\(path) appears twice; a JSON object maps each key once.")
            }
            members.append(ProviderJSONMember(key: field.key, value: try Self.encode(field.value, path: path, inArray: false)))
        }
        return .object(members)
    }

    private static func encode(_ value: GoogleEventValue, path: String, inArray: Bool) throws(ProviderError) -> ProviderJSON {
        switch value {
        case .string(let text): return .string(text)
        case .bool(let flag): return .bool(flag)
        case .integer(let integer): return .number(String(integer))
        case .float(let decimal): return .number(try plainText(decimal, path: path))
        case .money(let amount): return .number(try moneyText(amount, path: path))
        case .date(let date): return .string(date.text)
        case .timestamp(let timestamp): return .number(timestamp.text)
        case .object:
            throw failure(path, "nested_object_refused", "\(path) is an object; app_event_data values must be primitives or arrays of primitives.")
        case .array(let items):
            guard !inArray else {
                throw failure(path, "array_of_primitives_only", "\(path) is an array inside an array; only arrays of primitive values are allowed.")
            }
            var encoded: [ProviderJSON] = []
            for (index, item) in items.enumerated() {
                let itemPath = "\(path)[\(index)]"
                if case .object = item {
                    throw failure(itemPath, "array_of_primitives_only", "\(itemPath) is an object; only arrays of primitive values are allowed.")
                }
                encoded.append(try encode(item, path: itemPath, inArray: true))
            }
            return .array(encoded)
        }
    }

    /// A finite `Decimal` in plain notation (`Decimal`'s description never uses an exponent; checked anyway).
    static func plainText(_ decimal: Decimal, path: String) throws(ProviderError) -> String {
        let text = decimal.description
        guard decimal.isFinite, !text.contains(where: { $0 == "e" || $0 == "E" || $0 == "," }) else {
            throw failure(path, "finite_number", "\(path) must be a finite number written without exponent or grouping.")
        }
        return text
    }

    /// Money with exactly two decimals, rounded half away from zero: `2.99`, `3.00`, `-0.50`.
    static func moneyText(_ amount: Decimal, path: String) throws(ProviderError) -> String {
        var source = amount
        var rounded = Decimal()
        NSDecimalRound(&rounded, &source, 2, .plain)
        var text = try plainText(rounded, path: path)
        if text == "-0" { text = "0" }
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let fraction = parts.count > 1 ? String(parts[1]) : ""
        return String(parts[0]) + "." + fraction + String(repeating: "0", count: max(0, 2 - fraction.count))
    }

    static func failure(_ field: String, _ rule: String, _ message: String) -> ProviderError {
        ProviderError(.invalidRequest, provider: .google, field: field, rule: rule, message: message + " (Google App Conversion Tracking API, \"Event Data Encoding\")")
    }
}
