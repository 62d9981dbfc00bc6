import Crypto
import Foundation
import LedgerSKANPostbacks

// aak_verify: AdAttributionKit postbacks verified per second, from the JSON stanza to the verdict
// (stanza and JWS parse, base64url, header and payload checks, ECDSA P-256 over SHA-256 with the
// key the kid names), against bare swift-crypto verification of the same signing inputs and
// signatures (the raw r‖s signature made and the ECDSA check only) in the same run, rounds
// alternating.

/// The stanza of Apple's "Identifying the parameters in a postback" (AdAttributionKit), signed
/// with Apple's `apple-development-identifier/1`, and two stanzas signed in the benchmark with a
/// key of its own (a download with values and a tier-0 postback), so that the three shapes share
/// the measure.
func aakBenchPostbacks() throws -> (verifier: AAKSignatureVerifier, stanzas: [Data], keys: [String: P256.Signing.PublicKey]) {
    let apple = #"{"jws-string": "eyJraWQiOiJhcHBsZS1kZXZlbG9wbWVudC1pZGVudGlmaWVyXC8xIiwiYWxnIjoiRVMyNTYifQ.eyJwb3N0YmFjay1pZGVudGlmaWVyIjoiODU1NDZFQjctRkQzOS00NEJDLTg5OTAtQzk4QTRBQzM2QTQ5IiwicHVibGlzaGVyLWl0ZW0taWRlbnRpZmllciI6MCwibWFya2V0cGxhY2UtaWRlbnRpZmllciI6ImNvbS5hcHBsZS5BcHBTdG9yZSIsImltcHJlc3Npb24tdHlwZSI6ImFwcC1pbXByZXNzaW9uIiwiYWQtbmV0d29yay1pZGVudGlmaWVyIjoiZGV2ZWxvcG1lbnQuYWRhdHRyaWJ1dGlvbmtpdCIsImRpZC13aW4iOnRydWUsInBvc3RiYWNrLXNlcXVlbmNlLWluZGV4IjowLCJjb252ZXJzaW9uLXR5cGUiOiJyZS1lbmdhZ2VtZW50Iiwic291cmNlLWlkZW50aWZpZXIiOiIxMjM0IiwiYWR2ZXJ0aXNlZC1pdGVtLWlkZW50aWZpZXIiOjEwNzM4MDI3NzU2fQ.bAdNwKd6OfHK9tofvjjua4X_JPcFTxXPQSspD9gZkinw97pY7R1aI-LSjl-oxZZF3_K2H5JK5TSEBee4_1U4oQ", "conversion-value": 24, "ad-interaction-type": "click", "country-code": "US"}"#
    let key = P256.Signing.PrivateKey()
    func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
    func signed(_ payload: String, unsigned: String) throws -> Data {
        let input = base64URL(Data(#"{"kid":"bench/0","alg":"ES256"}"#.utf8)) + "." + base64URL(Data(payload.utf8))
        let signature = try key.signature(for: Data(input.utf8)).rawRepresentation
        return Data(#"{"jws-string": "\#(input).\#(base64URL(signature))"\#(unsigned)}"#.utf8)
    }
    let download = try signed(
        #"{"postback-identifier":"3F50FE57-29AE-4861-8C0B-AC6ADDDFF72C","advertised-item-identifier":684939,"ad-network-identifier":"example.adattributionkit","source-identifier":"8344","conversion-type":"download","impression-type":"app-impression","did-win":true,"postback-sequence-index":0,"marketplace-identifier":"com.apple.AppStore","publisher-item-identifier":5838492}"#,
        unsigned: #", "conversion-value": 42, "coarse-conversion-value": "high", "ad-interaction-type": "view", "country-code": "DE""#)
    let tierZero = try signed(
        #"{"postback-identifier":"0C2B1D7E-1111-4222-8333-444455556666","advertised-item-identifier":684939,"ad-network-identifier":"example.adattributionkit","source-identifier":"83","conversion-type":"download","impression-type":"app-impression","did-win":true,"postback-sequence-index":0}"#,
        unsigned: "")
    let keys = ["apple-development-identifier/1": try AAKSignatureVerifier.key(AAKSignatureVerifier.developmentSettingsKeyBase64),
                "bench/0": key.publicKey]
    let verifier = AAKSignatureVerifier(keys: [
        "apple-development-identifier/1": (keys["apple-development-identifier/1"]!, .development),
        "bench/0": (key.publicKey, .production),
    ])
    return (verifier, [Data(apple.utf8), download, tierZero], keys)
}

/// Verifies `perRound` postbacks per round, `rounds` rounds of each side alternating.
func benchAAKVerify(rounds: Int = 6, perRound: Int = 3000) throws -> Measurement {
    let (verifier, stanzas, keys) = try aakBenchPostbacks()
    let prepared = try stanzas.map { raw -> (input: Data, signature: Data, key: P256.Signing.PublicKey) in
        let postback = try AAKPostback.parse(raw)
        guard let key = keys[postback.keyID] else { throw AAKBenchFailure(failures: 1) }
        return (postback.signingInput, postback.signature, key)
    }
    var ledgerSeconds = 0.0
    var bareSeconds = 0.0
    var failures = 0
    for _ in 0..<rounds {
        var start = DispatchTime.now()
        for index in 0..<perRound where (try? verifier.verify(raw: stanzas[index % stanzas.count]).isValid) != true {
            failures += 1
        }
        ledgerSeconds += seconds(since: start)
        start = DispatchTime.now()
        for index in 0..<perRound {
            let (input, signature, key) = prepared[index % prepared.count]
            guard let parsed = try? P256.Signing.ECDSASignature(rawRepresentation: signature), key.isValidSignature(parsed, for: input)
            else {
                failures += 1
                continue
            }
        }
        bareSeconds += seconds(since: start)
    }
    guard failures == 0 else { throw AAKBenchFailure(failures: failures) }
    let total = Double(rounds * perRound)
    return Measurement(bench: "aak_verify", rate: total / ledgerSeconds, unit: "postbacks/s", baselineRate: total / bareSeconds,
                       baseline: "swift-crypto P-256 verify of the same signing inputs (raw r||s signature + ECDSA)")
}

/// A postback that should have verified did not: the benchmark measures nothing useful.
struct AAKBenchFailure: Error, CustomStringConvertible {
    var failures: Int
    var description: String { "aak_verify: \(failures) verifications failed" }
}
