import Foundation

/// A SKAdNetwork postback (versions 2.1, 2.2, 3.0 and 4.0), checked against its version's schema.
///
/// Schema (Apple's "Identifying the parameters in install-validation postbacks", and the v4
/// ranges of docs/skan-postbacks.md): `version`, `ad-network-id`, `app-id`, `transaction-id`,
/// `redownload` and `attribution-signature` always; `campaign-id` before 4.0 and
/// `source-identifier` (2–4 digits) from 4.0; `fidelity-type` (0 or 1) from 2.2; `did-win` from
/// 3.0; `postback-sequence-index` (0–2) in 4.0. Optional: `source-app-id`, `source-domain` (4.0,
/// never with `source-app-id`), `conversion-value` (0–63; in 4.0 only in the first postback),
/// `coarse-conversion-value` (low/medium/high, 4.0), `country-code` (geo, unsigned). Other
/// members (networks add their own) are kept in the raw text and otherwise ignored.
public struct SKANPostback: Sendable, Hashable {
    /// The largest postback accepted, in bytes (Apple's are well under 1 KiB).
    public static let maximumBytes = 65_536

    /// The postback versions with Apple's P-256 signatures.
    public enum Version: String, Sendable, Hashable, CaseIterable, Comparable {
        /// 2.1.
        case v2_1 = "2.1"
        /// 2.2: adds `fidelity-type`.
        case v2_2 = "2.2"
        /// 3.0: adds `did-win`.
        case v3_0 = "3.0"
        /// 4.0: `source-identifier` replaces `campaign-id`; three postbacks per install.
        case v4_0 = "4.0"

        /// Orders versions.
        public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rank < rhs.rank }

