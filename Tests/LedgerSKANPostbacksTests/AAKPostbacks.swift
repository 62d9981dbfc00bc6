import Crypto
import Foundation
import LedgerSKANPostbacks

/// AdAttributionKit postbacks from Apple's documentation, as printed there.
enum AppleAAKExamples {
    /// The stanza printed in Apple's "Identifying the parameters in a postback" (AdAttributionKit
    /// documentation, "Understand the JSON stanza the framework sends"): a re-engagement postback
    /// whose header names `apple-development-identifier/1`, the key "Verifying a postback" lists
    /// for postbacks made in developer settings. It verifies with that published key.
    static let developerSettingsStanza = """
        {
          "jws-string": "eyJraWQiOiJhcHBsZS1kZXZlbG9wbWVudC1pZGVudGlmaWVyXC8xIiwiYWxnIjoiRVMyNTYifQ.eyJwb3N0YmFjay1pZGVudGlmaWVyIjoiODU1NDZFQjctRkQzOS00NEJDLTg5OTAtQzk4QTRBQzM2QTQ5IiwicHVibGlzaGVyLWl0ZW0taWRlbnRpZmllciI6MCwibWFya2V0cGxhY2UtaWRlbnRpZmllciI6ImNvbS5hcHBsZS5BcHBTdG9yZSIsImltcHJlc3Npb24tdHlwZSI6ImFwcC1pbXByZXNzaW9uIiwiYWQtbmV0d29yay1pZGVudGlmaWVyIjoiZGV2ZWxvcG1lbnQuYWRhdHRyaWJ1dGlvbmtpdCIsImRpZC13aW4iOnRydWUsInBvc3RiYWNrLXNlcXVlbmNlLWluZGV4IjowLCJjb252ZXJzaW9uLXR5cGUiOiJyZS1lbmdhZ2VtZW50Iiwic291cmNlLWlkZW50aWZpZXIiOiIxMjM0IiwiYWR2ZXJ0aXNlZC1pdGVtLWlkZW50aWZpZXIiOjEwNzM4MDI3NzU2fQ.bAdNwKd6OfHK9tofvjjua4X_JPcFTxXPQSspD9gZkinw97pY7R1aI-LSjl-oxZZF3_K2H5JK5TSEBee4_1U4oQ",
          "conversion-value": 24,
          "ad-interaction-type": "click",
          "country-code": "US"
        }
        """

    /// The stanza an earlier edition of the same page ("Identifying the parameters in a postback")
    /// printed, with a header naming the production key `apple-cas-identifier/0`. Its signature
    /// verifies with none of the three keys "Verifying a postback" publishes (checked with this
    /// verifier and independently with OpenSSL): an illustration, not a postback Apple signed.
    static let earlierProductionStanza = """
        {
          "ad-interaction-type": "click",
          "jws-string": "eyJraWQiOiJhcHBsZS1jYXMtaWRlbnRpZmllci8wIiwiYWxnIjoiRVMyNTYifQ.eyJhZHZlcnRpc2VkLWl0ZW0taWRlbnRpZmllciI6Njg0OTM5LCJjb252ZXJzaW9uLXR5cGUiOiJyZS1lbmdhZ2VtZW50IiwibWFya2V0cGxhY2UtaWRlbnRpZmllciI6ImNvbS5hcHBsZS5BcHBTdG9yZSIsImFkLW5ldHdvcmstaWRlbnRpZmllciI6InRlc3QuYWRhdHRyaWJ1dGlvbmtpdCIsImltcHJlc3Npb24tdHlwZSI6ImFwcC1pbXByZXNzaW9uIiwicG9zdGJhY2stc2VxdWVuY2UtaW5kZXgiOjAsInNvdXJjZS1pZGVudGlmaWVyIjoiODM0NCIsImRpZC13aW4iOnRydWUsInBvc3RiYWNrLWlkZW50aWZpZXIiOiIzZjUwZmU1Ny0yOWFlLTQ4NjEtOGMwYi1hYzZhZGRkZmY3MmMiLCJwdWJsaXNoZXItaXRlbS1pZGVudGlmaWVyIjo1ODM4NDkyfQ.AemK1x2ahIPKOnFEEscG4wvipRtR1G6DzpNF4M4joPb8POIH4FJjm4VvcNgLXc9rWBrEDQPvDblduoc7MFcK5w",
          "coarse-conversion-value": "medium"
        }
        """

    /// The developer-settings example's parts.
    static var developerSettingsParts: [String] {
        let stanza = try! JSONSerialization.jsonObject(with: Data(developerSettingsStanza.utf8)) as! [String: Any]
        return (stanza["jws-string"] as! String).split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    }
}

/// Base64url without padding, written here apart from the module's reader.
func base64URL(_ data: Data) -> String {
    data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

/// Signs AdAttributionKit postbacks with keys generated in the test, following RFC 7515's compact
/// serialization: ES256 over the ASCII of `base64url(header).base64url(payload)`, signature r‖s.
struct AAKTestSigner {
    let production = P256.Signing.PrivateKey()
    let development = P256.Signing.PrivateKey()

    /// A verifier holding the generated keys under Apple's key ids.
    var verifier: AAKSignatureVerifier {
        AAKSignatureVerifier(keys: [
            "apple-cas-identifier/0": (production.publicKey, .production),
            "apple-development-identifier/1": (development.publicKey, .development),
        ])
    }

    /// A compact JWS over `payload` (JSON text), signed with the development key when `kid` names it.
    func jws(payload: String, kid: String = "apple-cas-identifier/0", alg: String = "ES256") throws -> String {
        let header = base64URL(Data(#"{"kid":"\#(kid)","alg":"\#(alg)"}"#.utf8))
        let body = base64URL(Data(payload.utf8))
        let key = kid.hasPrefix("apple-development") ? development : production
        let signature = try key.signature(for: Data("\(header).\(body)".utf8)).rawRepresentation
        return "\(header).\(body).\(base64URL(signature))"
    }

    /// A payload with Apple's parameter names ("Identifying the parameters in a postback").
    static func payload(id: String, app: String = "10738027756", source: String = "1234", type: String = "download",
                        sequence: Int = 0, didWin: Bool = true, publisher: String? = "5838492") -> String {
        var members = [
            #""postback-identifier":"\#(id)""#, #""advertised-item-identifier":\#(app)"#,
            #""ad-network-identifier":"example.adattributionkit""#, #""source-identifier":"\#(source)""#,
            #""conversion-type":"\#(type)""#, #""impression-type":"app-impression""#, #""did-win":\#(didWin)"#,
            #""postback-sequence-index":\#(sequence)"#,
        ]
        if let publisher { members.append(#""publisher-item-identifier":\#(publisher)"#) }
        return "{" + members.joined(separator: ",") + "}"
    }

    /// A stanza: the JWS and the unsigned members given as literal JSON.
    func stanza(id: String, app: String = "10738027756", source: String = "1234", type: String = "download",
                sequence: Int = 0, didWin: Bool = true, kid: String = "apple-cas-identifier/0",
                unsigned: [(String, String)] = []) throws -> Data {
        let jws = try jws(payload: Self.payload(id: id, app: app, source: source, type: type, sequence: sequence,
                                                didWin: didWin, publisher: source.count == 2 ? nil : "5838492"), kid: kid)
        let members = [("jws-string", "\"\(jws)\"")] + unsigned
        return Data(("{" + members.map { "\"\($0.0)\": \($0.1)" }.joined(separator: ", ") + "}").utf8)
    }
}
