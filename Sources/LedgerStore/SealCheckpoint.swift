import Foundation

/// A seal as an auditor keeps it outside the database (`ledger checkpoint` writes one):
/// `ledger verify --checkpoint FILE` later proves that the log still extends it, i.e. that no
/// event the seal covered was changed, removed or reordered since.
///
/// JSON, snake_case keys, digests in lowercase hex, the signature and public key in base64.
public struct SealCheckpoint: Codable, Sendable, Hashable {
    /// The format's name and version: `attribution-ledger-checkpoint/1`.
    public var format: String
    /// The seal's number.
    public var sealNumber: Int64
    /// The last transaction id the seal covers.
    public var upToTransaction: String
    /// The last global position the seal covers.
    public var upToPosition: Int64
    /// Events the seal covers (after the previous seal).
    public var eventCount: Int64
    /// The previous seal's digest (absent for the first seal).
    public var previousDigest: String?
    /// The seal's digest.
    public var digest: String
    /// Its signature, when the seal is signed.
    public var signature: String?
    /// The id of the key that signed it.
    public var signingKeyID: String?
    /// The public key that verifies the signature, as the sealer stated it (verify with a key you
    /// obtained yourself: `--public-key`).
    public var publicKey: String?
    /// When the seal was made.
    public var sealedAt: Date?

    /// The format's name.
    public static let currentFormat = "attribution-ledger-checkpoint/1"

    /// A checkpoint of `seal`, naming `publicKey` when the seal is signed.
    public init(seal: Seal, publicKey: SealPublicKey? = nil) {
        format = Self.currentFormat
        sealNumber = seal.number
        upToTransaction = String(seal.upTo.transactionID)
        upToPosition = seal.upTo.position
        eventCount = seal.eventCount
        previousDigest = seal.previousDigest.map(Hex.text)
        digest = Hex.text(seal.digest)
        signature = seal.signature?.base64EncodedString()
        signingKeyID = seal.signingKeyID
        self.publicKey = seal.signature == nil ? nil : publicKey?.base64
        sealedAt = seal.sealedAt
    }

    /// The seal the checkpoint holds.
    /// - Throws: ``EventStoreError/invalidCheckpoint(field:)`` naming the malformed field.
    public func seal() throws(EventStoreError) -> Seal {
        guard format == Self.currentFormat else { throw .invalidCheckpoint(field: "format") }
        guard let transaction = UInt64(upToTransaction) else { throw .invalidCheckpoint(field: "up_to_transaction") }
        guard let digest = Hex.bytes(digest), digest.count == 32 else { throw .invalidCheckpoint(field: "digest") }
        var previous: Data?
        if let text = previousDigest {
            guard let bytes = Hex.bytes(text), bytes.count == 32 else { throw .invalidCheckpoint(field: "previous_digest") }
            previous = bytes
        }
        var signatureBytes: Data?
        if let signature {
            guard let bytes = Data(base64Encoded: signature) else { throw .invalidCheckpoint(field: "signature") }
            signatureBytes = bytes
        }
        return Seal(number: sealNumber, upTo: GlobalCheckpoint(transactionID: transaction, position: upToPosition),
                    eventCount: eventCount, previousDigest: previous, digest: digest, signature: signatureBytes,
                    signingKeyID: signingKeyID, sealedAt: sealedAt)
    }

    enum CodingKeys: String, CodingKey {
        case format
        case sealNumber = "seal_number"
        case upToTransaction = "up_to_transaction"
        case upToPosition = "up_to_position"
        case eventCount = "event_count"
        case previousDigest = "previous_digest"
        case digest, signature
        case signingKeyID = "signing_key_id"
        case publicKey = "public_key"
        case sealedAt = "sealed_at"
    }
}
