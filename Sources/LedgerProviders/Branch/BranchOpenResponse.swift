import Foundation
import LedgerDomain

/// Branch's answer to `v1/open` (Branch v1/open server-to-server guide, "Handling deep link data"):
/// always a 200 with `session_id`, the identity tokens, perhaps `link`, and `data` — the deep link
/// data, which Branch sends as a JSON *string* inside the JSON answer.
///
/// Stored as event data, it encodes with Branch's own field names, `data` as an object (already
/// parsed) and unknown keys as they came. Store `randomized_device_token` as well as
/// `randomized_bundle_token`; the latter must go into every later open of the device.
public struct BranchOpenResponse: Sendable, Hashable, Codable {
    /// `session_id`.
    public var sessionID: String
    /// `randomized_bundle_token` (with `server_to_server_identity`).
    public var randomizedBundleToken: String?
    /// `randomized_device_token`.
    public var randomizedDeviceToken: String?
    /// `identity`, echoed when `server_to_server_identity` is on.
    public var identity: String?
    /// `link`.
    public var link: String?
    /// `data`, parsed.
    public var data: BranchSessionData?
    /// Any other top-level key, kept as received.
    public var otherFields: [String: JSONValue]

    /// Creates an answer from its parts.
    public init(
        sessionID: String, randomizedBundleToken: String? = nil, randomizedDeviceToken: String? = nil,
        identity: String? = nil, link: String? = nil, data: BranchSessionData? = nil,
        otherFields: [String: JSONValue] = [:]
    ) {
        self.sessionID = sessionID
        self.randomizedBundleToken = randomizedBundleToken
        self.randomizedDeviceToken = randomizedDeviceToken
        self.identity = identity
        self.link = link
        self.data = data
        self.otherFields = otherFields
    }

    static let knownKeys: Set<String> = [
        "session_id", "randomized_bundle_token", "randomized_device_token", "identity", "link", "data",
    ]

    /// Parses a 200 body. Throws a `malformedResponse` ``ProviderError`` naming the field: `not_json`,
    /// `too_deep` (nesting deeper than 64), `too_large` (bodies over 4 MiB), `not_object`, `required`
    /// (`session_id`), `not_string`, `not_boolean`, `not_integer`, `number_out_of_range`. Never traps.
    ///
    /// `data` is accepted as the JSON string Branch documents, or as an already-decoded object;
    /// `null` values count as absent. Ids (`session_id`, tokens) may be strings or integers; an
    /// integer keeps all its digits.
    public static func parse(_ body: Data) throws(ProviderError) -> BranchOpenResponse {
        let root = try BranchParsing.object(try BranchParsing.json(body, field: "$"), field: "$")
        guard let sessionID = try BranchParsing.id(root["session_id"], field: "session_id") else {
            throw BranchParsing.fail("session_id", "required", "session_id is missing from Branch's answer.")
        }
        var response = BranchOpenResponse(sessionID: sessionID)
        response.randomizedBundleToken = try BranchParsing.id(root["randomized_bundle_token"], field: "randomized_bundle_token")
        response.randomizedDeviceToken = try BranchParsing.id(root["randomized_device_token"], field: "randomized_device_token")
        response.identity = try BranchParsing.id(root["identity"], field: "identity")
        response.link = try BranchParsing.string(root["link"], field: "link")
        switch root["data"] {
        case nil, .null?: break
        case .string(let text)?:
            let inner = try BranchParsing.json(Data(text.utf8), field: "data")
            response.data = try BranchSessionData(parsing: BranchParsing.object(inner, field: "data"))
        case let inner?:
            guard let members = inner.membersByKey else {
                throw BranchParsing.fail("data", "not_string", "data must be a JSON string (or object).")
            }
            response.data = try BranchSessionData(parsing: members)
        }
        response.otherFields = try BranchParsing.others(root, excluding: knownKeys, prefix: "")
        return response
    }

