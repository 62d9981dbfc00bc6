import Crypto
import Foundation
import LedgerPostgres
import Logging

/// A seal: a digest committing to every event before it in the global order, chained to the
/// previous seal's digest and, when the sealer holds a ``SealSigningKey``, signed.
public struct Seal: Sendable, Hashable {
    /// Its number, from 1.
    public var number: Int64
    /// The last event it covers, in the global order.
    public var upTo: GlobalCheckpoint
    /// How many events it covers (after the previous seal).
    public var eventCount: Int64
    /// The previous seal's digest (nil for the first seal).
    public var previousDigest: Data?
    /// sha256(previous digest || the hashes of the events it covers, in global order).
    public var digest: Data
    /// The Ed25519 signature of ``signedBytes``, when the sealer held a signing key.
    public var signature: Data?
    /// The ``SealPublicKey/keyID`` of the key that signed it.
    public var signingKeyID: String?
    /// When it was made (the database's clock).
    public var sealedAt: Date?

    /// Creates a seal value.
    public init(number: Int64, upTo: GlobalCheckpoint, eventCount: Int64, previousDigest: Data?, digest: Data,
                signature: Data? = nil, signingKeyID: String? = nil, sealedAt: Date? = nil) {
        self.number = number
        self.upTo = upTo
        self.eventCount = eventCount
        self.previousDigest = previousDigest
        self.digest = digest
        self.signature = signature
        self.signingKeyID = signingKeyID
        self.sealedAt = sealedAt
    }
}

extension EventStore {
    /// Seals until cancelled: every `interval`, whatever is readable and not sealed yet
    /// (``seal(signedBy:)``), signed with `key` when given, so that dropping whole events from the
    /// log's tail is detected without a cron job. A seal that loses its connection (a server
    /// restart) is tried again with back-off until the database is back (``ConnectionLossRetry``,
    /// loop `sealer`: logged once); any other failure is logged and tried again at the next
    /// interval. Several processes may run this at once (seals are made one at a time). A role
    /// that may not write seals (not a member of `ledger_sealer`) is logged once and ends the loop.
    public func sealPeriodically(every interval: Duration, signedBy key: SealSigningKey? = nil) async {
        let outage = ConnectionLossRetry(loop: "sealer", logger: logger)
        while !Task.isCancelled {
            do {
                if let made = try await outage.retrying({ try await seal(signedBy: key) }) {
                    logger.debug("sealed", metadata: ["seal": "\(made.number)", "events": "\(made.eventCount)"])
                }
            } catch is CancellationError {
                return
            } catch let error as PostgresError where error.sqlState == SQLState.insufficientPrivilege {
                // Seals are the sealer's role's to write (schema/0017): this process is not it.
                logger.warning("""
                    not sealing: this session's role is not a member of ledger_sealer; seal from a process that \
                    logs in as one (`ledger seal`, docs/operations.md "Roles")
                    """, metadata: ErrorLogMetadata.of(error))
                return
            } catch {
                logger.error("sealing failed; trying again next interval", metadata: ErrorLogMetadata.of(error))
            }
            try? await Task.sleep(for: interval)
        }
    }

    /// Seals every event readable now that no seal covers yet, signed with `key` when given.
    /// Returns nil when there was nothing to seal.
    /// - Throws: ``EventStoreError/sealKeyRequired(afterSeal:)`` without a key once the newest seal is
    ///   signed (an unsigned seal would fail every later `verify --public-key`).
    ///
    /// Safe to run from several processes: seals are made one at a time under an advisory lock.
    @discardableResult
    public func seal(signedBy key: SealSigningKey? = nil) async throws -> Seal? {
        try await pool.withConnection { connection in
            try connection.transaction { connection in
                try connection.execute("SELECT pg_advisory_xact_lock(\(Int64(0x5345_414C)))")
                let last = try connection.query("""
                    SELECT seal_number, up_to_transaction::text, up_to_position, digest, signature IS NOT NULL FROM seals
                    ORDER BY seal_number DESC LIMIT 1
                    """).first
                let number = try last?.decode(Int64.self, at: 0) ?? 0
                let from = try last.map {
                    GlobalCheckpoint(transactionID: try $0.decode(UInt64.self, at: 1),
                                     position: try $0.decode(Int64.self, at: 2))
                } ?? .start
                let previous = try last?.decode(Data.self, at: 3)
                // Once seals are signed, an unsigned one would break every later check with the key.
                if key == nil, try last?.decode(Bool.self, at: 4) == true {
                    throw EventStoreError.sealKeyRequired(afterSeal: number)
                }
                // Fix the horizon first, so the digest and the boundary cover the same events.
                let horizon = try connection.query("""
                    SELECT transaction_id::text AS transaction_text, position FROM events
                    WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())
                    ORDER BY events.transaction_id DESC, events.position DESC LIMIT 1
                    """).first
                guard let horizon else { return nil }
                let upTo = GlobalCheckpoint(transactionID: try horizon.decode(UInt64.self, at: 0),
                                            position: try horizon.decode(Int64.self, at: 1))
                guard upTo > from else { return nil }
                let (digest, count, _) = try Self.sealDigest(previous: previous, from: from, through: upTo, on: connection)
                var seal = Seal(number: number + 1, upTo: upTo, eventCount: count, previousDigest: previous, digest: digest)
                if let key {
                    seal.signature = key.sign(seal)
                    seal.signingKeyID = key.publicKey.keyID
                }
                seal.sealedAt = try connection.query("""
                    INSERT INTO seals (seal_number, up_to_transaction, up_to_position, event_count, previous_digest, digest,
                                       signature, signing_key_id)
                    VALUES (\(seal.number), \(String(upTo.transactionID))::xid8, \(upTo.position), \(count), \(previous), \(digest),
                            \(seal.signature), \(seal.signingKeyID))
                    RETURNING sealed_at
                    """).single().decode(Date.self, at: 0)
                return seal
            }
        }
    }

    /// The newest seal, or nil when none was made yet.
    public func latestSeal() async throws -> Seal? {
        try await pool.withConnection { connection in
            let newest = try connection.query("SELECT max(seal_number) FROM seals").single().decode(Int64?.self, at: 0)
            guard let newest else { return nil }
            return try Self.storedSeals(on: connection, number: newest).first
        }
    }
}
