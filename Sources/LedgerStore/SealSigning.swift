import Crypto
import Foundation

/// The private key that signs seals (Ed25519). It is never stored in the database: whoever can
/// rewrite the database but does not hold this key cannot make a seal that verifies, so an
/// in-place rewrite of the log with recomputed digests is caught by ``SealPublicKey``.
///
/// Configured as `LEDGER_SEAL_SIGNING_KEY` (base64 of the 32-byte Ed25519 private key) or
/// `LEDGER_SEAL_SIGNING_KEY_FILE` (a file holding that base64 text); `ledger keys seal-key` makes one.
public struct SealSigningKey: Sendable {
    let raw: Data

    /// A key from its base64 text (32 bytes once decoded).
    /// - Throws: ``EventStoreError/invalidSealKey(setting:)``.
    public init(base64: String) throws(EventStoreError) {
        guard let raw = Data(base64Encoded: base64.trimmingCharacters(in: .whitespacesAndNewlines)), raw.count == 32,
            (try? Curve25519.Signing.PrivateKey(rawRepresentation: raw)) != nil
        else { throw .invalidSealKey(setting: "LEDGER_SEAL_SIGNING_KEY") }
        self.raw = raw
    }

    /// A new random key.
    public static func generate() -> SealSigningKey {
        SealSigningKey(raw: Curve25519.Signing.PrivateKey().rawRepresentation)
    }

    private init(raw: Data) { self.raw = raw }

    /// The key as base64 text, for the configuration.
    public var base64: String { raw.base64EncodedString() }

    /// The public half: what an auditor needs to verify seals and checkpoints.
    public var publicKey: SealPublicKey {
        // `raw` was checked to be a valid private key when this value was made.
        SealPublicKey(unchecked: (try! Curve25519.Signing.PrivateKey(rawRepresentation: raw)).publicKey.rawRepresentation)
    }

    /// Signs a seal's ``Seal/signedBytes``.
    public func sign(_ seal: Seal) -> Data {
        // `raw` was checked to be a valid private key when this value was made; signing cannot fail.
        let key = try! Curve25519.Signing.PrivateKey(rawRepresentation: raw)
        return try! key.signature(for: seal.signedBytes)
    }

    /// The key of `LEDGER_SEAL_SIGNING_KEY`, or of the file `LEDGER_SEAL_SIGNING_KEY_FILE` names;
    /// nil when neither is set (seals are then made unsigned).
    /// - Throws: ``EventStoreError`` for a malformed key or an unreadable file.
    public static func fromEnvironment(_ environment: [String: String]) throws(EventStoreError) -> SealSigningKey? {
        if let text = environment["LEDGER_SEAL_SIGNING_KEY"], !text.isEmpty {
            return try SealSigningKey(base64: text)
        }
        if let path = environment["LEDGER_SEAL_SIGNING_KEY_FILE"], !path.isEmpty {
            guard let data = FileManager.default.contents(atPath: path) else { throw .unreadableSealKeyFile(path: path) }
            do {
                return try SealSigningKey(base64: String(decoding: data, as: UTF8.self))
            } catch {
                throw .invalidSealKey(setting: "LEDGER_SEAL_SIGNING_KEY_FILE")
            }
        }
        return nil
    }
}

/// The public key that verifies seals (Ed25519, 32 bytes). Safe to publish.
public struct SealPublicKey: Sendable, Hashable {
    /// The key's 32 bytes.
    public let raw: Data

    /// A key from its base64 text.
    /// - Throws: ``EventStoreError/invalidSealKey(setting:)``.
    public init(base64: String) throws(EventStoreError) {
        guard let raw = Data(base64Encoded: base64.trimmingCharacters(in: .whitespacesAndNewlines)), raw.count == 32,
            (try? Curve25519.Signing.PublicKey(rawRepresentation: raw)) != nil
        else { throw .invalidSealKey(setting: "public key") }
        self.raw = raw
    }

    init(unchecked raw: Data) { self.raw = raw }

    /// The key as base64 text.
    public var base64: String { raw.base64EncodedString() }

    /// A short name of the key stored beside each signature: the first 16 hex digits of the
    /// SHA-256 of the key's bytes.
    public var keyID: String { Hex.text(SHA256.hash(data: raw).prefix(8)) }

    /// Whether `signature` is this key's signature of `seal`.
    public func isValid(_ signature: Data, for seal: Seal) -> Bool {
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw) else { return false }
        return key.isValidSignature(signature, for: seal.signedBytes)
    }
}

extension Seal {
    /// The bytes a seal's signature covers, one field a line: a fixed label, the seal number, the
    /// last transaction id and position it covers, its event count, the previous seal's digest
    /// and its own digest (both hex; the first seal's previous digest is empty).
    public var signedBytes: Data {
        return Data([
            "attribution-ledger seal v1", String(number), String(upTo.transactionID), String(upTo.position), String(eventCount),
            previousDigest.map(Hex.text) ?? "", Hex.text(digest),
        ].joined(separator: "\n").utf8)
    }
}