    /// Decodes the stored form (Branch's field names, `data` as an object).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: FieldCodingKey.self)
        sessionID = try container.decode(String.self, forKey: FieldCodingKey("session_id"))
        randomizedBundleToken = try container.decodeIfPresent(String.self, forKey: FieldCodingKey("randomized_bundle_token"))
        randomizedDeviceToken = try container.decodeIfPresent(String.self, forKey: FieldCodingKey("randomized_device_token"))
        identity = try container.decodeIfPresent(String.self, forKey: FieldCodingKey("identity"))
        link = try container.decodeIfPresent(String.self, forKey: FieldCodingKey("link"))
        data = try container.decodeIfPresent(BranchSessionData.self, forKey: FieldCodingKey("data"))
        otherFields = [:]
        for key in container.allKeys where !Self.knownKeys.contains(key.stringValue) {
            otherFields[key.stringValue] = try container.decode(JSONValue.self, forKey: key)
        }
    }

    /// Encodes with Branch's field names; unknown keys go back at top level.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: FieldCodingKey.self)
        for (key, value) in otherFields { try container.encode(value, forKey: FieldCodingKey(key)) }
        try container.encode(sessionID, forKey: FieldCodingKey("session_id"))
        try container.encodeIfPresent(randomizedBundleToken, forKey: FieldCodingKey("randomized_bundle_token"))
        try container.encodeIfPresent(randomizedDeviceToken, forKey: FieldCodingKey("randomized_device_token"))
        try container.encodeIfPresent(identity, forKey: FieldCodingKey("identity"))
        try container.encodeIfPresent(link, forKey: FieldCodingKey("link"))
        try container.encodeIfPresent(data, forKey: FieldCodingKey("data"))
    }
}

/// Shared reading helpers of the Branch parser: every failure is a `malformedResponse`
/// ``ProviderError`` naming the field.
enum BranchParsing {
    static func fail(_ field: String, _ rule: String, _ message: String) -> ProviderError {
        ProviderError(.malformedResponse, provider: .branch, field: field, rule: rule, message: message)
    }

    static func json(_ data: Data, field: String) throws(ProviderError) -> ProviderJSON {
        do {
            return try ProviderJSONReader.parse(data, limits: .branchSingular)
        } catch {
            throw fail(field, error.rule, "\(field) is not valid JSON (\(error.reason) at byte \(error.offset)).")
        }
    }

    static func object(_ value: ProviderJSON, field: String) throws(ProviderError) -> [String: ProviderJSON] {
        guard let members = value.membersByKey else {
            throw fail(field, "not_object", "\(field) must be a JSON object.")
        }
        return members
    }

    static func string(_ value: ProviderJSON?, field: String) throws(ProviderError) -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?: return text
        case _?: throw fail(field, "not_string", "\(field) must be a string.")
        }
    }

    /// A string, or an integer number kept as its digits (Branch ids exceed 2^53).
    static func id(_ value: ProviderJSON?, field: String) throws(ProviderError) -> String? {
        switch value {
        case .number(let text)? where text.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || $0 == UInt8(ascii: "-") }):
            return text
        default: return try string(value, field: field)
        }
    }

    static func bool(_ value: ProviderJSON?, field: String) throws(ProviderError) -> Bool? {
        switch value {
        case nil, .null?: return nil
        case .bool(let flag)?: return flag
        case _?: throw fail(field, "not_boolean", "\(field) must be true or false.")
        }
    }

    static func integer(_ value: ProviderJSON?, field: String) throws(ProviderError) -> Int64? {
        switch value {
        case nil, .null?: return nil
        case .number?:
            guard let number = value?.integerValue else {
                throw fail(field, "not_integer", "\(field) must be a whole number of seconds that fits 64 bits.")
            }
            return number
        case _?: throw fail(field, "not_integer", "\(field) must be a number.")
        }
    }

    static func others(
        _ members: [String: ProviderJSON], excluding known: Set<String>, prefix: String
    ) throws(ProviderError) -> [String: JSONValue] {
        var out: [String: JSONValue] = [:]
        for (key, json) in members where !known.contains(key) {
            guard let value = JSONValue(json) else {
                throw fail(prefix + key, "number_out_of_range", "\(prefix + key) holds a number too large to keep exactly.")
            }
            out[key] = value
        }
        return out
    }
}