        var rank: Int {
            switch self {
            case .v2_1: 0
            case .v2_2: 1
            case .v3_0: 2
            case .v4_0: 3
            }
        }
    }

    /// `version`.
    public var version: Version
    /// `ad-network-id`.
    public var adNetworkID: String
    /// `app-id`, digits.
    public var appID: String
    /// `transaction-id`: shared by the up to three postbacks of one install.
    public var transactionID: String
    /// `redownload`.
    public var redownload: Bool
    /// `campaign-id` (before 4.0), digits.
    public var campaignID: String?
    /// `source-identifier` (4.0), 2–4 digits.
    public var sourceIdentifier: String?
    /// `source-app-id`, digits, when Apple's privacy threshold allowed it.
    public var sourceAppID: String?
    /// `source-domain` (4.0, web ads).
    public var sourceDomain: String?
    /// `fidelity-type` (2.2 and later): 0 view-through, 1 StoreKit-rendered.
    public var fidelityType: Int?
    /// `did-win` (3.0 and later).
    public var didWin: Bool?
    /// `postback-sequence-index` (4.0); 0 for earlier versions, which send one postback.
    public var postbackSequenceIndex: Int
    /// `conversion-value` (fine, 0–63). Not signed. Only the first postback (sequence 0) has one.
    public var conversionValue: Int?
    /// A `conversion-value` a later postback (sequence 1 or 2) carried, which Apple never sends:
    /// not used as the postback's value, and flagged (``SKANUnsignedCheck``). Being unsigned, it
    /// cannot make a signed postback refused: anyone on the way could have added it.
    public var unexpectedConversionValue: Int? = nil
    /// `coarse-conversion-value` (`low`, `medium`, `high`). Not signed.
    public var coarseConversionValue: String?
    /// `country-code` (geo), when the forwarded postback carries one. Not signed.
    public var countryCode: String?
    /// `attribution-signature`, decoded from Base64 (ASN.1 DER ECDSA).
    public var signature: Data
    /// The values Apple signed, in the version's order, joined with U+2063, as UTF-8.
    public var signedMessage: Data

    /// `source-identifier` from 4.0, else `campaign-id`: the campaign dimension of reports.
    public var source: String { sourceIdentifier ?? campaignID ?? "" }

    /// The unsigned fields present (`conversion-value`, `coarse-conversion-value`, `country-code`).
    public var unsignedFieldsPresent: [String] {
        [conversionValue.map { _ in "conversion-value" }, coarseConversionValue.map { _ in "coarse-conversion-value" },
         countryCode.map { _ in "country-code" }].compactMap { $0 }
    }

    /// Parses and checks a postback.
    /// - Throws: ``SKANPostbackError`` naming the field and the rule.
    public static func parse(_ raw: Data) throws(SKANPostbackError) -> SKANPostback {
        guard raw.count <= maximumBytes else {
            throw SKANPostbackError(.tooLarge, rule: "max_\(maximumBytes)_bytes",
                                    message: "The postback is larger than \(maximumBytes) bytes.")
        }
        let object: SKANJSONObject
        do throws(SKANJSONObject.Failure) {
            object = try SKANJSONObject(parsing: raw)
        } catch .notAnObject {
            throw SKANPostbackError(.notAnObject, rule: "json_object", message: "The postback must be a JSON object.")
        } catch .duplicateKey(let key) {
            throw SKANPostbackError(.duplicateField, field: key, rule: "unique_keys", message: "The field appears twice.")
        } catch {
            if String(validating: raw, as: UTF8.self) == nil {
                throw SKANPostbackError(.invalidUTF8, rule: "utf8", message: "The postback is not UTF-8.")
            }
            throw SKANPostbackError(.malformedJSON, rule: "json_syntax", message: "The postback is not JSON.")
        }
        var reader = FieldReader(object: object)
        return try reader.postback()
    }

    /// Reads the fields in the order the signature lists them, building the signed message.
    private struct FieldReader {
        let members: SKANJSONObject
        /// The signed text as it grows: values joined with U+2063 (UTF-8 E2 81 A3).
        var signed: [UInt8] = []

        init(object: SKANJSONObject) {
            members = object
            signed.reserveCapacity(256)
        }

        mutating func sign(_ text: String) {
            if !signed.isEmpty { signed.append(contentsOf: [0xE2, 0x81, 0xA3]) }
            signed.append(contentsOf: text.utf8)
        }

        mutating func postback() throws(SKANPostbackError) -> SKANPostback {
            guard let versionValue = members[.version] else {
                throw .missing(.version, "Postbacks from 2.1 on carry a version; 1.0 postbacks are not supported.")
            }
            guard case .string(let versionText) = versionValue else { throw .wrongType(.version, expected: "string") }
            guard let version = Version(rawValue: versionText) else {
                if versionText == "1.0" || versionText == "2.0" {
                    throw SKANPostbackError(.unsupportedVersion, field: "version", rule: "version_2.1_or_later",
                                            message: "Versions 1.0 and 2.0 are signed with a retired P-192 key and not supported.")
                }
                throw SKANPostbackError(.unknownVersion, field: "version", rule: "one_of_2.1_2.2_3.0_4.0",
                                        message: "The version must be 2.1, 2.2, 3.0 or 4.0.")
            }
            let signature = try signatureBytes()
            sign(versionText)
            let adNetworkID = try requiredText(.adNetworkID, signs: true)
            var campaignID: String?
            var sourceIdentifier: String?
            if version == .v4_0 {
                try absent(.campaignID, "4.0 postbacks carry source-identifier instead.")
                sourceIdentifier = try requiredText(.sourceIdentifier, signs: true)
                guard let identifier = sourceIdentifier, (2...4).contains(identifier.utf8.count),
                    identifier.utf8.allSatisfy({ (48...57).contains($0) })
                else { throw .invalid(.sourceIdentifier, "digits_2_4", "The source identifier is 2–4 digits.") }
            } else {
                try absent(.sourceIdentifier, "Only 4.0 postbacks carry a source identifier.")
                campaignID = try integer(.campaignID, signs: true)
            }
            let appID = try integer(.appID, signs: true)
            let transactionID = try requiredText(.transactionID, signs: true)
            guard transactionID.utf8.count <= 128, transactionID.utf8.allSatisfy(Self.isStreamSafe) else {
                throw .invalid(.transactionID, "transaction_id_syntax",
                               "A transaction id is at most 128 ASCII letters, digits, '.', '_', ':' or '-'.")
            }
            let redownload = try boolean(.redownload, signs: true)
            let sourceAppID = try integer(.sourceAppID, signs: true, required: false)
            var sourceDomain: String?
            if version == .v4_0 {
                sourceDomain = try text(.sourceDomain, signs: sourceAppID == nil, required: false)
                if sourceAppID != nil, sourceDomain != nil {
                    throw .invalid(.sourceDomain, "not_with_source_app_id",
                                   "A postback carries source-app-id or source-domain, not both.")
                }
            } else {
                try absent(.sourceDomain, "Only 4.0 postbacks carry a source domain.")
            }
            var fidelityType: Int?
            if version >= .v2_2 {
                fidelityType = try integer(.fidelityType, signs: true).flatMap { Int($0) }
                guard fidelityType == 0 || fidelityType == 1 else {
                    throw .invalid(.fidelityType, "one_of_0_1", "The fidelity type is 0 (view-through) or 1 (StoreKit-rendered).")
                }
            }
            let didWin: Bool? = if version >= .v3_0 { try boolean(.didWin, signs: true) } else { nil }
            var sequenceIndex = 0
            if version == .v4_0 {
                sequenceIndex = try ranged(.postbackSequenceIndex, 0...2, signs: true)!
            } else {
                try absent(.postbackSequenceIndex, "Only 4.0 postbacks have a sequence index.")
            }
            // Not signed. Fine values arrive only in the first postback (sequence 0).
            var conversionValue = try ranged(.conversionValue, 0...63, signs: false)
            var unexpectedConversionValue: Int?
            if conversionValue != nil, sequenceIndex > 0 {
                (unexpectedConversionValue, conversionValue) = (conversionValue, nil)
            }
            var coarse: String?
            if version == .v4_0 {
                coarse = try text(.coarseConversionValue, signs: false, required: false)
                if let value = coarse, !["low", "medium", "high"].contains(value) {
                    throw .invalid(.coarseConversionValue, "one_of_low_medium_high", "The coarse value is low, medium or high.")
                }
            } else {
                try absent(.coarseConversionValue, "Coarse values exist from 4.0.")
            }
            let country = try text(.countryCode, signs: false, required: false)
            if let country, country.utf8.count != 2 || !country.utf8.allSatisfy({ (65...90).contains($0) }) {
                throw .invalid(.countryCode, "iso3166_alpha2", "A country is two uppercase letters (ISO 3166-1 alpha-2).")
            }
            var postback = SKANPostback(
                version: version, adNetworkID: adNetworkID, appID: appID!, transactionID: transactionID,
                redownload: redownload!, campaignID: campaignID, sourceIdentifier: sourceIdentifier, sourceAppID: sourceAppID,
                sourceDomain: sourceDomain, fidelityType: fidelityType, didWin: didWin, postbackSequenceIndex: sequenceIndex,
                conversionValue: conversionValue, coarseConversionValue: coarse, countryCode: country, signature: signature,
                signedMessage: Data(signed))
            postback.unexpectedConversionValue = unexpectedConversionValue
            return postback
        }

        func signatureBytes() throws(SKANPostbackError) -> Data {
            guard let value = members[.attributionSignature] else {
                throw .missing(.attributionSignature, "Every supported postback carries Apple's signature.")
            }
            guard case .string(let text) = value else { throw .wrongType(.attributionSignature, expected: "string") }
            guard let bytes = Data(base64Encoded: text), !bytes.isEmpty, bytes.count <= 80, bytes.first == 0x30 else {
                throw .invalid(.attributionSignature, "base64_der",
                               "The signature must be Base64 of an ASN.1 DER ECDSA signature.")
            }
            return bytes
        }

        func absent(_ key: SKANJSONObject.Key, _ why: String) throws(SKANPostbackError) {
            if let value = members[key], value != .null { throw .invalid(key, "not_in_this_version", why) }
        }

        /// A string field (`null` counts as absent).
        mutating func text(_ key: SKANJSONObject.Key, signs: Bool, required: Bool = true) throws(SKANPostbackError) -> String? {
            switch members[key] {
            case nil, .null?:
                if required { throw .missing(key) }
                return nil
            case .string(let text)?:
                guard !text.isEmpty, text.utf8.count <= 256 else {
                    throw .invalid(key, "length_1_256", "The text must be 1–256 bytes.")
                }
                if signs { sign(text) }
                return text
            default:
                throw .wrongType(key, expected: "string")
            }
        }

        mutating func requiredText(_ key: SKANJSONObject.Key, signs: Bool) throws(SKANPostbackError) -> String {
            try text(key, signs: signs, required: true)!
        }

        /// A non-negative integer of at most 20 digits, as a JSON number or a string of digits
        /// (some networks forward numbers as strings; the signed text is the same).
        mutating func integer(_ key: SKANJSONObject.Key, signs: Bool, required: Bool = true) throws(SKANPostbackError) -> String? {
            let digits: String
            switch members[key] {
            case nil, .null?:
                if required { throw .missing(key) }
                return nil
            case .number(let literal)?: digits = literal
            case .string(let literal)?: digits = literal
            default: throw .wrongType(key, expected: "integer")
            }
            guard (1...20).contains(digits.utf8.count), digits.utf8.allSatisfy({ (48...57).contains($0) }),
                digits == "0" || !digits.hasPrefix("0")
            else { throw .invalid(key, "non_negative_integer", "The value must be a non-negative integer.") }
            if signs { sign(digits) }
            return digits
        }

        mutating func ranged(_ key: SKANJSONObject.Key, _ range: ClosedRange<Int>, signs: Bool) throws(SKANPostbackError) -> Int? {
            func outOfRange() -> SKANPostbackError {
                .invalid(key, "range_\(range.lowerBound)_\(range.upperBound)",
                         "The value must lie between \(range.lowerBound) and \(range.upperBound).")
            }
            if case .number(let literal)? = members[key], literal.utf8.first == UInt8(ascii: "-") { throw outOfRange() }
            guard let digits = try integer(key, signs: signs, required: signs) else { return nil }
            guard let value = Int(digits), range.contains(value) else { throw outOfRange() }
            return value
        }

        mutating func boolean(_ key: SKANJSONObject.Key, signs: Bool) throws(SKANPostbackError) -> Bool? {
            switch members[key] {
            case nil, .null?: throw .missing(key)
            case .bool(let value)?:
                if signs { sign(value ? "true" : "false") }
                return value
            default: throw .wrongType(key, expected: "boolean")
            }
        }

        static func isStreamSafe(_ byte: UInt8) -> Bool {
            (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "-")
        }
    }
}
