import Foundation

/// An AdAttributionKit postback: the JSON stanza Apple's device sends, whose `jws-string` is a
/// compact JWS (RFC 7515) Apple signs, with the unsigned values beside it.
///
/// Schema (Apple's "Identifying the parameters in a postback" and "Verifying a postback",
/// AdAttributionKit documentation):
/// - stanza: `jws-string` always; unsigned and optional `conversion-value` (0–63, only in the
///   first postback), `coarse-conversion-value` (`low`, `medium`, `high`), `ad-interaction-type`
///   (`view`, `click`), `country-code` (two uppercase letters). Other members are kept in the raw
///   text and otherwise ignored.
/// - JWS header: `alg` must be `ES256` (the header never chooses the algorithm: anything else is
///   refused), `kid` names the key.
/// - JWS payload (signed): `postback-identifier`, `advertised-item-identifier`,
///   `ad-network-identifier`, `source-identifier` (2–4 digits: tier 0 sends two),
///   `conversion-type` (`download`, `redownload`, `re-engagement`), `impression-type`, `did-win`,
///   `postback-sequence-index` (0–2); optional `marketplace-identifier` and
///   `publisher-item-identifier` (absent in low crowd-anonymity tiers).
/// - signature: 64 bytes, the raw r‖s form ES256 uses, over the ASCII of `header.payload`.
///
/// Every part is base64url without padding; a `=`, a `+` or `/`, or any other character outside
/// the alphabet is refused, so one postback has exactly one text that verifies.
public struct AAKPostback: Sendable, Hashable {
    /// The largest stanza accepted, in bytes (Apple's are well under 2 KiB).
    public static let maximumBytes = 65_536

    /// `conversion-type`: what the conversion was.
    public enum ConversionType: String, Sendable, Hashable, CaseIterable {
        /// A first download of the app.
        case download
        /// A download of an app bought before.
        case redownload
        /// Someone came back to an app they had installed: never counted as an install.
        case reEngagement = "re-engagement"
    }

    /// The JWS header's `kid`.
    public var keyID: String
    /// `postback-identifier`: shared by the up to three postbacks of one conversion.
    public var postbackIdentifier: String
    /// `advertised-item-identifier`, digits: the advertised app's App Store id (the ledger's app).
    public var advertisedItemIdentifier: String
    /// `ad-network-identifier`.
    public var adNetworkIdentifier: String
    /// `source-identifier`, 2–4 digits (the campaign dimension of reports).
    public var sourceIdentifier: String
    /// `conversion-type`.
    public var conversionType: ConversionType
    /// `impression-type` (`app-impression`).
    public var impressionType: String
    /// `did-win`.
    public var didWin: Bool
    /// `postback-sequence-index`, 0–2.
    public var postbackSequenceIndex: Int
    /// `marketplace-identifier`, when the tier allows it.
    public var marketplaceIdentifier: String?
    /// `publisher-item-identifier`, digits, when the tier allows it.
    public var publisherItemIdentifier: String?
    /// `conversion-value` (fine, 0–63). Not signed. Only the first postback (sequence 0) has one.
    public var conversionValue: Int?
    /// A `conversion-value` a later postback carried, which Apple never sends: set aside and flagged.
    public var unexpectedConversionValue: Int?
    /// `coarse-conversion-value` (`low`, `medium`, `high`). Not signed.
    public var coarseConversionValue: String?
    /// `ad-interaction-type` (`view`, `click`). Not signed.
    public var adInteractionType: String?
    /// `country-code`. Not signed.
    public var countryCode: String?
    /// The JWS signing input: the ASCII of `header.payload` as received.
    public var signingInput: Data
    /// The JWS signature: 64 bytes, r‖s.
    public var signature: Data

    /// Whether the conversion is a re-engagement (kept apart from installs in every count).
    public var isReEngagement: Bool { conversionType == .reEngagement }

