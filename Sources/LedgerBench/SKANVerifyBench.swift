import Crypto
import Foundation
import LedgerSKANPostbacks

// skan_verify: SKAN postbacks verified per second, from the raw JSON a network forwards to the
// verdict (schema check, signed-text assembly, Base64, DER, ECDSA P-256 over SHA-256), against
// bare swift-crypto verification of the same signed messages and signatures (the DER decoding of
// the signature and the ECDSA check only) in the same run, rounds alternating.

/// Apple's documentation postbacks (4.0, 3.0, 2.2): real signatures by Apple's key.
let skanBenchPostbacks = [
    #"{"version": "4.0", "ad-network-id": "com.example", "source-identifier": "5239", "app-id": 525463029, "transaction-id": "6aafb7a5-0170-41b5-bbe4-fe71dedf1e30", "redownload": false, "source-domain": "example.com", "fidelity-type": 1, "did-win": true, "conversion-value": 63, "postback-sequence-index": 0, "attribution-signature": "MEUCIGRmSMrqedNu6uaHyhVcifs118R5z/AB6cvRaKrRRHWRAiEAv96ne3dKQ5kJpbsfk4eYiePmrZUU6sQmo+7zfP/1Bxo="}"#,
    #"{"version": "3.0", "ad-network-id": "example123.skadnetwork", "campaign-id": 42, "transaction-id": "6aafb7a5-0170-41b5-bbe4-fe71dedf1e28", "app-id": 525463029, "attribution-signature": "MEYCIQD5eq3AUlamORiGovqFiHWI4RZT/PrM3VEiXUrsC+M51wIhAPMANZA9c07raZJ64gVaXhB9+9yZj/X6DcNxONdccQij", "redownload": true, "source-app-id": 1234567891, "fidelity-type": 1, "conversion-value": 20, "did-win": true}"#,
    #"{"version": "2.2", "ad-network-id": "com.example", "campaign-id": 42, "transaction-id": "6aafb7a5-0170-41b5-bbe4-fe71dedf1e28", "app-id": 525463029, "attribution-signature": "MEYCIQDTuQ1Z4Tpy9D3aEKbxLl5J5iKiTumcqZikuY/AOD2U7QIhAJAaiAv89AoquHXJffcieEQXdWHpcV8ZgbKN0EwV9/sY", "redownload": true, "source-app-id": 1234567891, "fidelity-type": 1, "conversion-value": 20}"#,
].map { Data($0.utf8) }

/// Verifies `perRound` postbacks per round, `rounds` rounds of each side alternating.
func benchSKANVerify(rounds: Int = 6, perRound: Int = 3000) throws -> Measurement {
    let verifier = SKANSignatureVerifier.apple
    let key = verifier.publicKey
    let prepared = try skanBenchPostbacks.map { raw -> (message: Data, signature: Data) in
        let postback = try SKANPostback.parse(raw)
        return (postback.signedMessage, postback.signature)
    }
    var ledgerSeconds = 0.0
    var bareSeconds = 0.0
    var failures = 0
    for _ in 0..<rounds {
        var start = DispatchTime.now()
        for index in 0..<perRound {
            let raw = skanBenchPostbacks[index % skanBenchPostbacks.count]
            guard (try? verifier.verify(raw: raw).isValid) == true else {
                failures += 1
                continue
            }
        }
        ledgerSeconds += seconds(since: start)
        start = DispatchTime.now()
        for index in 0..<perRound {
            let (message, signature) = prepared[index % prepared.count]
            guard let parsed = try? P256.Signing.ECDSASignature(derRepresentation: signature),
                key.isValidSignature(parsed, for: message)
            else {
                failures += 1
                continue
            }
        }
        bareSeconds += seconds(since: start)
    }
    guard failures == 0 else { throw SKANBenchFailure(failures: failures) }
    let total = Double(rounds * perRound)
    return Measurement(bench: "skan_verify", rate: total / ledgerSeconds, unit: "postbacks/s", baselineRate: total / bareSeconds,
                       baseline: "swift-crypto P-256 verify of the same signed messages (DER signature decode + ECDSA)")
}

/// A postback that should have verified did not: the benchmark measures nothing useful.
struct SKANBenchFailure: Error, CustomStringConvertible {
    var failures: Int
    var description: String { "skan_verify: \(failures) verifications failed" }
}
