import Foundation
import LedgerDomain
import LedgerPostgres
import LedgerStore
import Logging

/// Erases one device's personal data (crypto-shredding), in one transaction: destroys every data
/// key of the device (so every personal field of its events, in its own stream and in its sends'
/// streams, can never be opened again), appends `ErasureCompleted` to the device's stream (who
/// asked, when; no personal data), has the store record the erasure, and cancels the
/// device's pending and running sends (`SendCancelled`, reason `erasure`).
///
/// The log itself is not changed: hashes cover the ciphertext, so `ledger verify` still passes.
/// Erasing again is harmless (nothing new is written; the outcome says when it was erased);
/// erasing a device the ledger has never seen throws ``PrivacyError/unknownDevice(_:)``.
///
/// Used by `ledger erase`, the Swift facade and the HTTP API.
public struct DeviceEraser: Sendable {
    /// What an erasure did.
    public struct Outcome: Sendable, Hashable {
        /// The erased device's stream.
        public var deviceStreamID: StreamID
        /// The `ErasureCompleted` event (the one appended now, or the earlier one).
        public var erasureEventID: UUID
        /// When the erasure was committed (the first time, for a repeat).
        public var erasedAt: Date
        /// True when the device had already been erased: nothing new was written.
        public var alreadyErased: Bool
        /// Data keys destroyed now.
        public var keysDestroyed: Int
        /// The send streams whose sends were cancelled now.
        public var sendsCancelled: [String]
    }

    /// The reason id of the `SendCancelled` events an erasure appends.
    public static let cancelReason = "erasure"
    /// The actor in the metadata of the events an erasure appends.
    public static let actor = "privacy-erasure"

    /// The store (its ``EventStore/privacy`` forgets cached keys after the erasure).
    public let store: EventStore

    /// An eraser over `store`.
    public init(store: EventStore) { self.store = store }

    /// Erases `device`'s personal data (see the type's documentation).
    ///
    /// - Parameters:
    ///   - device: the device stream, `device-<app>/<device>`.
    ///   - requestedBy: who asked: a role or system (`dsar-portal`, `support`), never a person.
    ///   - requestedAt: when the data subject asked (the legal clock runs from here).
    ///   - now: the erasure's time (`occurred_at` of the events it appends).
    /// - Throws: ``PrivacyError/unknownDevice(_:)``, ``PrivacyError/notADeviceStream(_:)``,
    ///   ``EventStoreError`` (for instance an invalid `requestedBy`), ``PostgresError``.
    @discardableResult
    public func erase(device: StreamID, requestedBy: String, requestedAt: Date, now: Date = Date()) async throws -> Outcome {
        let store = self.store
        return try await store.pool.withConnection { connection in
            try Self.erase(device: device, requestedBy: requestedBy, requestedAt: requestedAt, now: now, store: store,
                           on: connection)
        }
    }

    /// ``erase(device:requestedBy:requestedAt:now:)`` on a connection the caller holds (in its own
    /// transaction, or a savepoint of the caller's).
    @discardableResult
    public static func erase(device: StreamID, requestedBy: String, requestedAt: Date, now: Date = Date(),
                             store: EventStore, on connection: PostgresConnection) throws -> Outcome {
        guard device.category == StreamCategory.device.rawValue else {
            throw PrivacyError.notADeviceStream(device.rawValue)
        }
        let subject = device.rawValue
        let outcome = try connection.transaction { connection in
            let earlier = try EventStore.lockForErasure(of: subject, on: connection)
            if earlier == nil {
                let known = try EventStore.streamExists(subject, on: connection)
                guard known else { throw PrivacyError.unknownDevice(subject) }
            }
            let destroyed = try EventStore.destroyKeys(of: subject, on: connection)
            let metadata = try EventCatalog.standard.encode(metadata: EventMetadata(actor: actor, appID: device.tenant?.app))
            let erasure: EventStore.Erasure
            if let earlier {
                erasure = earlier
            } else {
                let event = ErasureCompleted(deviceStreamID: device, requestedBy: requestedBy, requestedAt: requestedAt)
                let appended = try store.append(
                    [try NewEvent(event, metadata: metadata, occurredAt: now)], to: subject, on: connection)
                erasure = try EventStore.recordErasure(of: subject, requestedBy: requestedBy, requestedAt: requestedAt,
                                                       eventID: appended.events[0].id, on: connection)
            }
            let cancelled = try cancelSends(of: subject, metadata: metadata, now: now, store: store, on: connection)
            return Outcome(deviceStreamID: device, erasureEventID: erasure.eventID, erasedAt: erasure.erasedAt,
                           alreadyErased: earlier != nil, keysDestroyed: destroyed, sendsCancelled: cancelled)
        }
        store.privacy.forgetCachedKeys(of: subject)
        // Inside a caller's transaction, a key cached meanwhile (registered to be cached when that
        // transaction commits) must be forgotten after it commits too.
        connection.afterCommit { [privacy = store.privacy] in privacy.forgetCachedKeys(of: subject) }
        return outcome
    }

    /// Cancels every queued send of the device (pending, or running: a running try that answers
    /// later finds its lease gone and writes nothing). A send whose terminal event is already
    /// stored is only taken off the queue.
    static func cancelSends(of subject: String, metadata: Data, now: Date, store: EventStore,
                            on connection: PostgresConnection) throws -> [String] {
        let queued = try connection.query("""
            SELECT send_id, stream_id FROM send_queue WHERE device_stream_id = \(subject)
            ORDER BY enqueued_position FOR UPDATE
            """).map { (try $0.decode(UUID.self, at: 0), try $0.decode(String.self, at: 1)) }
        var cancelled: [String] = []
        let cancel = try NewEvent(SendCancelled(reason: cancelReason), metadata: metadata, occurredAt: now)
        for (sendID, stream) in queued {
            let done = try EventStore.streamHolds(
                stream, anyOf: [SendSucceeded.eventType, SendFailed.eventType, SendCancelled.eventType], on: connection)
            if !done {
                var event = cancel
                event.id = UUID()
                try store.append([event], to: stream, on: connection)
                cancelled.append(stream)
            }
            try SendQueue.remove(sendID, on: connection)
        }
        return cancelled
    }
}