    /// Parses and checks a stanza.
    /// - Throws: ``SKANPostbackError`` naming the field (`jws-string.header.alg`,
    ///   `jws-string.payload.source-identifier`, `conversion-value`, …) and the rule.
    public static func parse(_ raw: Data) throws(SKANPostbackError) -> AAKPostback {
        guard raw.count <= maximumBytes else {
            throw SKANPostbackError(.tooLarge, rule: "max_\(maximumBytes)_bytes",
                                    message: "The postback is larger than \(maximumBytes) bytes.")
        }
        let stanza = try object(raw, field: nil)
        guard let jwsValue = stanza[.jwsString] else {
            throw .missing("jws-string", "An AdAttributionKit postback carries Apple's JWS.")
        }
        guard case .string(let jws) = jwsValue else { throw .wrongType("jws-string", expected: "string") }
        let parts = jws.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw .invalid("jws-string", "jws_compact_three_parts", "A compact JWS is header.payload.signature.")
        }
        let headerBytes = try base64URL(parts[0], field: "jws-string.header")
        let payloadBytes = try base64URL(parts[1], field: "jws-string.payload")
        let signature = try base64URL(parts[2], field: "jws-string.signature")
        guard signature.count == 64 else {
            throw .invalid("jws-string.signature", "es256_raw_64_bytes", "An ES256 signature is 64 bytes (r‖s).")
        }
        let header = try object(headerBytes, field: "jws-string.header")
        guard case .string("ES256")? = header[.alg] else {
            throw .invalid("jws-string.header.alg", "alg_es256", "Apple signs postbacks with ES256; no other algorithm is accepted.")
        }
        let keyID = try Fields(header, prefix: "jws-string.header.").text(.kid)!

