import Crypto
import Foundation

/// Checks Apple's `attribution-signature` (ECDSA P-256 over SHA-256, ASN.1 DER, Base64) over a
/// postback's signed fields in its version's order (``SKANPostback/signedMessage``).
///
/// ``apple`` holds Apple's public key for postback versions 2.1, 2.2, 3.0 and 4.0, as Apple
/// publishes it (docs/skan-postbacks.md). Other keys are for tests and benchmarks that sign their
/// own postbacks.
public struct SKANSignatureVerifier: Sendable {
    /// Apple's NIST P-256 public key for postback versions 2.1 and later: Base64 of its DER
    /// SubjectPublicKeyInfo.
    public static let applePublicKeyBase64 =
        "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEWdp8GPcGqmhgzEFj9Z2nSpQVddayaPe4FMzqM9wib1+aHaaIzoHoLN9zW4K8y4SPykE3YVK3sVqW6Af0lfx3gg=="

    /// A verifier with Apple's key.
    public static let apple: SKANSignatureVerifier = {
        do {
            return try SKANSignatureVerifier(publicKeyBase64: applePublicKeyBase64)
        } catch {
            fatalError("Apple's SKAdNetwork key constant does not parse: \(error)")  // a constant; tested
        }
    }()

    /// The key signatures must verify with.
    public var publicKey: P256.Signing.PublicKey { box.key }
    private let box: KeyBox

    /// swift-crypto's keys are not `Sendable` on Linux (BoringSSL holds them by reference). The
    /// key is never changed after it is made, and verifying only reads it (BoringSSL's verify
    /// takes the key as `const`), so sharing it between tasks is safe.
    private final class KeyBox: @unchecked Sendable {
        let key: P256.Signing.PublicKey
        init(_ key: P256.Signing.PublicKey) { self.key = key }
    }

    /// A verifier with `publicKey`.
    public init(publicKey: P256.Signing.PublicKey) { box = KeyBox(publicKey) }

    /// A verifier with the key whose DER SubjectPublicKeyInfo is Base64 `publicKeyBase64`.
    /// - Throws: `CryptoKitError` when it is not a P-256 public key.
    public init(publicKeyBase64: String) throws {
        guard let der = Data(base64Encoded: publicKeyBase64) else { throw CryptoKitError.incorrectParameterSize }
        self.init(publicKey: try P256.Signing.PublicKey(derRepresentation: der))
    }

    /// Whether the postback's signature verifies over its signed fields.
    public func isValid(_ postback: SKANPostback) -> Bool {
        guard let signature = try? P256.Signing.ECDSASignature(derRepresentation: postback.signature) else { return false }
        return publicKey.isValidSignature(signature, for: postback.signedMessage)
    }

    /// Parses and verifies a raw postback: the schema check, then the signature.
    /// - Returns: the postback and whether its signature verifies.
    /// - Throws: ``SKANPostbackError`` when the input breaks the schema.
    public func verify(raw: Data) throws(SKANPostbackError) -> (postback: SKANPostback, isValid: Bool) {
        let postback = try SKANPostback.parse(raw)
        return (postback, isValid(postback))
    }
}
