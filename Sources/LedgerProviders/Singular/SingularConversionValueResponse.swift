import Foundation

/// Singular's answer to a conversion value request (Singular SKAdNetwork 4 implementation guide,
/// "Resposta ao pedido" and the snippet's `getConversionValueFromServer`), with its own field
/// names.
///
/// Read as the snippet reads it:
/// - `conversion_value` present → a new value (``Outcome/update(_:)``), checked: fine 0...63,
///   coarse 0...2, `postback_sequence_index` 0...2, else "Illegal values" (a thrown
///   ``ProviderError`` naming the field);
/// - no `conversion_value` and `status` is `"ok"` → nothing to update (``Outcome/noUpdate``);
/// - no `conversion_value` and another or no `status` → Singular refused
///   (``Outcome/rejected(_:)``) with `reason`, or "Got error from server" when there is none.
public struct SingularConversionValueResponse: Sendable, Hashable, Codable {
    /// `status`: `"ok"` when processed.
    public var status: String?
    /// `reason`, with an error status.
    public var reason: String?
    /// `conversion_value`: the new fine value.
    public var conversionValue: Int?
    /// `skan_updated_coarse_value`.
    public var coarseValue: SKANCoarseValue?
    /// `postback_sequence_index`: which coarse key (p0, p1, p2) the value is for.
    public var postbackSequenceIndex: Int?
    /// `skan_updated_lock_window_value`.
    public var lockWindow: Bool?

    /// What the answer means.
    public enum Outcome: Sendable, Hashable {
        /// A new value to record with ``SKANDeviceState/applyConversionUpdate(_:at:)``.
        case update(SKANConversionUpdate)
        /// Processed; no new value.
        case noUpdate
        /// Singular refused the request.
        case rejected(SingularErrorReason)
    }

    /// The meaning of this answer, by the snippet's rules.
    public var outcome: Outcome {
        if let conversionValue,
            let update = try? SKANConversionUpdate(
                conversionValue: conversionValue, coarseValue: coarseValue?.rawValue, lockWindow: lockWindow ?? false,
                postbackSequenceIndex: postbackSequenceIndex)
        {
            return .update(update)
        }
        if status == "ok" { return .noUpdate }
        return .rejected(SingularErrorReason(reason ?? SingularErrorReason.missingReasonText))
    }

    enum CodingKeys: String, CodingKey {
        case status, reason
        case conversionValue = "conversion_value"
        case coarseValue = "skan_updated_coarse_value"
        case postbackSequenceIndex = "postback_sequence_index"
        case lockWindow = "skan_updated_lock_window_value"
    }

    /// Creates an answer from its parts.
    public init(
        status: String? = nil, reason: String? = nil, conversionValue: Int? = nil, coarseValue: SKANCoarseValue? = nil,
        postbackSequenceIndex: Int? = nil, lockWindow: Bool? = nil
    ) {
        self.status = status
        self.reason = reason
        self.conversionValue = conversionValue
        self.coarseValue = coarseValue
        self.postbackSequenceIndex = postbackSequenceIndex
        self.lockWindow = lockWindow
    }

    /// Parses a body. Throws a `malformedResponse` ``ProviderError`` naming the field: `not_json`,
    /// `too_deep` (nesting deeper than 64), `too_large` (bodies over 4 MiB), `not_object`, `not_string`,
    /// `not_integer`, `not_boolean`, `range_0_63`, `range_0_2`. `null` counts as absent. Never traps.
    public static func parse(_ body: Data) throws(ProviderError) -> SingularConversionValueResponse {
        let root: ProviderJSON
        do {
            root = try ProviderJSONReader.parse(body, limits: .branchSingular)
        } catch {
            throw SingularRules.fail(
                .malformedResponse, "$", error.rule, "Failed parsing server response: \(error.reason) at byte \(error.offset).")
        }
        guard let members = root.membersByKey else {
            throw SingularRules.fail(.malformedResponse, "$", "not_object", "The answer must be a JSON object.")
        }
        var response = SingularConversionValueResponse()
        response.status = try string(members["status"], "status")
        response.reason = try string(members["reason"], "reason")
        response.lockWindow = try bool(members["skan_updated_lock_window_value"], "skan_updated_lock_window_value")
        let fine = try integer(members["conversion_value"], "conversion_value", rule: "range_0_63")
        let coarse = try integer(members["skan_updated_coarse_value"], "skan_updated_coarse_value", rule: "range_0_2")
        let index = try integer(members["postback_sequence_index"], "postback_sequence_index", rule: "range_0_2")
        if let fine {
            _ = try SKANConversionUpdate(
                conversionValue: fine, coarse: coarse, lockWindow: response.lockWindow ?? false,
                postbackSequenceIndex: index, kind: .malformedResponse)
        } else if let coarse, SKANCoarseValue(rawValue: coarse) == nil {
            throw SingularRules.illegal(.malformedResponse, "skan_updated_coarse_value", "range_0_2", "\(coarse) is not in 0...2")
        } else if let index, !(0...2).contains(index) {
            throw SingularRules.illegal(.malformedResponse, "postback_sequence_index", "range_0_2", "\(index) is not in 0...2")
        }
        response.conversionValue = fine
        response.coarseValue = coarse.flatMap(SKANCoarseValue.init(rawValue:))
        response.postbackSequenceIndex = index
        return response
    }

    private static func string(_ value: ProviderJSON?, _ field: String) throws(ProviderError) -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?: return text
        case _?: throw SingularRules.fail(.malformedResponse, field, "not_string", "\(field) must be a string.")
        }
    }

    /// The snippet reads the flag with `boolValue`: JSON booleans, and 0 / 1.
    private static func bool(_ value: ProviderJSON?, _ field: String) throws(ProviderError) -> Bool? {
        switch value {
        case nil, .null?: return nil
        case .bool(let flag)?: return flag
        case .number?:
            switch value?.integerValue {
            case 0?: return false
            case 1?: return true
            default: break
            }
        default: break
        }
        throw SingularRules.fail(.malformedResponse, field, "not_boolean", "\(field) must be true or false.")
    }

    /// An integral JSON number. Integers too large for 64 bits are out of range (so the error names
    /// the range rule); fractions and other types are `not_integer`.
    private static func integer(_ value: ProviderJSON?, _ field: String, rule: String) throws(ProviderError) -> Int? {
        switch value {
        case nil, .null?: return nil
        case .number(let text)?:
            if let number = value?.integerValue, let small = Int(exactly: number) { return small }
            let integral = !text.contains(".") && !text.lowercased().contains("e")
            if integral { throw SingularRules.illegal(.malformedResponse, field, rule, "\(text) is out of range") }
            throw SingularRules.fail(.malformedResponse, field, "not_integer", "\(field) must be a whole number, got \(text).")
        case _?:
            throw SingularRules.fail(.malformedResponse, field, "not_integer", "\(field) must be a number.")
        }
    }
}
