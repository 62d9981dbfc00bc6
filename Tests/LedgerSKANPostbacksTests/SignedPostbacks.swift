import Crypto
import Foundation
import LedgerSKANPostbacks

/// Apple's documentation examples (docs/skan-postbacks.md; the 2.2 one from Apple's "Combining
/// parameters for previous SKAdNetwork postback versions"): real signatures by Apple's key.
enum AppleExamples {
    static let v4 = """
        {"version": "4.0", "ad-network-id": "com.example", "source-identifier": "5239",
         "app-id": 525463029, "transaction-id": "6aafb7a5-0170-41b5-bbe4-fe71dedf1e30",
         "redownload": false, "source-domain": "example.com", "fidelity-type": 1, "did-win": true,
         "conversion-value": 63, "postback-sequence-index": 0,
         "attribution-signature": "MEUCIGRmSMrqedNu6uaHyhVcifs118R5z/AB6cvRaKrRRHWRAiEAv96ne3dKQ5kJpbsfk4eYiePmrZUU6sQmo+7zfP/1Bxo="}
        """
    static let v3 = """
        {"version": "3.0", "ad-network-id": "example123.skadnetwork", "campaign-id": 42,
         "transaction-id": "6aafb7a5-0170-41b5-bbe4-fe71dedf1e28", "app-id": 525463029,
         "attribution-signature": "MEYCIQD5eq3AUlamORiGovqFiHWI4RZT/PrM3VEiXUrsC+M51wIhAPMANZA9c07raZJ64gVaXhB9+9yZj/X6DcNxONdccQij",
         "redownload": true, "source-app-id": 1234567891, "fidelity-type": 1, "conversion-value": 20,
         "did-win": true}
        """
    static let v22 = """
        {"version": "2.2", "ad-network-id": "com.example", "campaign-id": 42,
         "transaction-id": "6aafb7a5-0170-41b5-bbe4-fe71dedf1e28", "app-id": 525463029,
         "attribution-signature": "MEYCIQDTuQ1Z4Tpy9D3aEKbxLl5J5iKiTumcqZikuY/AOD2U7QIhAJAaiAv89AoquHXJffcieEQXdWHpcV8ZgbKN0EwV9/sY",
         "redownload": true, "source-app-id": 1234567891, "fidelity-type": 1, "conversion-value": 20}
        """

    /// `text` with `"key": old` replaced by `"key": new` (the literal JSON values).
    static func replacing(_ text: String, _ key: String, _ old: String, _ new: String) -> String {
        let before = "\"\(key)\": \(old)"
        precondition(text.contains(before), "\(before) not in the example")
        return text.replacingOccurrences(of: before, with: "\"\(key)\": \(new)")
    }
}

/// Signs 4.0 and 3.0 postbacks with a key of its own, building the signed text by Apple's
/// documented field order (written out here, independently of the module's).
struct TestSigner {
    let key = P256.Signing.PrivateKey()
    var verifier: SKANSignatureVerifier { SKANSignatureVerifier(publicKey: key.publicKey) }

    /// A 4.0 postback: signed over version, ad-network-id, source-identifier, app-id,
    /// transaction-id, redownload, source-app-id, fidelity-type, did-win, postback-sequence-index.
    func v4(transaction: String, sequence: Int = 0, app: String = "525463029", adNetwork: String = "net.skadnetwork",
            source: String = "5239", redownload: Bool = false, didWin: Bool = true, fine: Int? = nil,
            coarse: String? = nil, country: String? = nil) throws -> Data {
        let signed = ["4.0", adNetwork, source, app, transaction, "\(redownload)", "1234567891", "1", "\(didWin)", "\(sequence)"]
        var members = [
            ("version", "\"4.0\""), ("ad-network-id", "\"\(adNetwork)\""), ("source-identifier", "\"\(source)\""),
            ("app-id", app), ("transaction-id", "\"\(transaction)\""), ("redownload", "\(redownload)"),
            ("source-app-id", "1234567891"), ("fidelity-type", "1"), ("did-win", "\(didWin)"),
            ("postback-sequence-index", "\(sequence)"),
        ]
        if let fine { members.append(("conversion-value", "\(fine)")) }
        if let coarse { members.append(("coarse-conversion-value", "\"\(coarse)\"")) }
        if let country { members.append(("country-code", "\"\(country)\"")) }
        return try sign(members, signed)
    }

    /// A 3.0 postback: signed over version, ad-network-id, campaign-id, app-id, transaction-id,
    /// redownload, fidelity-type, did-win (no source-app-id here).
    func v3(transaction: String, campaign: Int = 42, app: String = "525463029", fine: Int? = nil) throws -> Data {
        let signed = ["3.0", "example.skadnetwork", "\(campaign)", app, transaction, "false", "0", "true"]
        var members = [
            ("version", "\"3.0\""), ("ad-network-id", "\"example.skadnetwork\""), ("campaign-id", "\(campaign)"),
            ("app-id", app), ("transaction-id", "\"\(transaction)\""), ("redownload", "false"), ("fidelity-type", "0"),
            ("did-win", "true"),
        ]
        if let fine { members.append(("conversion-value", "\(fine)")) }
        return try sign(members, signed)
    }

    private func sign(_ members: [(String, String)], _ signed: [String]) throws -> Data {
        let message = Data(signed.joined(separator: "\u{2063}").utf8)
        let signature = try key.signature(for: message).derRepresentation.base64EncodedString()
        let body = (members + [("attribution-signature", "\"\(signature)\"")]).map { "\"\($0.0)\": \($0.1)" }
        return Data(("{" + body.joined(separator: ", ") + "}").utf8)
    }
}

/// A fixed receive time: 2026-03-02 10:00:00 UTC.
let receivedAt = Date(timeIntervalSince1970: 1_772_445_600)