        let payload = Fields(try object(payloadBytes, field: "jws-string.payload"), prefix: "jws-string.payload.")
        let postbackIdentifier = try payload.text(.postbackIdentifier)!
        guard postbackIdentifier.utf8.count <= 128, postbackIdentifier.utf8.allSatisfy(Self.isStreamSafe) else {
            throw .invalid("jws-string.payload.postback-identifier", "postback_identifier_syntax",
                           "A postback identifier is at most 128 ASCII letters, digits, '.', '_', ':' or '-'.")
        }
        let sourceIdentifier = try payload.digits(.sourceIdentifier)!
        guard (2...4).contains(sourceIdentifier.utf8.count) else {
            throw .invalid("jws-string.payload.source-identifier", "two_to_four_digits", "A source identifier has 2, 3 or 4 digits.")
        }
        guard let conversionType = ConversionType(rawValue: try payload.text(.conversionType)!) else {
            throw .invalid("jws-string.payload.conversion-type", "one_of_download_redownload_re-engagement",
                           "The conversion type is download, redownload or re-engagement.")
        }
        let sequence = try payload.digits(.postbackSequenceIndex)!
        guard let sequenceIndex = Int(sequence), (0...2).contains(sequenceIndex) else {
            throw .invalid("jws-string.payload.postback-sequence-index", "range_0_2", "The value must lie between 0 and 2.")
        }
        var postback = AAKPostback(
            keyID: keyID, postbackIdentifier: postbackIdentifier,
            advertisedItemIdentifier: try payload.digits(.advertisedItemIdentifier)!,
            adNetworkIdentifier: try payload.text(.adNetworkIdentifier)!, sourceIdentifier: sourceIdentifier,
            conversionType: conversionType, impressionType: try payload.text(.impressionType)!,
            didWin: try payload.boolean(.didWin), postbackSequenceIndex: sequenceIndex,
            marketplaceIdentifier: try payload.text(.marketplaceIdentifier, required: false),
            publisherItemIdentifier: try payload.digits(.publisherItemIdentifier, required: false),
            signingInput: Data(jws.utf8[parts[0].startIndex..<parts[1].endIndex]), signature: signature)
        try postback.readUnsigned(Fields(stanza, prefix: ""))
        return postback
    }

    /// The unsigned members of the stanza, checked against Apple's ranges.
    private mutating func readUnsigned(_ stanza: Fields) throws(SKANPostbackError) {
        if let fine = try stanza.digits(.conversionValue, required: false) {
            guard let value = Int(fine), (0...63).contains(value) else {
                throw .invalid("conversion-value", "range_0_63", "The value must lie between 0 and 63.")
            }
            if postbackSequenceIndex == 0 { conversionValue = value } else { unexpectedConversionValue = value }
        }
        coarseConversionValue = try stanza.text(.coarseConversionValue, required: false)
        if let coarse = coarseConversionValue, !["low", "medium", "high"].contains(coarse) {
            throw .invalid("coarse-conversion-value", "one_of_low_medium_high", "The coarse value is low, medium or high.")
        }
        adInteractionType = try stanza.text(.adInteractionType, required: false)
        if let interaction = adInteractionType, interaction != "view", interaction != "click" {
            throw .invalid("ad-interaction-type", "one_of_view_click", "The ad interaction type is view or click.")
        }
        countryCode = try stanza.text(.countryCode, required: false)
        if let country = countryCode, country.utf8.count != 2 || !country.utf8.allSatisfy({ (65...90).contains($0) }) {
            throw .invalid("country-code", "iso3166_alpha2", "A country is two uppercase letters (ISO 3166-1 alpha-2).")
        }
    }

    // MARK: Reading

    static func object(_ bytes: Data, field: String?) throws(SKANPostbackError) -> SKANJSONObject {
        do throws(SKANJSONObject.Failure) {
            return try SKANJSONObject(parsing: bytes)
        } catch .notAnObject {
            throw SKANPostbackError(.notAnObject, field: field, rule: "json_object", message: "This must be a JSON object.")
        } catch .duplicateKey(let key) {
            throw SKANPostbackError(.duplicateField, field: (field.map { $0 + "." } ?? "") + key, rule: "unique_keys",
                                    message: "The field appears twice.")
        } catch {
            if String(validating: bytes, as: UTF8.self) == nil {
                throw SKANPostbackError(.invalidUTF8, field: field, rule: "utf8", message: "This is not UTF-8.")
            }
            throw SKANPostbackError(.malformedJSON, field: field, rule: "json_syntax", message: "This is not JSON.")
        }
    }

    /// Base64url without padding (RFC 7515 §2): only `A–Z a–z 0–9 - _`, no `=`, no length that
    /// cannot come from whole bytes, and unused low bits zero (so one byte string has one text).
    /// Decoded here with a table: Foundation's decoder wants the standard alphabet and padding,
    /// and converting first costs more than the decoding.
    static func base64URL(_ text: Substring.UTF8View, field: String) throws(SKANPostbackError) -> Data {
        func refused() -> SKANPostbackError {
            .invalid(field, "base64url_no_padding", "JWS parts are base64url without padding.")
        }
        let count = text.count
        guard count > 0, count % 4 != 1 else { throw refused() }
        var bytes = [UInt8]()
        bytes.reserveCapacity(count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in text {
            let value = base64URLValues[Int(character)]
            guard value < 64 else { throw refused() }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        guard accumulator & ((1 << UInt32(bits)) - 1) == 0 else { throw refused() }
        return Data(bytes)
    }

    /// Each byte's value in the base64url alphabet; 255 for a byte outside it.
    static let base64URLValues: [UInt8] = {
        var table = [UInt8](repeating: 255, count: 256)
        for (index, character) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8.enumerated() {
            table[Int(character)] = UInt8(index)
        }
        return table
    }()

    static func isStreamSafe(_ byte: UInt8) -> Bool {
        (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte)
            || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "-")
    }

    /// Typed reads of one object's members, naming fields with `prefix`.
    struct Fields {
        let object: SKANJSONObject
        let prefix: String

        init(_ object: SKANJSONObject, prefix: String) {
            self.object = object
            self.prefix = prefix
        }

        func text(_ key: SKANJSONObject.Key, required: Bool = true) throws(SKANPostbackError) -> String? {
            switch object[key] {
            case nil, .null?:
                if required { throw .missing(prefix + key.name, "Apple's postbacks always carry this field.") }
                return nil
            case .string(let text)?:
                guard !text.isEmpty, text.utf8.count <= 256 else {
                    throw .invalid(prefix + key.name, "length_1_256", "The text must be 1–256 bytes.")
                }
                return text
            default:
                throw .wrongType(prefix + key.name, expected: "string")
            }
        }

        /// A non-negative integer of at most 20 digits, as a JSON number or a string of digits.
        func digits(_ key: SKANJSONObject.Key, required: Bool = true) throws(SKANPostbackError) -> String? {
            let literal: String
            switch object[key] {
            case nil, .null?:
                if required { throw .missing(prefix + key.name, "Apple's postbacks always carry this field.") }
                return nil
            case .number(let text)?: literal = text
            case .string(let text)?: literal = text
            default: throw .wrongType(prefix + key.name, expected: "integer")
            }
            guard (1...20).contains(literal.utf8.count), literal.utf8.allSatisfy({ (48...57).contains($0) }),
                literal == "0" || !literal.hasPrefix("0") || key == .sourceIdentifier
            else { throw .invalid(prefix + key.name, "non_negative_integer", "The value must be a non-negative integer.") }
            return literal
        }

        func boolean(_ key: SKANJSONObject.Key) throws(SKANPostbackError) -> Bool {
            switch object[key] {
            case nil, .null?: throw .missing(prefix + key.name, "Apple's postbacks always carry this field.")
            case .bool(let value)?: return value
            default: throw .wrongType(prefix + key.name, expected: "boolean")
            }
        }
    }
}
