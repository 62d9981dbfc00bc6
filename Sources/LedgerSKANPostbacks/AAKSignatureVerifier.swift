import Crypto
import Foundation

/// Checks the ES256 signature of an AdAttributionKit postback's JWS with the public key its
/// header's `kid` names, among the keys this verifier holds.
///
/// ``apple`` holds the three NIST P-256 keys Apple publishes in "Verifying a postback"
/// (AdAttributionKit documentation): `apple-cas-identifier/0` for production postbacks,
/// `apple-development-identifier/0` for development postbacks of end-to-end flows and
/// `apple-development-identifier/1` for those made in the device's developer settings. A `kid`
/// the verifier does not hold never verifies: the ledger does not fetch keys a postback names.
public struct AAKSignatureVerifier: Sendable {
    /// Where a key's postbacks come from.
    public enum Environment: String, Sendable, Hashable {
        /// Real conversions: the only postbacks counted by default.
        case production
        /// Test postbacks: accepted only for apps whose configuration allows them.
        case development
    }

    /// Apple's production key, `apple-cas-identifier/0`: Base64 of its DER SubjectPublicKeyInfo.
    public static let productionKeyBase64 =
        "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEWdp8GPcGqmhgzEFj9Z2nSpQVddayaPe4FMzqM9wib1+aHaaIzoHoLN9zW4K8y4SPykE3YVK3sVqW6Af0lfx3gg=="
    /// Apple's development key for end-to-end flows, `apple-development-identifier/0`.
    public static let developmentEndToEndKeyBase64 =
        "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAELeEDzpJEP+/qRSE5hJVC1p1J0ssUnQGMzBBbvnACBok8OVGGLgxL0myrKiy6lvRtSlLRsWit87i+vftD8AEqeQ=="
    /// Apple's development key for postbacks made in developer settings, `apple-development-identifier/1`.
    public static let developmentSettingsKeyBase64 =
        "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE8YzdO7eM97s/IJ25kdW5CZ3A14USE5IJ5Ha/vhWaxI6UBI1ZxCEvjrKxVluVGe6qWwF1BDFq+QHqKfH5u+wxHQ=="

    /// A verifier with Apple's published keys.
    public static let apple: AAKSignatureVerifier = {
        do {
            return AAKSignatureVerifier(keys: [
                "apple-cas-identifier/0": (try key(productionKeyBase64), .production),
                "apple-development-identifier/0": (try key(developmentEndToEndKeyBase64), .development),
                "apple-development-identifier/1": (try key(developmentSettingsKeyBase64), .development),
            ])
        } catch {
            fatalError("Apple's AdAttributionKit key constants do not parse: \(error)")  // constants; tested
        }
    }()

    /// swift-crypto's keys are not `Sendable` on Linux; they are never changed after they are
    /// made and verifying only reads them (as ``SKANSignatureVerifier`` explains).
    private final class KeyBox: @unchecked Sendable {
        let keys: [String: (key: P256.Signing.PublicKey, environment: Environment)]
        init(_ keys: [String: (key: P256.Signing.PublicKey, environment: Environment)]) { self.keys = keys }
    }
    private let box: KeyBox

    /// A verifier holding `keys` by their `kid`.
    public init(keys: [String: (P256.Signing.PublicKey, Environment)]) {
        box = KeyBox(keys.mapValues { (key: $0.0, environment: $0.1) })
    }

    /// The key whose DER SubjectPublicKeyInfo is Base64 `base64`.
    /// - Throws: `CryptoKitError` when it is not a P-256 public key.
    public static func key(_ base64: String) throws -> P256.Signing.PublicKey {
        guard let der = Data(base64Encoded: base64) else { throw CryptoKitError.incorrectParameterSize }
        return try P256.Signing.PublicKey(derRepresentation: der)
    }

    /// The environment of the key `keyID` names, or nil when the verifier holds no such key.
    public func environment(of keyID: String) -> Environment? { box.keys[keyID]?.environment }

    /// Whether the postback's signature verifies with the key its `kid` names.
    public func isValid(_ postback: AAKPostback) -> Bool {
        guard let entry = box.keys[postback.keyID],
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: postback.signature)
        else { return false }
        return entry.key.isValidSignature(signature, for: postback.signingInput)
    }

    /// Parses and verifies a raw stanza: the schema check, then the signature.
    /// - Throws: ``SKANPostbackError`` when the input breaks the schema.
    public func verify(raw: Data) throws(SKANPostbackError) -> (postback: AAKPostback, isValid: Bool) {
        let postback = try AAKPostback.parse(raw)
        return (postback, isValid(postback))
    }
}
